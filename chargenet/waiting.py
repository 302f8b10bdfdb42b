"""Waiting for the first of several things: a clock's sleep, an event, a stop; and for an instant of a clock."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import datetime

from chargenet.clock import Clock


async def first_of(*waits: Awaitable[object]) -> None:
    """Return once any of `waits` is done; the others are cancelled (a sleep left running would hold its timer)."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


async def sleep_until(clock: Clock, due: datetime) -> None:
    """Until `due` on `clock`. What is left is reckoned when this starts to wait, not when it was asked for: a
    worker that polls a period after its last read began (time spent reading, or before the wait's task first
    ran, counts) is never put off by a clock that moved meanwhile."""
    await clock.sleep((due - clock.now()).total_seconds())
