from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from chargenet.clock import ManualClock
from chargenet.services import webhook_dead_letters, webhook_lanes
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import WebhookDeadLetter, WebhookLane, WebhookLaneEntry
from chargenet.webhooks.engine import LeaseLost
from chargenet.webhooks.lane import Idle, Paused, SendHead
from tests.integration.webhooks.harness import drain, make_harness, tags
from tests.support.receiver import Received, Reply, run_receiver


def down_until(clock: ManualClock, back_up: datetime, status: int) -> Callable[[Received], Reply]:
    """A receiver's answer: HTTP `status` until the clock reaches `back_up`, 204 from then on."""

    def answer(_: Received) -> Reply:
        return Reply(204) if clock.now() >= back_up else Reply(status)

    return answer


async def test_events_reach_the_receiver_in_commit_order(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    harness = await make_harness(store, clock, tmp_path)
    async with run_receiver() as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish("A", "B", "C")
        await harness.publish("D")
        engine = harness.engine()
        await engine.lease_once()
        report = await engine.fill_once()
        await drain(engine, await harness.lane_id(webhook_id), clock)
        await engine.sender.aclose()
    assert report.enqueued == 4
    assert tags(receiver.bodies()) == ["A", "B", "C", "D"]


async def test_events_before_the_webhook_existed_are_not_sent(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    harness = await make_harness(store, clock, tmp_path)
    async with run_receiver() as receiver:
        await harness.publish("old")
        engine = harness.engine()
        await engine.fill_once()
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish("new")
        await engine.lease_once()
        await engine.fill_once()
        await drain(engine, await harness.lane_id(webhook_id), clock)
        await engine.sender.aclose()
    assert tags(receiver.bodies()) == ["new"]


async def test_event_types_not_subscribed_stay_out_of_the_lanes(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    await harness.webhook("http://127.0.0.1:9/hook", events="StopTransaction")
    await harness.publish("A")
    engine = harness.engine()
    report = await engine.fill_once()
    await engine.sender.aclose()
    assert report.enqueued == 0


async def test_receiver_down_59_minutes_gets_every_event_in_order(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    back_up = clock.now() + timedelta(minutes=59)
    async with run_receiver(down_until(clock, back_up, 503)) as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish("A", "B", "C")
        engine = await harness.filled_engine()
        await drain(engine, await harness.lane_id(webhook_id), clock)
        await engine.sender.aclose()
    # Attempts at 0 s, 10 s, ... 3530 s fail (354); the one at 3540 s (59 min) gets through.
    assert tags(receiver.bodies()) == ["A"] * 355 + ["B", "C"]
    async with store.transaction() as session:
        assert await session.scalar(select(func.count()).select_from(WebhookDeadLetter)) == 0


async def test_receiver_down_61_minutes_dead_letters_the_head_and_the_lane_goes_on(
    store: Store, clock: ManualClock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    back_up = clock.now() + timedelta(minutes=61)
    async with run_receiver(down_until(clock, back_up, 500)) as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish("A", "B")
        engine = await harness.filled_engine()
        lane_id = await harness.lane_id(webhook_id)
        with caplog.at_level(logging.ERROR):
            while clock.now() < back_up:
                result = await engine.step(lane_id)
                if not isinstance(result, SendHead):
                    clock.set(result.at)  # type: ignore[union-attr]
        await drain(engine, lane_id, clock)
        await engine.sender.aclose()
    async with store.transaction() as session:
        letters = list(await session.scalars(select(WebhookDeadLetter)))
    assert [(d.reason, d.error, d.attempts) for d in letters] == [("retries_exhausted", "HTTP 500", 361)]
    assert tags([letters[0].body.encode()]) == ["A"]
    # B follows at once (3600 s) and gets through when the receiver is back at 61 min.
    assert tags(receiver.bodies()) == ["A"] * 361 + ["B"] * 7
    logged = [r for r in caplog.records if getattr(r, "fields", {}).get("exceptionType") == "Webhook_SendHttp"]
    assert len(logged) == 1


async def test_full_lane_sends_the_1001st_event_to_dead_letters(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    webhook_id = await harness.webhook("http://127.0.0.1:9/hook")
    await harness.set_enabled(webhook_id, False)
    await harness.publish(*[f"T{i}" for i in range(1001)])
    engine = harness.engine()
    reports = [await engine.fill_once() for _ in range(3)]
    await engine.sender.aclose()
    async with store.transaction() as session:
        letters = list(await session.scalars(select(WebhookDeadLetter)))
        size = await session.scalar(select(WebhookLane.size))
        entries = await session.scalar(select(func.count()).select_from(WebhookLaneEntry))
    enqueued, refused = sum(r.enqueued for r in reports), sum(r.refused for r in reports)
    assert (enqueued, refused, size, entries) == (1000, 1, 1000, 1000)
    assert [(d.reason, tags([d.body.encode()])) for d in letters] == [("queue_full", ["T1000"])]


async def test_disabled_lane_keeps_events_and_sends_them_when_enabled(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    async with run_receiver() as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.set_enabled(webhook_id, False)
        await harness.publish("A", "B")
        engine = harness.engine()
        assert await engine.lease_once() == set()
        await engine.fill_once()
        await harness.set_enabled(webhook_id, True)
        held = await engine.lease_once()
        lane_id = await harness.lane_id(webhook_id)
        await drain(engine, lane_id, clock)
        await engine.sender.aclose()
    assert held == {lane_id}
    assert tags(receiver.bodies()) == ["A", "B"]


async def test_disabling_stops_the_lane_at_its_next_step(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    harness = await make_harness(store, clock, tmp_path)
    webhook_id = await harness.webhook("http://127.0.0.1:9/hook")
    engine = harness.engine()
    await engine.lease_once()
    await harness.set_enabled(webhook_id, False)
    assert await engine.step(await harness.lane_id(webhook_id)) == Paused()
    await engine.sender.aclose()


async def test_dead_letters_are_replayed_at_the_tail_of_their_lane(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    async with run_receiver() as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.set_enabled(webhook_id, False)
        async with store.transaction() as session:
            lane = await session.scalar(select(WebhookLane))
            assert lane is not None
            lane.size = 1000
        await harness.publish("lost")
        engine = harness.engine()
        await engine.fill_once()
        async with store.transaction() as session:
            lane = await session.scalar(select(WebhookLane))
            assert lane is not None
            lane.size = 0
            replayed = await webhook_dead_letters.replay_dead_letters(session, OPERATOR, webhook_id, now=clock.now())
        await harness.set_enabled(webhook_id, True)
        await engine.lease_once()
        await drain(engine, await harness.lane_id(webhook_id), clock)
        await engine.sender.aclose()
        async with store.transaction() as session:
            page = await webhook_dead_letters.list_dead_letters(session, OPERATOR, webhook_id)
    assert [d.reason for d in replayed] == ["queue_full"]
    assert tags(receiver.bodies()) == ["lost"]
    assert page.items == []


async def test_a_second_process_cannot_take_a_held_lane_until_its_lease_expires(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    await harness.webhook("http://127.0.0.1:9/hook")
    first, second = harness.engine("process-1"), harness.engine("process-2")
    held = await first.lease_once()
    assert await second.lease_once() == set()
    clock.advance(10.5)
    assert await second.lease_once() == held
    assert await first.step(next(iter(held))) == LeaseLost()
    await first.sender.aclose()
    await second.sender.aclose()


async def test_crash_during_retries_loses_nothing_and_sends_nothing_acknowledged_twice(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    failing = {"B"}

    def answer(request: Received) -> Reply:
        return Reply(500) if tags([request.body])[0] in failing else Reply(200)

    async with run_receiver(answer) as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish("A", "B", "C")
        crashed = harness.engine("process-1")
        await crashed.lease_once()
        await crashed.fill_once()
        lane_id = await harness.lane_id(webhook_id)
        for _ in range(4):  # A delivered, B fails, wait, B fails; then the process dies without a goodbye
            result = await crashed.step(lane_id)
            if not isinstance(result, SendHead):
                clock.set(result.at)  # type: ignore[union-attr]
        await crashed.sender.aclose()
        failing.clear()
        clock.advance(11)
        restarted = harness.engine("process-2")
        assert await restarted.lease_once() == {lane_id}
        assert isinstance((await drain(restarted, lane_id, clock))[-1], Idle)
        await restarted.sender.aclose()
    assert tags(receiver.bodies()) == ["A", "B", "B", "B", "C"]


async def test_unsubscribing_an_event_type_dead_letters_what_waited_in_its_lane(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    webhook_id = await harness.webhook("http://127.0.0.1:9/hook", events="Authorize,StopTransaction")
    await harness.set_enabled(webhook_id, False)
    await harness.publish("A", "B")
    engine = harness.engine()
    await engine.fill_once()
    await engine.sender.aclose()
    await harness.subscribe(webhook_id, "StopTransaction")
    async with store.transaction() as session:
        page = await webhook_dead_letters.list_dead_letters(session, OPERATOR, webhook_id)
        lanes = await webhook_lanes.get_lanes(session, OPERATOR, webhook_id)
    assert [(d.reason, d.event["payload"]["idTag"]) for d in page.items] == [
        ("unsubscribed", "A"),
        ("unsubscribed", "B"),
    ]
    assert [lane.event_type for lane in lanes] == ["StopTransaction"]
