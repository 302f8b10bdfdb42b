"""`Recent`: a value computed at most once per max_age, on a manual monotonic clock."""

from __future__ import annotations

import asyncio

from chargenet.observability import log_context
from chargenet.observability.recent import Recent


class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Counter:
    def __init__(self) -> None:
        self.calls = 0
        self.gate: asyncio.Event | None = None

    async def __call__(self) -> int:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        return self.calls


async def test_a_value_younger_than_max_age_is_not_computed_again() -> None:
    ticks, compute = Ticks(), Counter()
    recent = Recent(compute, max_age=2.0, monotonic=ticks)
    assert await recent.get() == 1
    ticks.now += 2.0
    assert await recent.get() == 1
    assert compute.calls == 1


async def test_a_value_older_than_max_age_is_computed_again() -> None:
    ticks, compute = Ticks(), Counter()
    recent = Recent(compute, max_age=2.0, monotonic=ticks)
    await recent.get()
    ticks.now += 2.1
    assert await recent.get() == 2


async def test_callers_at_the_same_moment_share_one_computation() -> None:
    compute = Counter()
    compute.gate = asyncio.Event()
    recent = Recent(compute, max_age=0.0, monotonic=Ticks())
    waiting = [asyncio.ensure_future(recent.get()) for _ in range(5)]
    await asyncio.sleep(0)
    compute.gate.set()
    assert await asyncio.gather(*waiting) == [1] * 5
    assert compute.calls == 1


async def test_refresh_computes_even_when_the_value_is_fresh() -> None:
    compute = Counter()
    recent = Recent(compute, max_age=60.0, monotonic=Ticks())
    await recent.get()
    assert await recent.refresh() == 2
    assert await recent.get() == 2


async def test_a_caller_that_gives_up_does_not_cancel_the_computation_for_the_others() -> None:
    compute = Counter()
    compute.gate = asyncio.Event()
    recent = Recent(compute, max_age=0.0, monotonic=Ticks())
    impatient = asyncio.ensure_future(recent.get())
    patient = asyncio.ensure_future(recent.get())
    await asyncio.sleep(0)
    impatient.cancel()
    compute.gate.set()
    assert await patient == 1


async def test_the_shared_computation_carries_no_callers_request_id() -> None:
    seen: list[str | None] = []

    async def compute() -> int:
        seen.append(log_context.request_id.get())
        return 1

    token = log_context.request_id.set("req-1")
    try:
        await Recent(compute, max_age=0.0, monotonic=Ticks()).get()
    finally:
        log_context.request_id.reset(token)
    assert seen == [None]
