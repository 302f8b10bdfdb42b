"""A running lane reads several entries at once and sends on while they are acknowledged, recording the
acknowledgements in group commits beside the sends (engine.step with a window)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update

from chargenet.clock import ManualClock
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import WebhookLane, WebhookLaneEntry
from chargenet.webhooks import engine as engine_module
from chargenet.webhooks import queue
from chargenet.webhooks.engine import UNSETTLED_LIMIT, LeaseLost
from chargenet.webhooks.lane import Idle
from tests.integration.webhooks.harness import drain, make_harness, tags
from tests.support.receiver import Received, Reply, run_receiver

EVENTS = ["A", "B", "C", "D", "E", "F", "G"]


async def _lane_state(store: Store) -> tuple[int | None, int | None]:
    async with store.transaction() as session:
        size = await session.scalar(select(WebhookLane.size))
        entries = await session.scalar(select(func.count()).select_from(WebhookLaneEntry))
    return size, entries


async def test_a_lane_read_in_windows_sends_every_event_once_in_order_and_records_each(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    async with run_receiver() as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish(*EVENTS)
        engine = await harness.filled_engine()
        results = await drain(engine, await harness.lane_id(webhook_id), clock, window=3)
        await engine.sender.aclose()
    assert tags(receiver.bodies()) == EVENTS
    assert isinstance(results[-1], Idle)
    assert await _lane_state(store) == (0, 0)


async def test_a_failure_inside_a_window_is_retried_before_anything_behind_it_is_sent(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    failures = {"C": 2}

    def answer(request: Received) -> Reply:
        tag = tags([request.body])[0]
        if failures.get(tag, 0) > 0:
            failures[tag] -= 1
            return Reply(500)
        return Reply(204)

    async with run_receiver(answer) as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish(*EVENTS)
        engine = await harness.filled_engine()
        await drain(engine, await harness.lane_id(webhook_id), clock, window=4)
        await engine.sender.aclose()
    assert tags(receiver.bodies()) == ["A", "B", "C", "C", "C", "D", "E", "F", "G"]
    assert await _lane_state(store) == (0, 0)


async def test_a_lane_whose_lease_is_taken_mid_window_stops_and_its_new_owner_loses_nothing(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)

    async def answer(request: Received) -> Reply:
        if tags([request.body])[0] == "C":
            # Another process takes the lane (the first one looked dead) while C is in flight.
            async with store.transaction() as session:
                await session.execute(update(WebhookLane).values(lease_owner="process-2"))
        return Reply(204)

    async with run_receiver(answer) as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish(*EVENTS)
        first = harness.engine("process-1")
        await first.lease_once()
        await first.fill_once()
        lane_id = await harness.lane_id(webhook_id)
        assert await first.step(lane_id, window=len(EVENTS)) == LeaseLost()
        sent_by_first = len(receiver.received)
        second = harness.engine("process-2")
        await drain(second, lane_id, clock, window=len(EVENTS))
        await first.sender.aclose()
        await second.sender.aclose()
    delivered = tags(receiver.bodies())
    # The first process may send on until it sees the loss (at-least-once); the second starts from the first
    # event whose acknowledgement the first could not record, no later than C, and goes on in order.
    again = delivered[sent_by_first:]
    assert tags(receiver.bodies())[:sent_by_first] == EVENTS[:sent_by_first]
    assert again == EVENTS[len(EVENTS) - len(again) :] and len(again) >= len(EVENTS) - EVENTS.index("C")
    assert await _lane_state(store) == (0, 0)


@pytest.mark.expected_traceback("ConnectionError: the process died before its acknowledgements were committed")
async def test_acknowledgements_lost_in_a_crash_are_sent_again_and_nothing_is_lost(
    store: Store, clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    async with run_receiver() as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish(*EVENTS)
        crashed = harness.engine("process-1")
        await crashed.lease_once()
        await crashed.fill_once()
        lane_id = await harness.lane_id(webhook_id)

        async def dies_before_commit(*_args: object, **_kwargs: object) -> bool:
            raise ConnectionError("the process died before its acknowledgements were committed")

        with monkeypatch.context() as patch:
            patch.setattr(queue, "acknowledge", dies_before_commit)
            with pytest.raises(ConnectionError):
                await crashed.step(lane_id, window=len(EVENTS))
            await crashed.settled()  # whatever was still being recorded dies with the process too
        sent_before_crash = tags(receiver.bodies())
        await crashed.sender.aclose()
        clock.advance(11)
        restarted = harness.engine("process-2")
        assert await restarted.lease_once() == {lane_id}
        await drain(restarted, lane_id, clock, window=len(EVENTS))
        await restarted.sender.aclose()
    delivered = tags(receiver.bodies())
    assert sent_before_crash == EVENTS[: len(sent_before_crash)] and len(sent_before_crash) > 1
    assert delivered[len(sent_before_crash) :] == EVENTS
    assert await _lane_state(store) == (0, 0)


@pytest.mark.expected_traceback("ConnectionError: the database went away for a moment")
async def test_lanes_recover_after_a_group_commit_of_their_acknowledgements_failed(
    store: Store, clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    acknowledge = queue.acknowledge
    failures = [ConnectionError("the database went away for a moment")]

    async def fails_once(*args: Any, **kwargs: Any) -> bool:
        if failures:
            raise failures.pop()
        return await acknowledge(*args, **kwargs)

    monkeypatch.setattr(queue, "acknowledge", fails_once)
    async with run_receiver() as first, run_receiver() as second:
        lanes = [await harness.lane_id(await harness.webhook(r.url)) for r in (first, second)]
        await harness.publish(*EVENTS)
        engine = await harness.filled_engine()

        async def drain_through_errors(lane_id: int) -> None:
            for _ in range(20):  # as the running engine does: a failed step is followed by a fresh one
                try:
                    if isinstance(await engine.step(lane_id, window=len(EVENTS)), Idle):
                        return
                except ConnectionError:
                    continue
            raise AssertionError(f"lane {lane_id} did not drain")

        await asyncio.gather(*(drain_through_errors(lane_id) for lane_id in lanes))
        await engine.sender.aclose()
    for receiver in (first, second):
        delivered = tags(receiver.bodies())
        assert list(dict.fromkeys(delivered)) == EVENTS
    assert await _lane_state(store) == (0, 0)


async def test_a_settings_change_after_a_lane_was_read_makes_its_next_step_read_it_again(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    async with run_receiver() as old, run_receiver() as new:
        webhook_id = await harness.webhook(old.url)
        await harness.publish("A", "B")
        engine = await harness.filled_engine()
        lane_id = await harness.lane_id(webhook_id)
        await engine.step(lane_id)  # A sent; the lane as it stood after A is kept for the next step
        clock.advance(1)
        await webhook_service.update_webhook(
            store.transaction,
            OPERATOR,
            harness.keys.credential_cipher(),
            webhook_id,
            url=new.url,
            now=clock.now(),
            allow_private=True,
        )
        await drain(engine, lane_id, clock)
        await engine.sender.aclose()
    assert (tags(old.bodies()), tags(new.bodies())) == (["A"], ["B"])


async def test_a_busy_lane_commits_its_acknowledgements_up_to_the_limit_at_a_time(
    store: Store, clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    events = [f"E{i}" for i in range(12)]
    groups: list[int] = []
    acknowledge = queue.acknowledge

    async def counted(*args: Any, **kwargs: Any) -> bool:
        groups.append(len(args[3]))
        return await acknowledge(*args, **kwargs)

    monkeypatch.setattr(queue, "acknowledge", counted)
    # Only the lane's own waits start a commit here, however slowly the machine runs the sends.
    monkeypatch.setattr(engine_module, "ACK_DELAY", 60.0)
    async with run_receiver() as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish(*events)
        engine = await harness.filled_engine()
        await drain(engine, await harness.lane_id(webhook_id), clock, window=32)
        await engine.sender.aclose()
    assert tags(receiver.bodies()) == events
    # The lane waits for a commit when it is UNSETTLED_LIMIT ahead, and that commit takes all of them; the last
    # three are committed when the window ends, the last event with its own outcome.
    assert groups == [UNSETTLED_LIMIT, UNSETTLED_LIMIT, 3, 1]
    assert await _lane_state(store) == (0, 0)


async def test_an_acknowledgement_is_committed_while_its_lane_waits_for_a_slow_receiver(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    def answer(request: Received) -> Reply:
        return Reply(204, delay=3600 if tags([request.body]) == ["B"] else 0.0)  # B is answered after the test

    harness = await make_harness(store, clock, tmp_path)
    async with run_receiver(answer) as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish("A", "B")
        engine = await harness.filled_engine(timeout=60.0)  # B stays in flight for as long as the test may wait
        step = asyncio.create_task(engine.step(await harness.lane_id(webhook_id), window=32))
        try:
            deadline = asyncio.get_running_loop().time() + 30.0
            while await _lane_state(store) != (1, 1):  # A's acknowledgement committed, B still in flight
                assert asyncio.get_running_loop().time() < deadline, "A's acknowledgement waited for B's answer"
                await asyncio.sleep(0.01)
            assert len(receiver.received) == 2 and not step.done()
        finally:
            step.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await step
            await engine.sender.aclose()
