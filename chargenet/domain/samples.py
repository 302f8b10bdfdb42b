"""Meter-value samples of a session (its energy over time) and how many of them are kept.

A meter polled every second, or a station configured to send MeterValues every few seconds, would store
thousands of rows a session; a chart of a session needs a point every half minute at most. `Thinning` keeps
at most one sample per `SPACING` per session (by the sample's own time, so values a station sends late, after
a reconnect, are thinned alike) and forgets the oldest sessions beyond `MAX_SESSIONS`: at worst a forgotten
session keeps one sample more.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

SPACING = timedelta(seconds=30)
MAX_SESSIONS = 50_000


@dataclass(frozen=True, slots=True)
class Sample:
    transaction_id: int
    station_id: str
    at: datetime
    energy_wh: int
    power_w: float | None = None

    def row(self) -> dict[str, object]:
        return {
            "transaction_id": self.transaction_id,
            "station_id": self.station_id,
            "at": self.at,
            "energy_wh": self.energy_wh,
            "power_w": self.power_w,
        }


class Thinning:
    def __init__(self, spacing: timedelta = SPACING, max_sessions: int = MAX_SESSIONS) -> None:
        self._spacing = spacing
        self._max_sessions = max_sessions
        self._kept: dict[int, datetime] = {}  # session -> time of its last kept sample, least recent first

    def keep(self, transaction_id: int, at: datetime) -> bool:
        """Whether a sample of this session at `at` is kept (and if so, remembered as its last)."""
        last = self._kept.pop(transaction_id, None)
        if last is not None and abs(at - last) < self._spacing:
            self._kept[transaction_id] = last
            return False
        if last is None and len(self._kept) >= self._max_sessions:
            del self._kept[next(iter(self._kept))]
        self._kept[transaction_id] = at
        return True

    def forget(self, transaction_id: int) -> None:
        self._kept.pop(transaction_id, None)
