"""The webhooks' install hook: the delivery engine, the test-event sender, dead-letter retention, the end of
credential overlaps and lane health."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import delete, update
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.context import AppContext
from chargenet.store.db import LONG, Store
from chargenet.store.models import Webhook, WebhookDeadLetter
from chargenet.webhooks.engine import DeliveryEngine
from chargenet.webhooks.metrics import WebhookMetrics, health_check
from chargenet.webhooks.oneshot import OneShotSender
from chargenet.webhooks.retry import RetryPolicy
from chargenet.webhooks.sender import WebhookSender, WebhookSigningKeys
from chargenet.workers import LoopWorker, RetentionWorker

log = logging.getLogger(__name__)

DEAD_LETTER_RETENTION = timedelta(days=30)


class DeadLetterRetention(RetentionWorker):
    """Purges dead letters older than 30 days (decisions.md §4)."""

    name = "webhook-dead-letter-retention"
    what = "old dead letters"

    async def purge(self, session: AsyncSession, now: datetime) -> int:
        result = await session.execute(
            delete(WebhookDeadLetter)
            .where(WebhookDeadLetter.dead_at < now - DEAD_LETTER_RETENTION)
            .execution_options(**LONG)
        )
        return int(getattr(result, "rowcount", 0) or 0)


class CredentialOverlapEnd(LoopWorker):
    """Deletes the previous credentials of a rotation once its overlap has ended (`domain.credential_rotation`
    Rule 3; the sender stops using them at that moment already)."""

    name = "webhook-credential-overlap-end"

    def __init__(self, store: Store, clock: Clock, interval: float = 60) -> None:
        super().__init__(clock, interval)
        self.store = store

    async def run_once(self) -> None:
        async with self.store.transaction() as session:
            result = await session.execute(
                update(Webhook)
                .where(Webhook.previous_credentials_until <= self.clock.now())
                .values(previous_credentials=None, previous_credentials_until=None)
                .execution_options(synchronize_session=False)
            )
        ended = int(getattr(result, "rowcount", 0) or 0)
        if ended:
            log.info("deleted the previous credentials of ended rotations", extra={"fields": {"count": ended}})


def install(
    context: AppContext,
    keys: Callable[[], WebhookSigningKeys] | None = None,
    *,
    poll_interval: float = 0.25,
    lease_interval: float = 1.0,
    policy: RetryPolicy | None = None,
) -> DeliveryEngine:
    """Add the delivery engine, the test-event sender (sharing the lanes' sender), dead-letter retention and lane
    health to `context`; returns the engine (which the webhook use cases wake after a change: `webhooks.changes`).
    `keys` defaults to the webhook keys published in the JWKS under kid `sign` (the auth server's key store, which
    caches them until their files change). `policy` is the retry policy (decisions.md's unless a test shortens it)."""
    if keys is None:
        auth = context.auth
        assert auth is not None, "the auth server owns the signing keys and is installed first"

        def published() -> WebhookSigningKeys:
            pair = auth.signing_keys.webhook_keys()
            return WebhookSigningKeys(ed25519=pair.ed25519, rsa=pair.rsa, key_id=pair.kid)

        keys = published
    sender = WebhookSender(clock=context.clock, keys=keys, allow_private=context.settings.webhook_allow_private)
    engine = DeliveryEngine(
        store=context.store,
        clock=context.clock,
        sender=sender,
        cipher=context.keys.credential_cipher(),
        metrics=WebhookMetrics(context.metrics),
        poll_interval=poll_interval,
        lease_interval=lease_interval,
        policy=policy,
    )
    context.webhook_tests = OneShotSender(context.store, sender, context.keys.credential_cipher())
    context.workers.append(engine)
    context.workers.append(DeadLetterRetention(context.store, context.clock))
    context.workers.append(CredentialOverlapEnd(context.store, context.clock))
    context.health_checks.append(health_check(context.store))
    return engine
