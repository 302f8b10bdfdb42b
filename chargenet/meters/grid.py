"""Grid meters on the buses: what to poll, where each reading goes, and what a site's circuits measure.

A grid meter (`grid_meters`, role `grid`) is polled by the bus poller of its TCP endpoint or RTU bus, beside any
session meters on the same bus and under the same bus lease (`runtime.MeterPolling`), every `poll_interval_s` (1 s
by default). Its readings do not go to a session detector: `GridReadings` judges each one (`domain.grid_meters`),
stores it as the meter's last answer (`grid_meter_readings`, one row a meter) and pokes the site's power round
(`power_changes`). A failed poll stores nothing: a meter is silent when its last answer is too old.

The reading is stored rather than handed over in memory because the allocator's rounds of a site may run in
another process than the one polling its meter's bus (on PostgreSQL each has its own lease), and `GET /power` of
any process shows it. `circuit_grids` reads it back for a site: per metered circuit, what the meter tells, what
the sessions below draw, and the other load the allocator takes off the limit.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain import grid_meters as grid
from chargenet.domain.circuits import Phase, path_to_root
from chargenet.meters.bus import Transport
from chargenet.meters.errors import MeterUnreachable
from chargenet.meters.profiles import Profile, get_profile
from chargenet.meters.readings import Reading
from chargenet.meters.spec import parse_transport
from chargenet.power_changes import site_power_changed
from chargenet.store.db import Store
from chargenet.store.models import GridMeter, GridMeterReading, MeterSample

log = logging.getLogger(__name__)

VOLTS = 230.0
"""The phase voltage a station's reported power is turned into current with."""


@dataclass(frozen=True, slots=True)
class GridSpec:
    meter_id: str
    site_id: str
    profile: Profile
    unit_id: int
    transport: Transport
    poll_interval_s: float

    @property
    def bus_key(self) -> str:
        return self.transport.key


def grid_spec_of(row: GridMeter) -> GridSpec:
    """A stored grid meter's configuration; InvalidInput naming the setting when the row is malformed."""
    if row.transport == "tcp":
        transport = parse_transport(tcp=f"[{row.tcp_host}]:{row.tcp_port}", rtu=None)
    else:
        transport = parse_transport(
            tcp=None, rtu=row.rtu_device or "", baud=row.baudrate, parity=row.parity, stopbits=row.stopbits
        )
    return GridSpec(row.id, row.site_id, get_profile(row.profile), row.unit_id, transport, row.poll_interval_s)


class GridReadings:
    """The poll sink of grid meters: each answer stored as the meter's last, and its site's round poked."""

    def __init__(self, store: Store, *, max_reading_a: float = grid.MAX_READING_A) -> None:
        self._store = store
        self._max_reading_a = max_reading_a
        self.meters: dict[str, GridSpec] = {}

    async def on_reading(self, meter_id: str, reading: Reading, at: datetime) -> None:
        spec = self.meters.get(meter_id)
        if spec is None:
            return
        currents = reading.currents_a
        if reading.sentinels:
            currents = None  # a "no value" answer
        fault = grid.judge(currents, self._max_reading_a)
        phases = grid.by_phase(currents) if fault is None and currents else {}
        async with self._store.transaction() as session:
            row = await session.get(GridMeterReading, meter_id)
            if row is None:
                row = GridMeterReading(meter_id=meter_id)
                session.add(row)
            row.l1_a, row.l2_a, row.l3_a = phases.get("L1"), phases.get("L2"), phases.get("L3")
            row.fault = fault.value if fault else None
            row.read_at = at
            site_power_changed(session, spec.site_id)

    async def on_failure(self, meter_id: str, failure: MeterUnreachable, at: datetime) -> None:
        # Nothing stored: the meter falls silent when its last answer grows old.
        log.debug("grid meter %s did not answer: %s", meter_id, failure.failure.value)


