"""A site's circuits and where its stations hang on them: read with `sites:read`, change with `sites:write`, as the
site's other settings (decisions.md "Site power"; docs/power.md).

Every change is written to the audit log in the caller's transaction and bumps the circuit's `version`; a change
made from an older version (`expected_version`) is refused as `StaleChange`. The rules of the tree (a limit that
carries one session, no cycle, phases the circuit has) are `domain/circuits.py`; a value they refuse is
`InvalidInput` naming it, and nothing is stored."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.circuits import (
    CircuitRuleBroken,
    check_limit,
    check_parent,
    check_station_phases,
    parse_phases,
    phases_text,
)
from chargenet.domain.scopes import Scope
from chargenet.domain.tenants import validate_name
from chargenet.errors import Conflict, InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.power_changes import site_power_changed
from chargenet.services import audit
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_on_site, reachable_site, reachable_station, site_filter
from chargenet.services.versions import check_version
from chargenet.services.views import Instant, View
from chargenet.store.models import Circuit, GridMeter, Site, StationCircuit

PRIORITIES = range(-100, 101)


class CircuitView(View):
    id: str
    site_id: str
    parent_id: str | None
    name: str
    limit_amps: float
    margin_amps: float
    phases: str
    meter_id: str | None
    version: int
    created_at: Instant


class StationCircuitView(View):
    station_id: str
    circuit_id: str
    phases: str
    priority: int


def circuit_view(row: Circuit) -> CircuitView:
    return CircuitView(
        id=row.id,
        site_id=row.site_id,
        parent_id=row.parent_id,
        name=row.name,
        limit_amps=row.limit_a,
        margin_amps=row.margin_a,
        phases=row.phases,
        meter_id=row.meter_id,
        version=row.version,
        created_at=row.created_at,
    )


def _placement_view(row: StationCircuit) -> StationCircuitView:
    return StationCircuitView(
        station_id=row.station_id, circuit_id=row.circuit_id, phases=row.phases, priority=row.priority
    )


def _refused(error: CircuitRuleBroken) -> InvalidInput:
    return InvalidInput(error.detail, field=error.field)


async def _parents(session: AsyncSession, site_id: str) -> dict[str, str | None]:
    rows = await session.execute(select(Circuit.id, Circuit.parent_id).where(Circuit.site_id == site_id))
    return {circuit_id: parent_id for circuit_id, parent_id in rows}


async def _check_parent(
    session: AsyncSession, site_id: str, circuit_id: str | None, parent_id: str | None
) -> dict[str, str | None]:
    parents = await _parents(session, site_id)
    if parent_id is not None and parent_id not in parents:
        # A circuit of another site, or none at all: named as given, as ids in a body are.
        raise NotFound("circuit", f"{parent_id} at site {site_id}")
    try:
        check_parent(circuit_id, parent_id, parents)
    except CircuitRuleBroken as exc:
        raise _refused(exc) from None
    return parents


async def _check_meter(session: AsyncSession, site_id: str, meter_id: str, circuit_id: str | None) -> None:
    meter = await session.get(GridMeter, meter_id)
    if meter is None or meter.site_id != site_id:
        raise NotFound("grid meter", f"{meter_id} at site {site_id}")
    holder = await session.scalar(select(Circuit.id).where(Circuit.meter_id == meter_id))
    if holder is not None and holder != circuit_id:
        raise Conflict(f"grid meter {meter_id!r} already measures circuit {holder!r}")


def _limits(limit_amps: float, margin_amps: float) -> None:
    try:
        check_limit(limit_amps, margin_amps)
    except CircuitRuleBroken as exc:
        raise _refused(exc) from None


def _phases(text: str) -> str:
    try:
        return phases_text(parse_phases(text))
    except CircuitRuleBroken as exc:
        raise _refused(exc) from None


async def create_circuit(
    session: AsyncSession,
    caller: Caller,
    *,
    site_id: str,
    name: str,
    limit_amps: float,
    now: datetime,
    parent_id: str | None = None,
    meter_id: str | None = None,
    margin_amps: float = 0.0,
    phases: str = "L1L2L3",
) -> CircuitView:
    """A new circuit of `site_id`: its grid connection without `parent_id`, else a feeder below that circuit."""
    await reachable_site(session, caller, Scope.SITES_WRITE, site_id)
    _limits(limit_amps, margin_amps)
    stored_phases = _phases(phases)
    await _check_parent(session, site_id, None, parent_id)
    if meter_id is not None:
        await _check_meter(session, site_id, meter_id, None)
    row = Circuit(
        id=new_id("circuit"),
        site_id=site_id,
        parent_id=parent_id,
        name=validate_name(name),
        limit_a=limit_amps,
        margin_a=margin_amps,
        phases=stored_phases,
        meter_id=meter_id,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    await audit.record_change(session, caller, "circuit.create", row, now=now, detail=_detail(row))
    site_power_changed(session, site_id)
    return circuit_view(row)


def _detail(row: Circuit) -> dict[str, str]:
    detail = {"name": row.name, "limit": f"{row.limit_a:g} A", "phases": row.phases}
    if row.margin_a:
        detail["margin"] = f"{row.margin_a:g} A"
    if row.parent_id:
        detail["parent"] = row.parent_id
    if row.meter_id:
        detail["meter"] = row.meter_id
    return detail


async def _reachable_circuit(
    session: AsyncSession, caller: Caller, scope: Scope, circuit_id: str, site_id: str | None
) -> Circuit:
    """The circuit, if `scope` holds on its site for the caller and it is of `site_id` (when given)."""
    row = await session.get(Circuit, circuit_id)
    if row is not None and site_id is not None and row.site_id != site_id:
        row = None
    return await reachable_on_site(session, caller, scope, row, NotFound("circuit", circuit_id))


async def get_circuit(
    session: AsyncSession, caller: Caller, circuit_id: str, *, site_id: str | None = None
) -> CircuitView:
    return circuit_view(await _reachable_circuit(session, caller, Scope.SITES_READ, circuit_id, site_id))


async def list_circuits(
    session: AsyncSession, caller: Caller, page: PageRequest, *, site_id: str | None = None
) -> Page[CircuitView]:
    """The circuits the caller reaches with `sites:read`, ordered by id; `site_id` narrows to one site's."""
    if site_id is not None:
        await reachable_site(session, caller, Scope.SITES_READ, site_id)
    query = (
        select(Circuit)
        .join(Site, Site.id == Circuit.site_id)
        .where(site_filter(caller.reach(Scope.SITES_READ)))
        .order_by(Circuit.id)
        .limit(page.fetch)
    )
    if site_id is not None:
        query = query.where(Circuit.site_id == site_id)
    if page.after is not None:
        query = query.where(Circuit.id > page.after)
    return page.page([circuit_view(row) for row in await session.scalars(query)], lambda circuit: circuit.id)


