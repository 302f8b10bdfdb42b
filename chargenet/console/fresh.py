"""Figures a page computes from many rows, reused while they are fresh: the overview counts every station of a
company, which with 10,000 stations costs more store time than every other part of a page together.

A value is reused for `seconds` of the injected clock. After a commit of this process that published events (a
status, a session started or stopped), values computed before it are reused only while younger than `settle`
seconds: what this process sees change shows within a second, and a network whose stations report all the time
costs one count a second per company, not one per view. What other processes commit shows within `seconds`.
Browsers asking while a value is being computed wait for that one computation instead of starting their own.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from chargenet.clock import Clock
from chargenet.outbox.signal import outbox_committed

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class _Entry(Generic[V]):
    value: V
    at: datetime


class Fresh(Generic[V]):
    def __init__(self, clock: Clock, seconds: float, *, settle: float = 1.0, size: int = 256) -> None:
        self.clock = clock
        self.lifetime = timedelta(seconds=seconds)
        self.settle = timedelta(seconds=settle)
        self._size = size
        self._entries: OrderedDict[str, _Entry[V]] = OrderedDict()
        self._computing: dict[str, asyncio.Lock] = {}
        self._committed = outbox_committed()
        self._last_commit: datetime | None = None  # when this process's last event commit was noticed

    async def get(self, key: str, compute: Callable[[], Awaitable[V]]) -> tuple[V, datetime]:
        """The value of `key` and when it was computed: the kept one while fresh, else `compute()`'s."""
        found = self._fresh(key)
        if found is not None:
            return found.value, found.at
        lock = self._computing.setdefault(key, asyncio.Lock())
        async with lock:
            found = self._fresh(key)  # computed by another browser while this one waited
            if found is not None:
                return found.value, found.at
            at = self.clock.now()
            value = await compute()
            self._entries[key] = _Entry(value, at)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                dropped, _ = self._entries.popitem(last=False)
                self._computing.pop(dropped, None)
            return value, at

    def _fresh(self, key: str) -> _Entry[V] | None:
        now = self.clock.now()
        if self._committed.is_set():
            self._committed.clear()
            self._last_commit = now
        found = self._entries.get(key)
        if found is None or now - found.at >= self.lifetime:
            return None
        if self._last_commit is not None and found.at < self._last_commit and now - found.at >= self.settle:
            return None
        return found
