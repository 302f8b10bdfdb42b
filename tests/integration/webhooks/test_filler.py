from __future__ import annotations

from pathlib import Path

import pytest

from chargenet.clock import ManualClock
from chargenet.outbox import Outbox, outbox_committed
from chargenet.outbox.consumer import OutboxConsumer
from chargenet.store.db import Store
from chargenet.webhooks.filler import CONSUMER, fill_once
from tests.integration.webhooks.harness import authorize, make_harness


async def test_a_committed_outbox_event_wakes_the_filler(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    harness = await make_harness(store, clock, tmp_path)
    woken = outbox_committed()
    await harness.publish("A")
    assert woken.is_set()


async def test_a_rolled_back_outbox_event_wakes_nothing(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    harness = await make_harness(store, clock, tmp_path)
    woken = outbox_committed()
    with pytest.raises(RuntimeError):
        async with store.transaction() as session:
            await Outbox(clock).publish(session, site_id=harness.tenant.site_id, payload=authorize("A"))
            raise RuntimeError("rolled back")
    assert not woken.is_set()


async def test_one_fill_round_serves_every_stream_with_lanes(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    harness = await make_harness(store, clock, tmp_path)
    await harness.webhook("http://127.0.0.1:9/a", events="Authorize,StopTransaction")
    await harness.webhook("http://127.0.0.1:9/b", events="Authorize")
    await harness.publish("A", "B")
    engine = harness.engine()
    report = await engine.fill_once()
    await engine.sender.aclose()
    assert (report.enqueued, len(report.filled_lanes)) == (4, 2)


async def test_events_no_webhook_takes_are_passed_over_in_one_round(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    await harness.publish("A", "B", "C", "D", "E")
    report = await fill_once(store, clock, batch=2)
    async with store.read() as session:
        pending = await OutboxConsumer(CONSUMER).pending_streams(session)
    assert (report.enqueued, pending) == (0, [])


async def test_a_webhook_made_after_events_were_passed_over_gets_only_later_ones(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    await harness.publish("A", "B")
    await fill_once(store, clock)
    await harness.webhook("http://127.0.0.1:9/a", events="Authorize")
    await harness.publish("C")
    assert (await fill_once(store, clock)).enqueued == 1
