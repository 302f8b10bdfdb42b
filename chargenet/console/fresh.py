"""Figures a page computes from many rows, reused while they are fresh: the overview counts every station of a
company, which with 10,000 stations costs more store time than every other part of a page together.

A value is reused for `seconds` of the injected clock, and dropped at once after any commit of this process
that published events (a status, a session started or stopped), so what this process sees change shows on the
next view; what other processes commit shows within `seconds`. Browsers asking while a value is being computed
wait for that one computation instead of starting their own.
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
    def __init__(self, clock: Clock, seconds: float, *, size: int = 256) -> None:
        self.clock = clock
        self.lifetime = timedelta(seconds=seconds)
        self._size = size
        self._entries: OrderedDict[str, _Entry[V]] = OrderedDict()
        self._computing: dict[str, asyncio.Lock] = {}
        self._committed = outbox_committed()
        self._generation = 0  # counts the commits seen: a value computed across one is not kept

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
            at, generation = self.clock.now(), self._generation
            value = await compute()
            self._seen_commits()
            if generation == self._generation:
                self._entries[key] = _Entry(value, at)
                self._entries.move_to_end(key)
                while len(self._entries) > self._size:
                    dropped, _ = self._entries.popitem(last=False)
                    self._computing.pop(dropped, None)
            return value, at

    def _seen_commits(self) -> None:
        if self._committed.is_set():
            self._committed.clear()
            self._entries.clear()
            self._generation += 1

    def _fresh(self, key: str) -> _Entry[V] | None:
        self._seen_commits()
        found = self._entries.get(key)
        if found is None or self.clock.now() - found.at >= self.lifetime:
            return None
        return found
