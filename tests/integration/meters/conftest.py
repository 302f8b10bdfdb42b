from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from chargenet.meters.errors import MeterUnreachable
from chargenet.meters.readings import Reading


@dataclass(frozen=True, slots=True)
class PtyPair:
    server: str
    client: str


@pytest.fixture
def pty_pair(tmp_path: Path) -> Iterator[PtyPair]:
    """A real pseudo-terminal pair from socat: the meters' end and the poller's end of one RS-485 "bus"."""
    socat = shutil.which("socat")
    assert socat is not None, "socat is required for the RTU tests"
    server, client = tmp_path / "ttyS_meters", tmp_path / "ttyS_poller"
    process = subprocess.Popen(
        [socat, f"pty,raw,echo=0,link={server}", f"pty,raw,echo=0,link={client}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            if server.exists() and client.exists():
                break
            subprocess.run(["sleep", "0.01"], check=True)
        assert server.exists() and client.exists(), "socat did not create the pty pair"
        yield PtyPair(str(server), str(client))
    finally:
        process.terminate()
        process.wait(timeout=5)


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