async def update_circuit(
    session: AsyncSession,
    caller: Caller,
    circuit_id: str,
    *,
    now: datetime,
    site_id: str | None = None,
    name: str | None = None,
    limit_amps: float | None = None,
    margin_amps: float | None = None,
    parent_id: str | None = None,
    to_root: bool = False,
    meter_id: str | None = None,
    no_meter: bool = False,
    phases: str | None = None,
    expected_version: int | None = None,
) -> CircuitView:
    """Change what is given and keep the rest (`to_root` makes it the site's top, `no_meter` drops its meter).
    Everything is checked before anything changes, so a refused change leaves the circuit as it was."""
    row = await _reachable_circuit(session, caller, Scope.SITES_WRITE, circuit_id, site_id)
    check_version("circuit", row.name, row.version, expected_version)
    new_name = validate_name(name) if name is not None else row.name
    new_limit = row.limit_a if limit_amps is None else limit_amps
    new_margin = row.margin_a if margin_amps is None else margin_amps
    _limits(new_limit, new_margin)
    new_parent = None if to_root else (parent_id if parent_id is not None else row.parent_id)
    if new_parent != row.parent_id:
        await _check_parent(session, row.site_id, row.id, new_parent)
    new_meter = None if no_meter else (meter_id if meter_id is not None else row.meter_id)
    if new_meter is not None and new_meter != row.meter_id:
        await _check_meter(session, row.site_id, new_meter, row.id)
    new_phases = _phases(phases) if phases is not None else row.phases
    if new_phases != row.phases:
        await _check_stations_fit(session, row.id, new_phases)
    changed = [
        noun
        for noun, old, new in (
            ("name", row.name, new_name),
            ("limit", row.limit_a, new_limit),
            ("margin", row.margin_a, new_margin),
            ("parent", row.parent_id, new_parent),
            ("meter", row.meter_id, new_meter),
            ("phases", row.phases, new_phases),
        )
        if old != new
    ]
    if changed:
        row.name, row.limit_a, row.margin_a = new_name, new_limit, new_margin
        row.parent_id, row.meter_id, row.phases = new_parent, new_meter, new_phases
        row.version += 1
        row.updated_at = now
        await session.flush()
        detail = {**_detail(row), "changed": ", ".join(changed)}
        await audit.record_change(session, caller, "circuit.update", row, now=now, detail=detail)
        site_power_changed(session, row.site_id)
    return circuit_view(row)


