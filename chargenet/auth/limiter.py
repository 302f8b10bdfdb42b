"""Brute-force limits on client authentication (sans-IO), decisions.md §4.

Rule 1: more than MAX_PER_CLIENT failures for one client id within WINDOW seconds, or MAX_PER_ADDRESS from
        one address, refuse further attempts from that id or address (429) until the oldest counted failure
        leaves the window; `Retry-After` says when.
Rule 2: a refused attempt is not itself counted, so a client that waits the announced time gets through.
Rule 3: memory is bounded: at most MAX_TRACKED ids and addresses each; the stalest are forgotten first.

The counts live in one process; with several processes behind a balancer each enforces its own limits.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from datetime import datetime

MAX_PER_CLIENT = 10
MAX_PER_ADDRESS = 50
WINDOW = 60.0
MAX_TRACKED = 50_000


class _Window:
    def __init__(self, limit: int, window: float, max_tracked: int) -> None:
        self._limit = limit
        self._window = window
        self._max_tracked = max_tracked
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _live(self, key: str, now: float) -> deque[float] | None:
        failures = self._failures.get(key)
        if failures is None:
            return None
        while failures and failures[0] <= now - self._window:
            failures.popleft()
        if not failures:
            del self._failures[key]
            return None
        return failures

    def retry_after(self, key: str, now: float) -> int | None:
        failures = self._live(key, now)
        if failures is None or len(failures) < self._limit:
            return None
        # The request is allowed again once enough failures have aged out to drop below the limit.
        release = failures[len(failures) - self._limit] + self._window
        return max(1, math.ceil(release - now))

    def record(self, key: str, now: float) -> None:
        failures = self._live(key, now)
        if failures is None:
            failures = deque(maxlen=self._limit)
            self._failures[key] = failures
            while len(self._failures) > self._max_tracked:
                self._failures.popitem(last=False)
        else:
            self._failures.move_to_end(key)
        failures.append(now)


class FailureLimiter:
    def __init__(
        self,
        *,
        max_per_client: int = MAX_PER_CLIENT,
        max_per_address: int = MAX_PER_ADDRESS,
        window: float = WINDOW,
        max_tracked: int = MAX_TRACKED,
    ) -> None:
        self._clients = _Window(max_per_client, window, max_tracked)
        self._addresses = _Window(max_per_address, window, max_tracked)

    def retry_after(self, *, client_id: str | None, address: str | None, now: datetime) -> int | None:
        """Seconds until an attempt from this id and address may be tried, or None when it may go ahead."""
        t = now.timestamp()
        waits = [
            w
            for w in (
                self._clients.retry_after(client_id, t) if client_id else None,
                self._addresses.retry_after(address, t) if address else None,
            )
            if w is not None
        ]
        return max(waits) if waits else None

    def record_failure(self, *, client_id: str | None, address: str | None, now: datetime) -> None:
        t = now.timestamp()
        if client_id:
            self._clients.record(client_id, t)
        if address:
            self._addresses.record(address, t)
