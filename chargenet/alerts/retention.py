"""Alert history is kept a year, like the audit log: the alerts cleared longer ago than that go, with their mails."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.store.db import LONG
from chargenet.store.models import Alert
from chargenet.workers import RetentionWorker

log = logging.getLogger(__name__)

RETENTION = timedelta(days=365)


class AlertRetention(RetentionWorker):
    name = "alert-retention"
    what = "old alerts"

    async def purge(self, session: AsyncSession, now: datetime) -> int:
        result = await session.execute(
            delete(Alert).where(Alert.cleared_at < now - RETENTION).execution_options(**LONG)
        )
        return int(getattr(result, "rowcount", 0) or 0)
