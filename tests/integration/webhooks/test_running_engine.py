"""The engine as `chargenet serve` runs it: its own loops and lane tasks, the real clock for polling."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from chargenet_partner.webhooks import verify_request
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.app import AppContext, create_app, open_context
from chargenet.clock import ManualClock
from chargenet.config import load_settings
from chargenet.services import webhook_lanes
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.store.models import WebhookLane
from chargenet.webhooks import engine as engine_module
from chargenet.webhooks import queue
from chargenet.webhooks.engine import DeliveryEngine
from chargenet.webhooks.filler import FillReport
from chargenet.webhooks.install import install as install_webhooks
from tests.factories import add_webhook, make_tenant
from tests.integration.webhooks.harness import authorize, tags
from tests.support.keys import public_keys, signing_keys
from tests.support.processes import results_of
from tests.support.receiver import Received, Receiver, Reply, run_receiver


@pytest.fixture
async def context(database_url: str, tmp_path: Path, clock: ManualClock) -> AsyncIterator[AppContext]:
    flags = {"database_url": database_url, "data_dir": str(tmp_path / "data"), "webhook_allow_private": True}
    settings = load_settings(flags, environ={})
    ctx = await open_context(settings, clock=clock)
    yield ctx
    await ctx.close()


async def _eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def _setup(context: AppContext, url: str) -> tuple[str, str]:
    tenant = await make_tenant(context.store, context.keys, context.clock.now())
    return tenant.site_id, await _webhook(context, tenant.site_id, url)


async def _webhook(context: AppContext, site_id: str, url: str) -> str:
    view = await add_webhook(
        context.store.transaction, context.keys.credential_cipher(), site_id, context.clock.now(), url=url
    )
    return view.id


async def _publish(context: AppContext, site_id: str, *names: str) -> None:
    async with context.store.transaction() as session:
        for name in names:
            await context.outbox.publish(session, site_id=site_id, payload=authorize(name))


async def _idle_after_one_event(context: AppContext, site_id: str, engine: DeliveryEngine, receiver: Receiver) -> int:
    """Publish event A; once it has reached the receiver and the lane's task sleeps with nothing to send, the id of
    the engine's one lane."""
    await _publish(context, site_id, "A")
    await _eventually(lambda: len(receiver.received) == 1)
    (lane_id,) = engine.active_lanes
    await _eventually(lambda: lane_id in engine.idle_lanes)
    return lane_id


async def _start(context: AppContext) -> tuple[DeliveryEngine, asyncio.Event, asyncio.Task[None]]:
    engine = install_webhooks(context, keys=signing_keys, poll_interval=0.02, lease_interval=0.1)
    stopping = asyncio.Event()
    return engine, stopping, asyncio.create_task(engine.run(stopping))


async def test_running_engine_delivers_signed_events_in_order(context: AppContext) -> None:
    async with run_receiver() as receiver:
        site_id, _ = await _setup(context, receiver.url)
        _engine, stopping, task = await _start(context)
        await _publish(context, site_id, "A", "B")
        await _publish(context, site_id, "C")
        await _eventually(lambda: len(receiver.received) == 3)
        stopping.set()
        await task
    assert tags(receiver.bodies()) == ["A", "B", "C"]
    for request in receiver.received:
        verify_request(
            method="POST",
            path=request.path,
            headers=request.headers,
            body=request.body,
            keys=public_keys,
            now=context.clock.now().timestamp(),
        )


