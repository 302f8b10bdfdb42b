"""The delivery log (decisions.md "Delivery log"): every attempt of a lane, with its time, event, status code or
error, duration and the first 1 KiB of the response, written in the transaction that records the attempt's
outcome (never a commit of its own), and purged with the delivered events after the retention window."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, func, select

from chargenet.clock import ManualClock
from chargenet.outbox.retention import EventRetention
from chargenet.ports import SentRequest
from chargenet.store.db import Store
from chargenet.store.models import WebhookDelivery, WebhookLane, WebhookLaneEntry
from chargenet.webhooks import queue
from chargenet.webhooks.retry import RetryPolicy
from chargenet.webhooks.sender import EXCERPT_BYTES
from tests.integration.webhooks.harness import drain, make_harness, tags
from tests.support.receiver import Received, Reply, run_receiver


async def _log(store: Store) -> list[WebhookDelivery]:
    async with store.transaction() as session:
        return list(await session.scalars(select(WebhookDelivery).order_by(WebhookDelivery.id)))


async def test_every_attempt_is_logged_with_its_status_error_duration_and_response(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    answers = [Reply(503, b"<b>busy</b>\x00\xff"), Reply(200, b"ok")]

    async with run_receiver(lambda _r: answers.pop(0)) as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish("A")
        engine = await harness.filled_engine()
        await drain(engine, await harness.lane_id(webhook_id), clock)
        await engine.sender.aclose()
    failed, delivered = await _log(store)
    event_id = json_event_id(receiver.received[0])
    assert (failed.webhook_id, failed.event_type, failed.event_id, failed.attempt) == (
        webhook_id,
        "Authorize",
        event_id,
        1,
    )
    assert (failed.delivered, failed.status, failed.error) == (False, 503, "HTTP 503")
    # Kept as the receiver sent it, bytes that are not UTF-8 (and NUL, which no store holds) replaced.
    assert failed.response == "<b>busy</b>\ufffd\ufffd"
    assert failed.request_id == receiver.received[0].headers["x-request-id"]
    assert (delivered.attempt, delivered.delivered, delivered.status, delivered.error, delivered.response) == (
        2,
        True,
        200,
        None,
        "ok",
    )
    assert delivered.at == failed.at + timedelta(seconds=10)  # the retry 10 s after the first attempt ended
    assert failed.duration_ms >= 0 and delivered.duration_ms >= 0


async def test_a_connection_error_is_logged_without_status_and_a_long_response_is_cut_at_1_kib(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    async with run_receiver(lambda _r: Reply(204)) as closed:
        dead_url = closed.url
    async with run_receiver(lambda _r: Reply(200, b"x" * 5000)) as receiver:
        broken = await harness.webhook(dead_url)
        working = await harness.webhook(receiver.url)
        await harness.publish("A")
        engine = harness.engine()
        engine.policy = RetryPolicy(max_retries=0)
        await engine.lease_once()
        await engine.fill_once()
        await drain(engine, await harness.lane_id(broken), clock)
        await drain(engine, await harness.lane_id(working), clock)
        await engine.sender.aclose()
    logged = {row.webhook_id: row for row in await _log(store)}
    assert logged[broken].status is None and logged[broken].response is None
    assert logged[broken].error is not None and logged[broken].error.startswith("connection failed")
    assert logged[working].response == "x" * EXCERPT_BYTES


async def test_acknowledgements_of_a_window_are_logged_in_their_group_commit_not_one_commit_each(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    events = [f"E{i}" for i in range(12)]
    async with run_receiver() as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish(*events)
        engine = await harness.filled_engine()
        lane_id = await harness.lane_id(webhook_id)
        transactions = _transactions(store)
        await drain(engine, lane_id, clock, window=32)
        await engine.settled()
        await engine.sender.aclose()
    assert tags(receiver.bodies()) == events
    logged = await _log(store)
    assert [row.event_id for row in logged] == [json_event_id(r) for r in receiver.received]
    assert all(row.delivered and row.attempt == 1 for row in logged)
    # Every transaction that logged attempts is one that removed acknowledged entries from the lane: the log has
    # no commit of its own.
    logging = [
        statements for statements in transactions if any("INSERT INTO webhook_deliveries" in s for s in statements)
    ]
    assert logging
    assert all(any("DELETE FROM webhook_lane_entries" in s for s in statements) for statements in logging)


async def test_an_attempt_is_logged_only_if_its_outcome_is_committed(
    store: Store, clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    original = queue.record_attempts
    failures = {"left": 1}

    async def failing_once(*args: Any, **kwargs: Any) -> None:
        await original(*args, **kwargs)
        if failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("the disk is full")

    monkeypatch.setattr(queue, "record_attempts", failing_once)
    async with run_receiver() as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish("A")
        engine = await harness.filled_engine()
        lane_id = await harness.lane_id(webhook_id)
        with pytest.raises(RuntimeError, match="the disk is full"):
            await engine.step(lane_id)
        # Rolled back together: the acknowledgement is not recorded, and neither is the attempt.
        assert await _log(store) == []
        async with store.transaction() as session:
            assert await session.scalar(select(func.count()).select_from(WebhookLaneEntry)) == 1
        await drain(engine, lane_id, clock)
        await engine.sender.aclose()
    assert len(receiver.received) == 2
    assert [row.attempt for row in await _log(store)] == [1]


async def test_the_log_is_purged_with_delivered_events_after_the_retention_window(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    async with run_receiver() as receiver:
        webhook_id = await harness.webhook(receiver.url)
        engine = harness.engine()
        await engine.lease_once()
        await harness.publish("old")
        await engine.fill_once()
        await drain(engine, await harness.lane_id(webhook_id), clock)
        clock.advance(timedelta(days=6).total_seconds())
        await harness.publish("newer")
        await engine.fill_once()
        await drain(engine, await harness.lane_id(webhook_id), clock)
        await engine.sender.aclose()
    assert len(await _log(store)) == 2
    clock.advance(timedelta(days=1, seconds=1).total_seconds())
    await EventRetention(store, clock, days=7).run_once()
    kept = await _log(store)
    assert [row.event_id for row in kept] == [json_event_id(receiver.received[1])]
    clock.advance(timedelta(days=6).total_seconds())
    await EventRetention(store, clock, days=7).run_once()
    assert await _log(store) == []


def json_event_id(request: Received) -> str:
    return str(json.loads(request.body)["eventId"])


def _transactions(store: Store) -> list[list[str]]:
    """The statements of each committed transaction from now on, per connection."""
    committed: list[list[str]] = []
    open_: dict[int, list[str]] = {}

    def on_statement(connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        open_.setdefault(id(connection), []).append(statement)

    def on_commit(connection: Any) -> None:
        committed.append(open_.pop(id(connection), []))

    def on_rollback(connection: Any) -> None:
        open_.pop(id(connection), None)

    engine = store.engine.sync_engine
    event.listen(engine, "before_cursor_execute", on_statement)
    event.listen(engine, "commit", on_commit)
    event.listen(engine, "rollback", on_rollback)
    return committed


async def test_a_lane_counts_its_failures_since_it_last_delivered_across_dead_letters(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    answers = [Reply(500), Reply(500), Reply(502), Reply(204)]
    async with run_receiver(lambda _r: answers.pop(0)) as receiver:
        webhook_id = await harness.webhook(receiver.url)
        await harness.publish("A", "B")
        engine = harness.engine()
        engine.policy = RetryPolicy(max_retries=1)
        await engine.lease_once()
        await engine.fill_once()
        lane_id = await harness.lane_id(webhook_id)
        failures = []
        for _ in range(4):
            await engine.step(lane_id)
            clock.advance(10)
            async with store.transaction() as session:
                lane = await session.get(WebhookLane, lane_id)
                assert lane is not None
                failures.append((lane.consecutive_failures, lane.head_attempts))
        await engine.sender.aclose()
    # A failed twice and was dead-lettered (the head's count starts again for B); B failed once, then delivered.
    assert failures == [(1, 1), (2, 0), (3, 1), (0, 0)]


async def test_acknowledgements_and_their_attempts_are_written_together_only_under_the_lease(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    webhook_id = await harness.webhook("http://127.0.0.1:9/hook")
    await harness.publish("A", "B", "C")
    engine = await harness.filled_engine()
    lane_id = await harness.lane_id(webhook_id)
    async with store.transaction() as session:
        lane = await queue.snapshot(session, lane_id, engine.owner, window=3)
    assert lane is not None and lane.view.head is not None
    entries = [lane.view.head.entry_id, *(entry.entry_id for entry in lane.following)]
    events = [lane.view.head.event_id, *(entry.event_id for entry in lane.following)]

    def attempt(n: int) -> queue.Attempt:
        sent = SentRequest(f"request-{n}", clock.now(), 3.5, 204, None, "ok")
        return queue.Attempt(events[n], 1, sent)

    async with store.transaction() as session:
        lost = await queue.acknowledge(
            session, lane, "another-process", entries[:2], now=clock.now(), request_ms=3.5, attempts=[attempt(0)]
        )
    assert lost is False
    assert await _log(store) == []
    async with store.transaction() as session:
        held = await queue.acknowledge(
            session,
            lane,
            engine.owner,
            entries[:2],
            now=clock.now(),
            request_ms=3.5,
            attempts=[attempt(0), attempt(1)],
        )
        left = await session.scalar(select(WebhookLane.size).where(WebhookLane.id == lane_id))
    assert held is True
    assert left == 1
    logged = await _log(store)
    assert [(row.event_id, row.request_id, row.status, row.delivered, row.response) for row in logged] == [
        (events[0], "request-0", 204, True, "ok"),
        (events[1], "request-1", 204, True, "ok"),
    ]
    assert {(row.webhook_id, row.at) for row in logged} == {(webhook_id, clock.now())}
    await engine.sender.aclose()
