"""What every log line says about the work it was written for: the HTTP request's id, the station's id.

The ids live in context variables, set where that work begins (the access log middleware for a request, the
OCPP endpoint for a station's connection), so every line logged beneath, by any module and in any task started
from there, carries them without each call passing them on. `ContextFilter` on the root handler copies them onto
each record; a line that names its own `station` in its fields keeps that one.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar

request_id: ContextVar[str | None] = ContextVar("request_id", default=None)
station_id: ContextVar[str | None] = ContextVar("station_id", default=None)


@contextlib.contextmanager
def station(identifier: str) -> Iterator[None]:
    """Every line logged inside the block, and in the tasks started from it, names the station."""
    token = station_id.set(identifier)
    try:
        yield
    finally:
        station_id.reset(token)


class ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        current_request = request_id.get()
        if current_request is not None:
            record.request_id = current_request
        current_station = station_id.get()
        if current_station is not None:
            record.station = current_station
        return True