async def _check_stations_fit(session: AsyncSession, circuit_id: str, phases: str) -> None:
    circuit_phases = parse_phases(phases)
    for station_id, station_phases in await session.execute(
        select(StationCircuit.station_id, StationCircuit.phases).where(StationCircuit.circuit_id == circuit_id)
    ):
        try:
            check_station_phases(parse_phases(station_phases), circuit_phases, circuit_id)
        except CircuitRuleBroken as exc:
            raise InvalidInput(f"station {station_id!r} uses {station_phases}: {exc.detail}", field="phases") from None


async def delete_circuit(
    session: AsyncSession,
    caller: Caller,
    circuit_id: str,
    *,
    now: datetime,
    site_id: str | None = None,
    expected_version: int | None = None,
) -> None:
    """Delete a circuit with nothing below it: refused (`Conflict`) while circuits or stations hang on it."""
    row = await _reachable_circuit(session, caller, Scope.SITES_WRITE, circuit_id, site_id)
    check_version("circuit", row.name, row.version, expected_version)
    children = await session.scalar(select(func.count()).where(Circuit.parent_id == circuit_id))
    stations = await session.scalar(select(func.count()).where(StationCircuit.circuit_id == circuit_id))
    if children or stations:
        raise Conflict(
            f"circuit {circuit_id} still has {children} circuits and {stations} stations below it; move them first"
        )
    await audit.record_change(session, caller, "circuit.delete", row, now=now, detail={"name": row.name})
    site_power_changed(session, row.site_id)
    await session.delete(row)
    await session.flush()


async def place_station(
    session: AsyncSession,
    caller: Caller,
    station_id: str,
    *,
    now: datetime,
    site_id: str | None = None,
    circuit_id: str | None = None,
    phases: str | None = None,
    priority: int | None = None,
) -> StationCircuitView:
    """Hang a station on a circuit of its own site, with the phases its connectors use and its priority; what is
    not given is kept (a station placed for the first time needs its circuit and phases)."""
    station = await reachable_station(session, caller, Scope.SITES_WRITE, station_id)
    if site_id is not None and station.site_id != site_id:
        raise NotFound("station", f"{station_id} at site {site_id}")
    row = await session.get(StationCircuit, station_id)
    new_circuit = circuit_id or (row.circuit_id if row else None)
    new_phases = _phases(phases) if phases is not None else (row.phases if row else None)
    new_priority = priority if priority is not None else (row.priority if row else 0)
    if new_circuit is None:
        raise InvalidInput("a station is placed on a circuit: give one", field="circuit")
    if new_phases is None:
        raise InvalidInput("give the phases the station's connectors use (L1, L2, L3 or L1L2L3)", field="phases")
    if new_priority not in PRIORITIES:
        raise InvalidInput(f"must be {PRIORITIES.start}-{PRIORITIES.stop - 1}, got {new_priority}", field="priority")
    circuit = await session.get(Circuit, new_circuit)
    if circuit is None:
        raise NotFound("circuit", new_circuit)
    if circuit.site_id != station.site_id:
        # Another site's circuit is not one this station may hang on, whoever can see it.
        raise InvalidInput(
            f"{new_circuit!r} is not a circuit of the station's site {station.site_id!r}", field="circuit"
        )
    try:
        check_station_phases(parse_phases(new_phases), parse_phases(circuit.phases), circuit.id)
    except CircuitRuleBroken as exc:
        raise _refused(exc) from None
    if row is None:
        row = StationCircuit(station_id=station_id, circuit_id=new_circuit, phases=new_phases, updated_at=now)
        session.add(row)
    elif (row.circuit_id, row.phases, row.priority) == (new_circuit, new_phases, new_priority):
        return _placement_view(row)
    row.circuit_id, row.phases, row.priority, row.updated_at = new_circuit, new_phases, new_priority, now
    await session.flush()
    detail = {"circuit": new_circuit, "phases": new_phases, "priority": str(new_priority)}
    await audit.record_change(session, caller, "station.circuit", station, now=now, detail=detail)
    site_power_changed(session, station.site_id)
    return _placement_view(row)


async def station_placement(session: AsyncSession, caller: Caller, station_id: str) -> StationCircuitView | None:
    await reachable_station(session, caller, Scope.SITES_READ, station_id)
    row = await session.get(StationCircuit, station_id)
    return _placement_view(row) if row is not None else None
