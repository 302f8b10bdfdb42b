from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import delete, select

from chargenet.clock import Clock
from chargenet.outbox.consumer import purge_events_before
from chargenet.store.db import LONG, Store
from chargenet.store.models import WebhookDelivery
from chargenet.workers import LoopWorker

log = logging.getLogger(__name__)

PURGE_BATCH = 2000  # rows of each kind a purge transaction deletes


class EventRetention(LoopWorker):
    """Purges outbox events older than the retention window (decisions.md §4, 7 days by default) once each of
    `consumers` (the webhook lane filler) has taken them, and the webhook delivery log's attempts older than the
    same window (decisions.md "Delivery log": kept like delivered events)."""

    name = "event-retention"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        days: int,
        interval: float = 3600,
        consumers: Sequence[str] = (),
        batch: int = PURGE_BATCH,
    ) -> None:
        super().__init__(clock, interval)
        self.store = store
        self.days = days
        self.consumers = tuple(consumers)
        self.batch = batch

    async def run_once(self) -> None:
        cutoff = self.clock.now() - timedelta(days=self.days)
        purged = forgotten = 0
        # In transactions of at most `batch` rows of each kind: an hour of a busy network's events is millions of rows,
        # and one statement deleting them all would hold the write lock (on SQLite, the writer's event loop) for
        # seconds while stations wait to write.
        while True:
            async with self.store.transaction() as session:
                events = await purge_events_before(session, cutoff, self.consumers, limit=self.batch)
                old = select(WebhookDelivery.id).where(WebhookDelivery.at < cutoff).limit(self.batch)
                attempts = await session.execute(
                    delete(WebhookDelivery)
                    .where(WebhookDelivery.id.in_(old))
                    .execution_options(**LONG)
                    .execution_options(synchronize_session=False)
                )
            attempts_purged = int(getattr(attempts, "rowcount", 0) or 0)
            purged += events
            forgotten += attempts_purged
            if events < self.batch and attempts_purged < self.batch:
                break
        if purged:
            log.info("purged old events", extra={"fields": {"count": purged, "before": cutoff.isoformat()}})
        if forgotten:
            log.info(
                "purged old webhook delivery attempts",
                extra={"fields": {"count": forgotten, "before": cutoff.isoformat()}},
            )
