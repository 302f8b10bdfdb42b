"""A webhook engine wired to a scratch store, a ManualClock and a real loopback receiver."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.domain.events import AuthorizePayload, EventType
from chargenet.keys import KeyStore
from chargenet.outbox import Outbox
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store, Transactions
from chargenet.store.models import WebhookLane
from chargenet.webhooks.engine import DeliveryEngine, LeaseLost, StepResult
from chargenet.webhooks.lane import Idle, Paused, SendHead, WaitUntil
from chargenet.webhooks.metrics import WebhookMetrics
from chargenet.webhooks.outbound_auth import NoAuth, OutboundAuth
from chargenet.webhooks.sender import WebhookSender, WebhookSigningKeys
from tests.factories import Tenant, make_tenant
from tests.support.keys import signing_keys


def authorize(tag: str) -> AuthorizePayload:
    return AuthorizePayload.model_validate({"stationId": "ST-1", "idTag": tag, "status": "Accepted"})


@dataclass
class Harness:
    store: Store
    clock: ManualClock
    keys: KeyStore
    tenant: Tenant

    async def webhook(self, url: str, events: str = "Authorize", auth: OutboundAuth | None = None) -> str:
        view = await webhook_service.create_webhook(
            self.store.transaction,
            OPERATOR,
            self.keys.credential_cipher(),
            site_id=self.tenant.site_id,
            url=url,
            event_types=[events],
            auth=auth or NoAuth(),
            now=self.clock.now(),
            allow_private=True,
        )
        return view.id

    async def publish(self, *tags: str) -> None:
        async with self.store.transaction() as session:
            for tag in tags:
                await Outbox(self.clock).publish(session, site_id=self.tenant.site_id, payload=authorize(tag))

    async def subscribe(self, webhook_id: str, *events: str, transaction: Transactions | None = None) -> None:
        """Change the event types the webhook subscribes to (those dropped: their lanes go, with dead letters)."""
        await webhook_service.update_webhook(
            transaction or self.store.transaction,
            OPERATOR,
            self.keys.credential_cipher(),
            webhook_id,
            now=self.clock.now(),
            allow_private=True,
            event_types=list(events),
        )

    async def set_enabled(self, webhook_id: str, enabled: bool) -> None:
        async with self.store.transaction() as session:
            await webhook_service.set_enabled(session, OPERATOR, webhook_id, enabled, now=self.clock.now())

    async def lane_id(self, webhook_id: str, event_type: EventType = EventType.AUTHORIZE) -> int:
        async with self.store.transaction() as session:
            lane_id = await session.scalar(
                select(WebhookLane.id).where(
                    WebhookLane.webhook_id == webhook_id, WebhookLane.event_type == event_type.value
                )
            )
        assert lane_id is not None
        return int(lane_id)

    def engine(
        self,
        owner: str = "process-1",
        timeout: float = 30.0,
        metrics: WebhookMetrics | None = None,
        keys: Callable[[], WebhookSigningKeys] = signing_keys,
    ) -> DeliveryEngine:
        # Loopback receivers answer at once; the default bound only ends a test that would hang. A tighter one timed
        # out attempts on a busy machine, and the resent event showed twice in a log that a test compares exactly.
        sender = WebhookSender(clock=self.clock, keys=keys, allow_private=True, timeout=timeout)
        engine = DeliveryEngine(
            store=self.store,
            clock=self.clock,
            sender=sender,
            cipher=self.keys.credential_cipher(),
            owner=owner,
            metrics=metrics,
        )
        engine.spawn_lane_tasks = False
        return engine

    async def filled_engine(self, **engine: Any) -> DeliveryEngine:
        """An engine (`engine` as `self.engine` takes it) that holds the lease and has filled its lanes from the
        outbox once."""
        filled = self.engine(**engine)
        await filled.lease_once()
        await filled.fill_once()
        return filled


async def make_harness(store: Store, clock: ManualClock, tmp_path: Path) -> Harness:
    keys = KeyStore(tmp_path / "keys")
    keys.ensure()
    return Harness(store, clock, keys, await make_tenant(store, keys, clock.now()))


async def drain(
    engine: DeliveryEngine, lane_id: int, clock: ManualClock, max_steps: int = 5000, window: int = 1
) -> list[StepResult]:
    """Step the lane until it is empty, jumping the clock to each retry time."""
    results: list[StepResult] = []
    for _ in range(max_steps):
        result = await engine.step(lane_id, window=window)
        results.append(result)
        if isinstance(result, WaitUntil):
            clock.set(result.at)
        elif isinstance(result, Idle | Paused | LeaseLost):
            return results
        else:
            assert isinstance(result, SendHead)
    raise AssertionError("lane did not drain")


def tags(bodies: list[bytes]) -> list[str]:
    return [json.loads(body)["payload"]["idTag"] for body in bodies]
