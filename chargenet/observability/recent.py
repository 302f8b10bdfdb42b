"""A value computed at most once per `max_age` seconds, however many callers ask for it.

`/health` and `/health/ready` are unauthenticated: without this, every caller would cost the store a query.
Callers that find the value stale while a computation is under way wait for that one instead of starting their
own, so even with `max_age` 0 at most one computation runs at a time.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from chargenet.clock import Clock
from chargenet.workers import LoopWorker

T = TypeVar("T")


class Recent(Generic[T]):
    def __init__(
        self,
        compute: Callable[[], Awaitable[T]],
        *,
        max_age: float,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._compute = compute
        self._max_age = max_age
        self._monotonic = monotonic
        self._value: tuple[float, T] | None = None
        self._running: asyncio.Future[T] | None = None

    async def get(self) -> T:
        """The last value if it is at most `max_age` seconds old, else a new one."""
        if self._value is not None and self._monotonic() - self._value[0] <= self._max_age:
            return self._value[1]
        return await self.refresh()

    async def refresh(self) -> T:
        """A new value; joins the computation under way if there is one."""
        if self._running is None:
            # In a context of its own: the value is shared, so what it logs belongs to no caller's request.
            self._running = asyncio.get_running_loop().create_task(self._run(), context=contextvars.Context())
        # Shielded: a caller that gives up (its client went away) does not cancel the others' computation.
        return await asyncio.shield(self._running)

    async def _run(self) -> T:
        try:
            started = self._monotonic()
            value = await self._compute()
            self._value = (started, value)
            return value
        finally:
            self._running = None


class RecentRefresher(LoopWorker):
    """Refreshes a `Recent` value every `interval`, so that callers find it fresh instead of waiting for it."""

    def __init__(self, name: str, recent: Recent[Any], clock: Clock, interval: float) -> None:
        super().__init__(clock, interval)
        self.name = name
        self.recent = recent

    async def run_once(self) -> None:
        await self.recent.refresh()
