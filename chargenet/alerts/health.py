"""The alert mails in `GET /health`: `degraded` while a mail waits after a failed attempt (an SMTP server that
refuses, is slow or is down), so whoever watches the service learns of it, not only the company's operators in
their console. Counts alone: which company's server fails is the console's to show."""

from __future__ import annotations

from sqlalchemy import func, select

from chargenet.observability.health import ComponentHealth, HealthCheck, Level
from chargenet.store.db import Store
from chargenet.store.models import AlertMail

_COUNTS = select(
    func.count().filter(AlertMail.last_error.is_not(None)),
    func.count(),
).where(AlertMail.sent_at.is_(None))


def health_check(store: Store) -> HealthCheck:
    async def check() -> list[ComponentHealth]:
        async with store.read() as session:
            failing, waiting = (await session.execute(_COUNTS)).one()
        level = Level.DEGRADED if failing else Level.OK
        return [ComponentHealth("alert mails", level, {"waiting": int(waiting), "failing": int(failing)})]

    return check
