"""Waiting for the first of several things: a clock's sleep, an event, a stop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable


async def first_of(*waits: Awaitable[object]) -> None:
    """Return once any of `waits` is done; the others are cancelled (a sleep left running would hold its timer)."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
