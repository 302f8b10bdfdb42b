"""Alert levels of a webhook worker's health metrics (service.md §8, decisions.md §4 "Health").

Queue size: alert above 5, critical above 100. Last request duration: alert above 500 ms, critical above
5000 ms. "Above" is strict: exactly 5 waiting events or exactly 500 ms is still ok.
"""

from __future__ import annotations

from enum import StrEnum

QUEUE_SIZE_ALERT = 5
QUEUE_SIZE_CRITICAL = 100
REQUEST_DURATION_ALERT_MS = 500.0
REQUEST_DURATION_CRITICAL_MS = 5000.0


class Level(StrEnum):
    OK = "ok"
    ALERT = "alert"
    CRITICAL = "critical"


_ORDER = {Level.OK: 0, Level.ALERT: 1, Level.CRITICAL: 2}


def queue_size_level(size: int) -> Level:
    if size > QUEUE_SIZE_CRITICAL:
        return Level.CRITICAL
    if size > QUEUE_SIZE_ALERT:
        return Level.ALERT
    return Level.OK


def request_duration_level(duration_ms: float | None) -> Level:
    if duration_ms is None:
        return Level.OK
    if duration_ms > REQUEST_DURATION_CRITICAL_MS:
        return Level.CRITICAL
    if duration_ms > REQUEST_DURATION_ALERT_MS:
        return Level.ALERT
    return Level.OK


def worst(*levels: Level) -> Level:
    return max(levels, key=_ORDER.__getitem__, default=Level.OK)
