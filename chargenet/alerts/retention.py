"""Alert history is kept a year, like the audit log: the alerts cleared longer ago than that go, with their mails."""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import delete

from chargenet.clock import Clock
from chargenet.store.db import LONG, Store
from chargenet.store.models import Alert
from chargenet.workers import LoopWorker

log = logging.getLogger(__name__)

RETENTION = timedelta(days=365)


class AlertRetention(LoopWorker):
    name = "alert-retention"

    def __init__(self, store: Store, clock: Clock, interval: float = 3600) -> None:
        super().__init__(clock, interval)
        self.store = store

    async def run_once(self) -> None:
        cutoff = self.clock.now() - RETENTION
        async with self.store.transaction() as session:
            result = await session.execute(delete(Alert).where(Alert.cleared_at < cutoff).execution_options(**LONG))
        purged = int(getattr(result, "rowcount", 0) or 0)
        if purged:
            log.info("purged old alerts", extra={"fields": {"count": purged, "before": cutoff.isoformat()}})
