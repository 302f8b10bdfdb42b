from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from chargenet.clock import ManualClock
from chargenet.keys import KeyStore
from chargenet.meters.errors import MeterUnreachable
from chargenet.meters.profiles import get_profile
from chargenet.meters.readings import Reading
from chargenet.simulators import serial_bus
from chargenet.simulators.meter import MeterServer, SimulatedMeter
from chargenet.store.db import Store
from tests.factories import Tenant, make_tenant


@dataclass(frozen=True, slots=True)
class PtyPair:
    server: str
    client: str


@pytest.fixture
def pty_pair(tmp_path: Path) -> Iterator[PtyPair]:
    """A real pseudo-terminal pair joined back to back: the meters' end and the poller's end of one RS-485 "bus"."""
    with serial_bus.running(tmp_path / "ttyS_meters", tmp_path / "ttyS_poller") as (server, client):
        yield PtyPair(server, client)


@pytest.fixture
async def tenant(store: Store, clock: ManualClock, tmp_path: Path) -> Tenant:
    return await make_tenant(store, KeyStore(tmp_path / "keys"), clock.now())


@pytest.fixture
async def meter(clock: ManualClock) -> AsyncIterator[tuple[SimulatedMeter, MeterServer]]:
    """An SDM630 at unit 1, its counter at 1000 kWh, on pymodbus's real TCP server."""
    simulated = SimulatedMeter(get_profile("sdm630"), unit_id=1, energy_wh=1_000_000)
    simulated.advance(clock.now())
    server = await MeterServer.tcp([simulated], clock)
    yield simulated, server
    await server.stop()


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
