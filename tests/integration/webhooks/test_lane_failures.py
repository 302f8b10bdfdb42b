"""A lane step that fails for a reason of our own (keys, credentials, the database), not the receiver's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from chargenet.clock import ManualClock
from chargenet.store.db import Store
from chargenet.webhooks.engine import DeliveryEngine
from chargenet.webhooks.sender import WebhookSigningKeys
from tests.integration.webhooks.harness import Harness, make_harness, tags
from tests.support.keys import signing_keys
from tests.support.receiver import run_receiver


class FlakyKeys:
    """A key provider that raises while `broken`, noting when it was asked."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.broken = True
        self.asked_at: list[datetime] = []

    def __call__(self) -> WebhookSigningKeys:
        self.asked_at.append(self.clock.now())
        if self.broken:
            raise RuntimeError("key files unreadable")
        return signing_keys()


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


async def lane_tasks_engine(harness: Harness, keys: FlakyKeys) -> DeliveryEngine:
    """An engine signing with `keys` that runs each lane as a task of its own, has filled its lanes from the outbox
    and then taken the lease (which starts the lanes' tasks)."""
    engine = harness.engine(keys=keys)
    engine.spawn_lane_tasks = True
    await engine.fill_once()
    await engine.lease_once()
    return engine


@pytest.mark.expected_traceback("RuntimeError: key files unreadable")
async def test_lane_whose_step_keeps_failing_tries_again_only_every_retry_interval(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    keys = FlakyKeys(clock)
    start = clock.now()
    async with run_receiver() as receiver:
        await harness.webhook(receiver.url)
        await harness.publish("A")
        engine = await lane_tasks_engine(harness, keys)
        await _until(lambda: len(keys.asked_at) == 1 and clock.sleepers == 1)
        clock.advance(engine.poll_interval)
        await _until(lambda: len(keys.asked_at) == 2 and clock.sleepers == 1)
        clock.advance(9.9)
        await asyncio.sleep(0.05)
        clock.advance(0.1)
        await _until(lambda: len(keys.asked_at) == 3 and clock.sleepers == 1)
        await engine.shutdown()
    assert [(at - start).total_seconds() for at in keys.asked_at] == [0, 0.25, 10.25]


@pytest.mark.expected_traceback("RuntimeError: key files unreadable")
async def test_a_successful_step_ends_the_lanes_back_off(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    harness = await make_harness(store, clock, tmp_path)
    keys = FlakyKeys(clock)
    async with run_receiver() as receiver:
        await harness.webhook(receiver.url)
        await harness.publish("A")
        engine = await lane_tasks_engine(harness, keys)
        await _until(lambda: clock.sleepers == 1)
        clock.advance(engine.poll_interval)
        await _until(lambda: len(keys.asked_at) == 2 and clock.sleepers == 1)
        keys.broken = False
        clock.advance(10)
        await _until(lambda: len(receiver.received) == 1)
        keys.broken = True
        await harness.publish("B")
        await engine.fill_once()
        await _until(lambda: len(keys.asked_at) == 4 and clock.sleepers == 1)
        failed_at = clock.now()
        clock.advance(engine.poll_interval)
        await _until(lambda: len(keys.asked_at) == 5)
        await engine.shutdown()
    assert tags(receiver.bodies()) == ["A"]
    assert (keys.asked_at[-1] - failed_at).total_seconds() == engine.poll_interval
