"""Two processes on one PostgreSQL (two `Store`s, each with its own engine and connections): events one of them
publishes are filled into lanes by the other's webhook supervisor at once, woken by the publisher's
notification, and lanes one of them holds wake at once when the other's filler fills them, woken by the
filler's notification; neither by a poll (the polls and lease rounds here are an hour apart)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chargenet.clock import ManualClock
from chargenet.keys import KeyStore
from chargenet.outbox import Outbox, publisher
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.notify import OUTBOX, WEBHOOK_LANES
from chargenet.webhooks.engine import DeliveryEngine
from chargenet.webhooks.filler import FillReport, fill_once
from chargenet.webhooks.outbound_auth import NoAuth
from chargenet.webhooks.sender import WebhookSender
from tests.factories import make_tenant
from tests.integration.webhooks.harness import authorize, tags
from tests.support.keys import signing_keys
from tests.support.processes import eventually, two_stores
from tests.support.receiver import run_receiver

AN_HOUR = 3600.0


@pytest.fixture
async def stores(clock: ManualClock) -> AsyncIterator[tuple[Store, Store]]:
    async with two_stores(clock) as stores:
        yield stores


async def test_another_processs_supervisor_fills_lanes_on_the_publishers_notification(
    stores: tuple[Store, Store], clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    publishing, filling = stores
    keys = KeyStore(tmp_path / "keys")
    keys.ensure()
    tenant = await make_tenant(publishing, keys, clock.now())
    await webhook_service.create_webhook(
        publishing.transaction, OPERATOR, keys.credential_cipher(), site_id=tenant.site_id, url="http://127.0.0.1:9/hook",
        event_types=["Authorize"], auth=NoAuth(), now=clock.now(), allow_private=True,
    )  # fmt: skip
    # This test's two "processes" share one Python process: the in-process commit signal must not tell.
    monkeypatch.setattr(publisher, "note_published", lambda _session: None)
    engine = DeliveryEngine(
        store=filling,
        clock=clock,
        sender=WebhookSender(clock=clock, keys=signing_keys, allow_private=True),
        cipher=keys.credential_cipher(),
        poll_interval=AN_HOUR,
        lease_interval=AN_HOUR,
    )
    engine.spawn_lane_tasks = False  # lanes are filled, not sent
    reports: list[FillReport] = []
    fill_once = engine.fill_once

    async def recorded() -> FillReport:
        reports.append(await fill_once())
        return reports[-1]

    monkeypatch.setattr(engine, "fill_once", recorded)
    stopping = asyncio.Event()
    tasks = [asyncio.create_task(filling.listener.run(stopping)), asyncio.create_task(engine.run(stopping))]
    try:
        # The first round, then the one the LISTEN taking effect wakes; then it waits for an hour.
        await eventually(lambda: filling.listener.listening(OUTBOX) and len(reports) >= 2)
        rounds = len(reports)
        async with publishing.transaction() as session:
            await Outbox(clock).publish(session, site_id=tenant.site_id, payload=authorize("A"))
        await eventually(lambda: any(report.filled_lanes for report in reports[rounds:]))
    finally:
        stopping.set()
        await asyncio.gather(*tasks)


async def test_an_idle_lane_is_woken_by_the_notification_of_another_processs_filler(
    stores: tuple[Store, Store], clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holding, filling = stores
    keys = KeyStore(tmp_path / "keys")
    keys.ensure()
    tenant = await make_tenant(filling, keys, clock.now())
    # This test's two "processes" share one Python process: the in-process commit signal must not tell.
    monkeypatch.setattr(publisher, "note_published", lambda _session: None)
    async with run_receiver() as receiver:
        await webhook_service.create_webhook(
            filling.transaction, OPERATOR, keys.credential_cipher(), site_id=tenant.site_id, url=receiver.url,
            event_types=["Authorize"], auth=NoAuth(), now=clock.now(), allow_private=True,
        )  # fmt: skip
        engine = DeliveryEngine(
            store=holding,
            clock=clock,
            sender=WebhookSender(clock=clock, keys=signing_keys, allow_private=True),
            cipher=keys.credential_cipher(),
            poll_interval=AN_HOUR,
            lease_interval=AN_HOUR,
        )

        async def fills_nothing() -> FillReport:
            return FillReport()

        # The process holding the lane never fills it, and its lease round is an hour away: only the other
        # process's filler, and the notification its fill sends, can get the event to the lane's task.
        monkeypatch.setattr(engine, "fill_once", fills_nothing)
        stopping = asyncio.Event()
        tasks = [asyncio.create_task(holding.listener.run(stopping)), asyncio.create_task(engine.run(stopping))]
        try:
            await eventually(lambda: holding.listener.listening(WEBHOOK_LANES) and bool(engine.idle_lanes))
            async with filling.transaction() as session:
                await Outbox(clock).publish(session, site_id=tenant.site_id, payload=authorize("A"))
            assert (await fill_once(filling, clock)).filled_lanes == engine.active_lanes
            await eventually(lambda: len(receiver.received) == 1)
        finally:
            stopping.set()
            await asyncio.gather(*tasks)
    assert tags(receiver.bodies()) == ["A"]
