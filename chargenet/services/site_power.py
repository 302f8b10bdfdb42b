"""A site's power as the allocator shares it: `GET /sites/{siteId}/power` (decisions.md "Site power"), read with
`sites:read`.

The round is computed from what the store holds: the circuits, where each station hangs, the transactions in
progress with the allowances the edge's last round stored for them, which stations are connected and how each
answered its profiles; so a session is shown what its station holds (an increase the edge holds back is not shown
before it is sent). A circuit's measured load is its grid meter's last stored reading (`meters/grid.py`; a meter
silent past `silent_after` falls back to the limit); each session's demand is still taken as
`store.allowances.DEFAULT_MAX_CURRENT_A`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain import grid_meters, power
from chargenet.domain.circuits import Phase, parse_phases, phases_text
from chargenet.domain.scopes import Scope
from chargenet.meters.grid import SessionDraw, circuit_grids, session_draws
from chargenet.services.callers import Caller
from chargenet.services.reach import reachable_site
from chargenet.services.views import Instant, View
from chargenet.store.allowances import UNLIMITED_ANSWERS, allocator_session, open_transactions
from chargenet.store.models import (
    Circuit,
    SitePowerSample,
    Station,
    StationCircuit,
    StationPresence,
    StationProfileAnswer,
)

# A station that was never connected: as if offline since long ago, so it counts at its safe default.
_NEVER = datetime(2000, 1, 1, tzinfo=UTC)


class CircuitPower(View):
    id: str
    name: str
    parent_id: str | None
    limit_amps: float
    margin_amps: float
    meter_id: str | None
    measured: dict[str, float] | None  # per phase, from the circuit's meter; null without a reading
    meter_silent: bool  # its meter tells nothing: the circuit falls back to its limit
    meter_fault: str | None  # why: silent, not-a-number, negative, above-bound, no-currents
    stations_draw: dict[str, float]  # per phase: what the sessions below the circuit draw, added up
    other_load: dict[str, float] | None  # per phase: measured less the stations' draw
    available: dict[str, float]  # per phase: limit less margin and measured other load
    allocated: dict[str, float]  # per phase: the allowances below the circuit, added up


class SessionPower(View):
    transaction_id: int
    station_id: str
    charge_point_id: str
    connector_id: int
    phases: str
    allowance_amps: float
    draw_amps: float | None
    paused: bool
    paused_reason: str | None
    station_online: bool


class SitePowerView(View):
    site_id: str
    at: Instant
    circuits: list[CircuitPower]
    sessions: list[SessionPower]
    unplaced_stations: list[str]  # stations of the site on no circuit: not limited by the allocator


class PowerSample(View):
    at: Instant
    limit_amps: float
    measured_amps: float | None  # the largest phase; null while the meter told nothing
    stations_amps: float  # the largest phase


class CircuitHistory(View):
    circuit_id: str
    name: str
    samples: list[PowerSample]


class SitePowerHistoryView(View):
    site_id: str
    since: Instant
    circuits: list[CircuitHistory]


async def site_power_history(
    session: AsyncSession, caller: Caller, site_id: str, *, since: datetime
) -> SitePowerHistoryView:
    """Each circuit's limit, measured load and stations' draw since `since`, as the rounds kept them (one a minute)."""
    await reachable_site(session, caller, Scope.SITES_READ, site_id)
    circuits = list(await session.scalars(select(Circuit).where(Circuit.site_id == site_id).order_by(Circuit.id)))
    samples: dict[str, list[PowerSample]] = {row.id: [] for row in circuits}
    for row in await session.scalars(
        select(SitePowerSample)
        .where(SitePowerSample.site_id == site_id, SitePowerSample.at >= since)
        .order_by(SitePowerSample.at)
    ):
        if row.circuit_id in samples:
            samples[row.circuit_id].append(
                PowerSample(
                    at=row.at, limit_amps=row.limit_a, measured_amps=row.measured_a, stations_amps=row.stations_a
                )
            )
    return SitePowerHistoryView(
        site_id=site_id,
        since=since,
        circuits=[CircuitHistory(circuit_id=row.id, name=row.name, samples=samples[row.id]) for row in circuits],
    )


async def site_power(
    session: AsyncSession,
    caller: Caller,
    site_id: str,
    *,
    now: datetime,
    silent_after: timedelta = grid_meters.SILENT_AFTER,
) -> SitePowerView:
    await reachable_site(session, caller, Scope.SITES_READ, site_id)
    circuit_rows = list(await session.scalars(select(Circuit).where(Circuit.site_id == site_id).order_by(Circuit.id)))
    placed = (
        await session.execute(
            select(Station, StationCircuit, StationPresence, StationProfileAnswer.answer)
            .outerjoin(StationCircuit, StationCircuit.station_id == Station.id)
            .outerjoin(StationPresence, StationPresence.station_id == Station.id)
            .outerjoin(StationProfileAnswer, StationProfileAnswer.station_id == Station.id)
            .where(Station.site_id == site_id)
            .order_by(Station.id)
        )
    ).all()
    stations: list[power.Station] = []
    unplaced: list[str] = []
    for station, placement, presence, answer in placed:
        if placement is None:
            unplaced.append(station.id)
            continue
        offline_since = None
        if presence is None or not presence.connected:
            offline_since = (presence.disconnected_at if presence else None) or _NEVER
        stations.append(
            power.Station(
                station.id,
                placement.circuit_id,
                parse_phases(placement.phases),
                connectors=station.charge_points * (station.connectors_per_charge_point or 1),
                priority=placement.priority,
                offline_since=offline_since,
                unlimited=answer in UNLIMITED_ANSWERS,
            )
        )
    on_circuits = {station.id for station in stations}
    rows = await open_transactions(session, site_id, on_circuits)
    transactions = [row for row, _ in rows]
    by_station = {station.id: station for station in stations}
    below = [
        SessionDraw(
            row.id,
            by_station[row.station_id].circuit_id,
            by_station[row.station_id].phases,
            allowance.sent_amps if allowance else None,
            allowance.sent_at if allowance else None,
        )
        for row, allowance in rows
    ]
    draws = await session_draws(session, below)
    grids = await circuit_grids(
        session,
        {row.id: row.parent_id for row in circuit_rows},
        {row.id: row.meter_id for row in circuit_rows if row.meter_id is not None},
        below,
        draws.known,
        now,
        silent_after,
    )
    circuits = [
        power.Circuit(
            row.id,
            row.parent_id,
            row.limit_a,
            row.margin_a,
            parse_phases(row.phases),
            metered=row.meter_id is not None,
            other_load_a=grids[row.id].other_load_a,
        )
        for row in circuit_rows
    ]
    sessions = [allocator_session(row, allowance, draws.estimated.get(row.id)) for row, allowance in rows]
    result = power.allocate(circuits, stations, sessions, now)
    online = {station.id: station.offline_since is None for station in stations}
    return SitePowerView(
        site_id=site_id,
        at=now,
        circuits=[
            CircuitPower(
                id=row.id,
                name=row.name,
                parent_id=row.parent_id,
                limit_amps=row.limit_a,
                margin_amps=row.margin_a,
                meter_id=row.meter_id,
                measured=_phases(status.measured_a) if (status := grids[row.id].status) else None,
                meter_silent=load.meter_silent,
                meter_fault=status.fault.value if status and status.fault else None,
                stations_draw=_phases(grids[row.id].stations_a, row.phases) or {},
                other_load=_phases(other, row.phases) if (other := grids[row.id].other_load_a) is not None else None,
                available=dict(load.available_a),
                allocated=dict(load.allocated_a),
            )
            for row, load in zip(circuit_rows, result.circuits, strict=True)
        ],
        sessions=[
            SessionPower(
                transaction_id=row.id,
                station_id=row.station_id,
                charge_point_id=row.charge_point_id,
                connector_id=row.connector_id,
                phases=phases_text(allowance.phases),
                allowance_amps=allowance.amps,
                draw_amps=draws.estimated.get(row.id),
                paused=allowance.paused is not None,
                paused_reason=allowance.paused.value if allowance.paused else None,
                station_online=online[row.station_id],
            )
            for row, allowance in zip(transactions, result.allowances, strict=True)
        ],
        unplaced_stations=unplaced,
    )


def _phases(amps: Mapping[Phase, float] | None, phases: str = "L1L2L3") -> dict[str, float] | None:
    if amps is None:
        return None
    return {phase: amps[phase] for phase in parse_phases(phases) if phase in amps}
