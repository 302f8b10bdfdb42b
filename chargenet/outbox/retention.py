from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import delete

from chargenet.clock import Clock
from chargenet.outbox.consumer import purge_events_before
from chargenet.store.db import Store
from chargenet.store.models import WebhookDelivery
from chargenet.workers import LoopWorker

log = logging.getLogger(__name__)


class EventRetention(LoopWorker):
    """Purges outbox events older than the retention window (decisions.md §4, 7 days by default) once each of
    `consumers` (the webhook lane filler) has taken them, and the webhook delivery log's attempts older than the
    same window (decisions.md "Delivery log": kept like delivered events)."""

    name = "event-retention"

    def __init__(
        self, store: Store, clock: Clock, days: int, interval: float = 3600, consumers: Sequence[str] = ()
    ) -> None:
        super().__init__(clock, interval)
        self.store = store
        self.days = days
        self.consumers = tuple(consumers)

    async def run_once(self) -> None:
        cutoff = self.clock.now() - timedelta(days=self.days)
        async with self.store.transaction() as session:
            purged = await purge_events_before(session, cutoff, self.consumers)
            attempts = await session.execute(
                delete(WebhookDelivery).where(WebhookDelivery.at < cutoff).execution_options(synchronize_session=False)
            )
        if purged:
            log.info("purged old events", extra={"fields": {"count": purged, "before": cutoff.isoformat()}})
        forgotten = int(getattr(attempts, "rowcount", 0) or 0)
        if forgotten:
            log.info(
                "purged old webhook delivery attempts",
                extra={"fields": {"count": forgotten, "before": cutoff.isoformat()}},
            )