async def test_filler_rounds_start_a_spacing_apart_while_commits_keep_coming(
    context: AppContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with run_receiver() as receiver:
        site_id, _ = await _setup(context, receiver.url)
        engine, stopping, task = await _start(context)
        engine.fill_spacing = 0.05
        # A round's start as the engine reads it (its last reading of the clock before it calls fill_once): one
        # read by the test afterwards would be later by however long the process was preempted in between.
        readings: list[float] = []

        def monotonic() -> float:
            readings.append(time.monotonic())
            return readings[-1]

        monkeypatch.setattr(engine_module, "time", SimpleNamespace(monotonic=monotonic))
        rounds: list[float] = []
        fill_once = engine.fill_once

        async def counted() -> FillReport:
            rounds.append(readings[-1])
            return await fill_once()

        monkeypatch.setattr(engine, "fill_once", counted)
        names = [f"E{n}" for n in range(20)]
        for name in names:  # each its own commit, each waking the filler
            await _publish(context, site_id, name)
            await asyncio.sleep(0.005)
        await _eventually(lambda: len(receiver.received) == len(names))
        stopping.set()
        await task
    assert tags(receiver.bodies()) == names
    gaps = [later - earlier for earlier, later in itertools.pairwise(rounds)]
    # The loop's timers may fire up to the clock's resolution early (asyncio's `_clock_resolution`).
    assert gaps and min(gaps) >= 0.05 - time.get_clock_info("monotonic").resolution


async def test_idle_lane_wakes_for_entries_another_process_queued(context: AppContext) -> None:
    async with run_receiver() as receiver:
        site_id, _ = await _setup(context, receiver.url)
        engine, stopping, task = await _start(context)
        lane_id = await _idle_after_one_event(context, site_id, engine, receiver)
        # What another process's filler does: the lane's entry is queued in a transaction that wakes nothing here.
        async with context.store.transaction() as session:
            lane = await session.get(WebhookLane, lane_id)
            assert lane is not None
            await queue.enqueue(session, lane, event_id="evt-elsewhere", body='{"tag": "B"}', now=context.clock.now())
        # Found by the next lease round (every 0.1 s here), not by a poll of the lane of its own.
        await _eventually(lambda: len(receiver.received) == 2, timeout=5.0)
        stopping.set()
        await task
    assert receiver.received[1].body == b'{"tag": "B"}'


async def test_idle_lane_reads_nothing_between_wake_ups(context: AppContext, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    rounds: list[float] = []
    read_lane = queue.snapshot

    async def counted_read(session: AsyncSession, lane_id: int, owner: str, window: int = 1) -> object:
        reads.append(lane_id)
        return await read_lane(session, lane_id, owner, window)

    monkeypatch.setattr(queue, "snapshot", counted_read)
    async with run_receiver() as receiver:
        site_id, _ = await _setup(context, receiver.url)
        engine, stopping, task = await _start(context)
        await _idle_after_one_event(context, site_id, engine, receiver)
        lease_once = engine.lease_once

        async def counted_round() -> set[int]:
            rounds.append(time.monotonic())
            return await lease_once()

        monkeypatch.setattr(engine, "lease_once", counted_round)
        reads.clear()
        # Twelve lease rounds of 0.1 s: past the second a lane used to sleep before reading itself again.
        await _eventually(lambda: len(rounds) >= 12)
        stopping.set()
        await task
    assert reads == []


async def test_disabling_cancels_the_request_in_flight_and_enabling_resumes(context: AppContext) -> None:
    slow = {"on": True}

    async def answer(_: Received) -> Reply:
        return Reply(204, delay=30.0 if slow["on"] else 0.0)

    async with run_receiver(answer) as receiver:
        site_id, webhook_id = await _setup(context, receiver.url)
        engine, stopping, task = await _start(context)
        await _publish(context, site_id, "A")
        await _eventually(lambda: len(receiver.received) == 1)
        async with context.store.transaction() as session:
            await webhook_service.set_enabled(session, OPERATOR, webhook_id, False, now=context.clock.now())
        # The use case wakes this process's lanes itself once the change commits: no poke.
        await _eventually(lambda: not engine.active_lanes)
        async with context.store.transaction() as session:
            lanes = await webhook_lanes.get_lanes(session, OPERATOR, webhook_id)
        slow["on"] = False
        async with context.store.transaction() as session:
            await webhook_service.set_enabled(session, OPERATOR, webhook_id, True, now=context.clock.now())
        await _eventually(lambda: len(receiver.received) == 2)
        await _eventually(lambda: engine.active_lanes != set())
        stopping.set()
        await task
    # The attempt in flight was cancelled, not ended by its deadline (10 s; the receiver answers after 30 s):
    # a cancelled attempt is not counted.
    assert [(lane.size, lane.head_attempts) for lane in lanes] == [(1, 0)]
    assert tags(receiver.bodies()) == ["A", "A"]


async def test_a_webhook_created_through_the_service_alone_has_its_lane_taken_without_waiting_for_the_lease_round(
    context: AppContext,
) -> None:
    tenant = await make_tenant(context.store, context.keys, context.clock.now())
    engine = install_webhooks(context, keys=signing_keys, poll_interval=0.02, lease_interval=3600.0)
    rounds = results_of(engine, "lease_once")
    stopping = asyncio.Event()
    task = asyncio.create_task(engine.run(stopping))
    async with run_receiver() as receiver:
        await _eventually(lambda: len(rounds) == 1)  # the first round, with no webhook yet: the next is an hour away
        await _webhook(context, tenant.site_id, receiver.url)
        await _publish(context, tenant.site_id, "A")
        await _eventually(lambda: len(receiver.received) == 1)
        stopping.set()
        await task
    assert len(rounds) == 2


async def test_health_and_metrics_report_each_lane(context: AppContext) -> None:
    async with run_receiver(lambda _r: Reply(500)) as receiver:
        site_id, webhook_id = await _setup(context, receiver.url)
        _engine, stopping, task = await _start(context)
        await _publish(context, site_id, "A")
        await _eventually(lambda: len(receiver.received) == 1)
        app = create_app(context)
        gauge = f'chargenet_webhook_queue_size{{event_type="Authorize",webhook_id="{webhook_id}"}} 1.0'
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            # The failed attempt is settled, and the gauges refreshed by a lease round, a moment after it is sent.
            deadline = time.monotonic() + 10
            while True:
                health = (await client.get("/health")).json()
                metrics = (await client.get("/metrics")).text
                lanes = [c for c in health["components"] if c["name"] == f"webhook:{webhook_id}:Authorize"]
                if (lanes and lanes[0]["headAttempts"] == 1 and gauge in metrics) or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
        stopping.set()
        await task
    [lane] = [c for c in health["components"] if c["name"] == f"webhook:{webhook_id}:Authorize"]
    assert health["status"] == "degraded"
    assert (lane["status"], lane["queueSize"], lane["headAttempts"], lane["lastError"]) == (
        "degraded",
        1,
        1,
        "http_5xx",
    )
    assert lane["lastRequestDurationMs"] is not None and lane["lastRequestDurationLevel"] == "ok"
    assert f'chargenet_webhook_failures_total{{event_type="Authorize",webhook_id="{webhook_id}"}} 1.0' in metrics
    assert gauge in metrics


async def test_lanes_of_several_webhooks_settle_together_and_each_keeps_its_order(context: AppContext) -> None:
    async with run_receiver() as first, run_receiver() as second:
        site_id, _ = await _setup(context, first.url)
        await _webhook(context, site_id, second.url)
        _engine, stopping, task = await _start(context)
        names = [f"E{n}" for n in range(20)]
        await _publish(context, site_id, *names)
        await _eventually(lambda: len(first.received) == 20 and len(second.received) == 20)
        stopping.set()
        await task
    assert tags(first.bodies()) == names and tags(second.bodies()) == names