# Reading a site's grid meters back ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CircuitGrid:
    """What a circuit's meter tells the allocator (None without a meter), and what the sessions below the circuit
    draw, per phase."""

    status: grid.MeterStatus | None
    stations_a: dict[Phase, float]
    other_load_a: dict[Phase, float] | None  # None without a meter, or while it tells nothing


@dataclass(frozen=True, slots=True)
class SessionDraw:
    transaction_id: int
    circuit_id: str  # its station's
    phases: tuple[Phase, ...]
    held_a: float | None = None  # the allowance its station last accepted
    held_since: datetime | None = None  # when it was sent


@dataclass(frozen=True, slots=True)
class SessionDraws:
    """Per session (edge transaction id), per phase: what it draws as far as can be told
    (`domain.grid_meters.draw_estimate`), and what it is known to draw (`known_draw`), which is taken off its
    circuits' readings."""

    estimated: dict[int, float]
    known: dict[int, float]


async def session_draws(session: AsyncSession, sessions: Sequence[SessionDraw]) -> SessionDraws:
    """Each session's draw per phase, from the power in its station's last meter values and the allowance its
    station holds."""
    ids = [entry.transaction_id for entry in sessions]
    if not ids:
        return SessionDraws({}, {})
    last = (
        select(MeterSample.transaction_id, func.max(MeterSample.at).label("at"))
        .where(MeterSample.transaction_id.in_(ids))
        .group_by(MeterSample.transaction_id)
        .subquery()
    )
    rows = await session.execute(
        select(MeterSample.transaction_id, MeterSample.power_w, MeterSample.at).join(
            last, (last.c.transaction_id == MeterSample.transaction_id) & (last.c.at == MeterSample.at)
        )
    )
    reported = {int(transaction_id): (power_w, at) for transaction_id, power_w, at in rows}
    draws = SessionDraws({}, {})
    for entry in sessions:
        power_w, at = reported.get(entry.transaction_id, (None, None))
        reported_a = grid.draw_amps(power_w, len(entry.phases), VOLTS)
        amps = grid.draw_estimate(reported_a, at, entry.held_a, entry.held_since)
        if amps is not None:
            draws.estimated[entry.transaction_id] = amps
        draws.known[entry.transaction_id] = grid.known_draw(reported_a, entry.held_a)
    return draws


async def circuit_grids(
    session: AsyncSession,
    parents: Mapping[str, str | None],
    meters: Mapping[str, str],
    sessions: Iterable[SessionDraw],
    draws: Mapping[int, float],
    now: datetime,
    silent_after: timedelta = grid.SILENT_AFTER,
) -> dict[str, CircuitGrid]:
    """Per circuit (`parents`: circuit id -> its parent's; `meters`: circuit id -> its meter's id), what its meter
    tells and what the sessions below it are known to draw (`SessionDraws.known`)."""
    below: dict[str, list[grid.Draw]] = {circuit_id: [] for circuit_id in parents}
    for entry in sessions:
        amps = draws.get(entry.transaction_id)
        if amps is not None:
            for circuit_id in path_to_root(entry.circuit_id, parents):
                below[circuit_id].append(grid.Draw(entry.phases, amps))
    readings = {}
    if meters:
        for row in await session.scalars(
            select(GridMeterReading).where(GridMeterReading.meter_id.in_(sorted(meters.values())))
        ):
            phases: tuple[tuple[Phase, float | None], ...] = (("L1", row.l1_a), ("L2", row.l2_a), ("L3", row.l3_a))
            currents = {phase: amps for phase, amps in phases if amps is not None}
            fault = grid.MeterFault(row.fault) if row.fault else None
            readings[row.meter_id] = grid.GridReading(row.read_at, currents, fault)
    found: dict[str, CircuitGrid] = {}
    for circuit_id, draws_below in below.items():
        meter_id = meters.get(circuit_id)
        status = other = None
        if meter_id is not None:
            status = grid.status(readings.get(meter_id), now, silent_after)
            if status.measured_a is not None:
                other = grid.other_load(status.measured_a, draws_below)
        found[circuit_id] = CircuitGrid(status, grid.stations_total(draws_below), other)
    return found
