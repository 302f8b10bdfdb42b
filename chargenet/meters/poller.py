"""The bus poller: one loop per TCP endpoint or RTU bus, reading due meters in turn and reporting each result.

`run_once` polls the meters the `BusScheduler` says are due, one after another on the bus's link, and hands
every reading or failure to a `PollSink` (the session service: detector, store, outbox). `run` repeats it,
sleeping on the injected clock until the next meter is due. Counters for `/health` and `/metrics` are kept per
meter and per bus.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from chargenet.clock import Clock
from chargenet.meters.bus import BackoffPolicy, BusScheduler, BusSettings
from chargenet.meters.errors import MeterUnreachable, ReadFailure
from chargenet.meters.profiles import Profile
from chargenet.meters.readings import Reading

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PollTarget:
    meter_id: str
    profile: Profile
    unit_id: int
    poll_interval_s: float = 5.0


class MeterLink(Protocol):
    """A bus or endpoint that can read a meter (`ModbusLink`)."""

    async def read(self, meter_id: str, profile: Profile, unit_id: int) -> Reading: ...

    def close(self) -> None: ...


class PollSink(Protocol):
    async def on_reading(self, meter_id: str, reading: Reading, at: datetime) -> None: ...

    async def on_failure(self, meter_id: str, failure: MeterUnreachable, at: datetime) -> None: ...


@dataclass(slots=True)
class MeterHealth:
    reads: int = 0
    errors: int = 0
    timeouts: int = 0
    crc_errors: int = 0
    last_good_at: datetime | None = None
    last_answer_at: datetime | None = None  # a good reading, or any reply of the meter's own (an exception too)
    last_error: str | None = None
    dead: bool = False
    failures: dict[ReadFailure, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "reads": self.reads,
            "errors": self.errors,
            "timeouts": self.timeouts,
            "crcErrors": self.crc_errors,
            "lastGoodReadingAt": self.last_good_at.isoformat() if self.last_good_at else None,
            "lastError": self.last_error,
            "dead": self.dead,
        }


@dataclass(slots=True)
class BusHealth:
    reads: int = 0
    errors: int = 0
    cycles: int = 0
    last_cycle_s: float = 0.0
    meters: dict[str, MeterHealth] = field(default_factory=dict)


class BusPoller:
    def __init__(
        self,
        key: str,
        link: MeterLink,
        sink: PollSink,
        clock: Clock,
        *,
        settings: BusSettings,
        policy: BackoffPolicy | None = None,
    ) -> None:
        self.key = key
        self.link = link
        self.settings = settings
        self._sink = sink
        self._clock = clock
        self._scheduler = BusScheduler(policy)
        self._targets: dict[str, PollTarget] = {}
        self.health = BusHealth()

    @property
    def targets(self) -> dict[str, PollTarget]:
        return dict(self._targets)

    def set_targets(self, targets: Iterable[PollTarget]) -> None:
        """Replace the meters on this bus; unchanged meters keep their schedule."""
        now = self._clock.now()
        wanted = {target.meter_id: target for target in targets}
        for meter_id in set(self._targets) - set(wanted):
            self._scheduler.remove(meter_id)
            self.health.meters.pop(meter_id, None)
        for meter_id, target in wanted.items():
            self._scheduler.add(meter_id, target.poll_interval_s, now)
            self.health.meters.setdefault(meter_id, MeterHealth())
        self._targets = wanted

    async def run_once(self) -> int:
        """Poll every due meter once; returns how many were polled."""
        due = self._scheduler.due(self._clock.now())
        started = time.perf_counter()
        for meter_id in due:
            target = self._targets[meter_id]
            health = self.health.meters[meter_id]
            self.health.reads += 1
            health.reads += 1
            try:
                reading = await self.link.read(meter_id, target.profile, target.unit_id)
            except MeterUnreachable as failure:
                now = self._clock.now()
                self._scheduler.record_failure(meter_id, now)
                self.health.errors += 1
                health.errors += 1
                health.failures[failure.failure] = health.failures.get(failure.failure, 0) + 1
                if failure.failure is ReadFailure.TIMEOUT:
                    health.timeouts += 1
                elif failure.failure is ReadFailure.CRC:
                    health.crc_errors += 1
                elif failure.failure in (ReadFailure.EXCEPTION, ReadFailure.INVALID_REPLY):
                    health.last_answer_at = now
                health.last_error = failure.failure.value  # its kind: /health is public, the message names the bus
                health.dead = self._scheduler.is_dead(meter_id)
                await self._deliver(self._sink.on_failure(meter_id, failure, now), meter_id)
                continue
            now = self._clock.now()
            self._scheduler.record_success(meter_id, now)
            health.last_good_at = health.last_answer_at = now
            health.dead = False
            await self._deliver(self._sink.on_reading(meter_id, reading, now), meter_id)
        if due:
            self.health.cycles += 1
            self.health.last_cycle_s = time.perf_counter() - started
        return len(due)

    async def _deliver(self, delivery: Awaitable[None], meter_id: str) -> None:
        # One meter's trouble with the store must not stop the rest of the bus; its detector state did not move,
        # so the next reading decides again.
        try:
            await delivery
        except Exception:
            log.exception("meter %s: poll result could not be stored", meter_id)

    async def run(self, stopping: asyncio.Event) -> None:
        """Poll until `stopping` is set; a sink that raises is logged and the loop goes on."""
        while not stopping.is_set():
            try:
                await self.run_once()
            except Exception:
                log.exception("meter bus %s: poll cycle failed", self.key)
                await self._clock.sleep(1.0)
            next_due = self._scheduler.next_due()
            wait = 1.0 if next_due is None else (next_due - self._clock.now()).total_seconds()
            if wait > 0:
                await self._sleep_or_stop(wait, stopping)
            else:
                await asyncio.sleep(0)

    async def _sleep_or_stop(self, seconds: float, stopping: asyncio.Event) -> None:
        sleeper = asyncio.ensure_future(self._clock.sleep(seconds))
        waiter = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, waiter):
                task.cancel()
