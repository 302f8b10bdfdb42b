"""Time as a parameter.

Every retry, timeout and expiry in chargenet reads a `Clock` handed to it, so tests drive time
with `ManualClock` instead of sleeping. Instants are always timezone-aware UTC datetimes.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current instant, timezone-aware, in UTC."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait until `seconds` have passed on this clock."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class ManualClock:
    """A clock that moves only when told to; sleepers wake when `advance` passes their deadline."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start")
        self._sleepers: list[tuple[datetime, asyncio.Future[None]]] = []

    def now(self) -> datetime:
        return self._now

    def set(self, instant: datetime) -> None:
        self._now = instant.astimezone(UTC)
        self._wake()

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)
        self._wake()

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._now + timedelta(seconds=seconds), future))
        await future

    @property
    def sleepers(self) -> int:
        return sum(1 for _, f in self._sleepers if not f.done())

    def _wake(self) -> None:
        remaining = []
        for deadline, future in self._sleepers:
            if future.done():
                continue
            if deadline <= self._now:
                future.set_result(None)
            else:
                remaining.append((deadline, future))
        self._sleepers = remaining
