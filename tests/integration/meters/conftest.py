from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from chargenet.meters.errors import MeterUnreachable
from chargenet.meters.readings import Reading
from chargenet.simulators import serial_bus


@dataclass(frozen=True, slots=True)
class PtyPair:
    server: str
    client: str


@pytest.fixture
def pty_pair(tmp_path: Path) -> Iterator[PtyPair]:
    """A real pseudo-terminal pair joined back to back: the meters' end and the poller's end of one RS-485 "bus"."""
    with serial_bus.running(tmp_path / "ttyS_meters", tmp_path / "ttyS_poller") as (server, client):
        yield PtyPair(server, client)


@dataclass
class RecordingSink:
    readings: list[tuple[str, Reading, datetime]] = field(default_factory=list)
    failures: list[tuple[str, MeterUnreachable, datetime]] = field(default_factory=list)

    async def on_reading(self, meter_id: str, reading: Reading, at: datetime) -> None:
        self.readings.append((meter_id, reading, at))

    async def on_failure(self, meter_id: str, failure: MeterUnreachable, at: datetime) -> None:
        self.failures.append((meter_id, failure, at))

    def polled(self) -> list[str]:
        return [m for m, _, _ in self.readings] + [m for m, _, _ in self.failures]


@pytest.fixture
async def settle() -> AsyncIterator[None]:
    yield
    # Let pymodbus's transports finish closing inside the test's loop.
    await asyncio.sleep(0.05)
