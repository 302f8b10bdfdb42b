"""Meter configuration use cases, shared by the CLI, the API and the console (decisions.md §4 "Meters").

Every change is written to the audit log in the caller's transaction and bumps the meter's `version`; a change
made from an older version (`expected_version`) is refused as `StaleChange`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field
from sqlalchemy import case, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.energy import wh_to_kwh
from chargenet.domain.events import StopReason
from chargenet.domain.scopes import Scope
from chargenet.domain.tenants import MAX_CONNECTORS_PER_CHARGE_POINT
from chargenet.errors import Conflict, InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.meters import records as meter_records
from chargenet.meters.bus import RtuBus, TcpEndpoint, Transport
from chargenet.meters.profiles import PROFILES
from chargenet.meters.records import spec_of, transport_of
from chargenet.meters.spec import MeterSpec, ThresholdSettings, build_spec, build_thresholds, parse_transport
from chargenet.outbox import Outbox
from chargenet.services import audit
from chargenet.services.callers import Caller
from chargenet.services.meter_addresses import check_address_free
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_on_site, reachable_site, site_filter
from chargenet.services.versions import check_version
from chargenet.services.views import Instant, View, optional
from chargenet.store.models import (
    ChargePoint,
    Meter,
    MeterBusLease,
    MeterPollHealth,
    MeterSession,
    MeterState,
    Site,
    Station,
)


class MeterReading(View):
    energy_kwh: float
    max_current: float | None
    power: float | None
    read_at: Instant


class MeterStatus(View):
    """What a meter-measured charge point shows: charging or not, and the last reading."""

    charging: bool
    transaction_id: int | None
    last_reading: MeterReading | None
    # The session detector's phase (idle, arming, charging, stopping, reconciling); absent before any reading.
    phase: str | None = optional()


class TcpTransportView(View):
    type: Literal["tcp"] = "tcp"
    host: str
    port: int


class RtuTransportView(View):
    type: Literal["rtu"] = "rtu"
    device: str
    baud: int
    parity: str
    stopbits: int


class MeterView(View):
    """A meter's configuration as the faces show it, read once from its validated configuration (`MeterSpec`),
    and what it measures now (`status`, absent where a use case answers before any poll)."""

    id: str
    site_id: str
    station_id: str
    charge_point_id: str
    connector_id: int
    profile: str
    unit_id: int
    transport: Annotated[TcpTransportView | RtuTransportView, Field(discriminator="type")]
    id_tag: str
    poll_interval: float
    start_current: float
    stop_current: float
    start_power: float
    stop_power: float
    stop_grace: float
    outage_close: float
    enabled: bool
    version: int = 1
    created_at: Instant
    status: MeterStatus | None = None


def _transport_view(transport: Transport) -> TcpTransportView | RtuTransportView:
    if isinstance(transport, TcpEndpoint):
        return TcpTransportView(host=transport.host, port=transport.port)
    line = transport.line
    return RtuTransportView(
        device=transport.device, baud=line.baudrate, parity=line.parity.value, stopbits=line.stopbits
    )


def _meter_view(row: Meter, spec: MeterSpec, status: MeterStatus | None = None) -> MeterView:
    thresholds = spec.thresholds
    return MeterView(
        id=spec.meter_id,
        site_id=spec.site_id,
        station_id=spec.station_id,
        charge_point_id=spec.charge_point_id,
        connector_id=spec.connector_id,
        profile=spec.profile.name,
        unit_id=spec.unit_id,
        transport=_transport_view(spec.transport),
        id_tag=spec.id_tag,
        poll_interval=spec.poll_interval_s,
        start_current=thresholds.start_current_a,
        stop_current=thresholds.stop_current_a,
        start_power=thresholds.start_power_w,
        stop_power=thresholds.stop_power_w,
        stop_grace=thresholds.stop_grace_s,
        outage_close=thresholds.outage_close_s,
        enabled=row.enabled,
        version=row.version,
        created_at=row.created_at,
        status=status,
    )


async def create_meter(
    session: AsyncSession,
    caller: Caller,
    *,
    site_id: str,
    station_id: str,
    profile: str,
    unit_id: int,
    now: datetime,
    tcp: str | None = None,
    rtu: str | None = None,
    baud: int | None = None,
    parity: str | None = None,
    stopbits: int | None = None,
    charge_point_id: str | None = None,
    connector_id: int | None = None,
    id_tag: str | None = None,
    poll_interval: float | None = None,
    thresholds: ThresholdSettings | None = None,
    meter_id: str | None = None,
) -> MeterView:
    """Register a meter. NotFound for an unknown site or station; InvalidInput naming the bad setting;
    Conflict when the connector already has a meter or the bus address is taken."""
    await reachable_site(session, caller, Scope.METERS_WRITE, site_id)
    station = await session.get(Station, station_id)
    if station is None:
        raise NotFound("station", station_id)
    if station.site_id != site_id:
        # Objects named in the request that do not exist as named are not found, as ids in a path are.
        raise NotFound("station", f"{station_id} at site {site_id}")
    charge_point = await _charge_point(session, station, charge_point_id)
    connector = connector_id if connector_id is not None else 1
    limit = station.connectors_per_charge_point or MAX_CONNECTORS_PER_CHARGE_POINT
    if connector < 1:
        raise InvalidInput(f"must be 1-{limit} on charge point {charge_point.id!r}, got {connector}", field="connector")
    if connector > limit:
        raise NotFound("connector", f"{connector} of charge point {charge_point.id} (it has {limit})")
    transport = parse_transport(tcp=tcp, rtu=rtu, baud=baud, parity=parity, stopbits=stopbits)
    new_meter_id = meter_id or new_id("meter")
    spec = build_spec(
        meter_id=new_meter_id,
        site_id=site_id,
        station_id=station_id,
        charge_point_id=charge_point.id,
        connector_id=connector,
        id_tag=id_tag,
        profile=profile,
        unit_id=unit_id,
        transport=transport,
        thresholds=build_thresholds(thresholds),
        poll_interval_s=poll_interval if poll_interval is not None else 5.0,
    )
    if await session.get(Meter, new_meter_id) is not None:
        raise Conflict(f"meter {new_meter_id!r} already exists")
    await _check_free(session, spec)
    row = Meter(id=new_meter_id, site_id=site_id, created_at=now, updated_at=now)
    _store_spec(row, spec)
    session.add(row)
    await session.flush()
    detail = {
        "site": site_id,
        "station": station_id,
        "charge point": charge_point.id,
        "connector": str(connector),
        "profile": spec.profile.name,
        "bus": spec.bus_key,
        "unit": str(spec.unit_id),
    }
    await audit.record_change(session, caller, "meter.create", row, now=now, detail=detail)
    return _meter_view(row, spec)


async def _charge_point(session: AsyncSession, station: Station, charge_point_id: str | None) -> ChargePoint:
    if charge_point_id is None:
        row = await session.scalar(
            select(ChargePoint).where(ChargePoint.station_id == station.id).order_by(ChargePoint.ordinal).limit(1)
        )
        if row is None:
            raise InvalidInput(f"station {station.id!r} has no charge point", field="station")
        return row
    row = await session.get(ChargePoint, charge_point_id)
    if row is None or row.station_id != station.id:
        raise NotFound("charge point", f"{charge_point_id} of station {station.id}")
    return row


async def _check_free(session: AsyncSession, spec: MeterSpec) -> None:
    for other in await session.scalars(select(Meter).where(Meter.id != spec.meter_id)):
        if other.charge_point_id == spec.charge_point_id and other.connector_id == spec.connector_id:
            raise Conflict(
                f"connector {spec.connector_id} of {spec.charge_point_id!r} is already measured by meter {other.id!r}"
            )
    await check_address_free(session, spec.bus_key, spec.unit_id, meter_id=spec.meter_id)


def _store_spec(row: Meter, spec: MeterSpec) -> None:
    row.station_id = spec.station_id
    row.charge_point_id = spec.charge_point_id
    row.connector_id = spec.connector_id
    row.profile = spec.profile.name
    row.unit_id = spec.unit_id
    row.id_tag = spec.id_tag
    row.poll_interval_s = spec.poll_interval_s
    thresholds = spec.thresholds
    row.start_current_a = thresholds.start_current_a
    row.stop_current_a = thresholds.stop_current_a
    row.start_power_w = thresholds.start_power_w
    row.stop_power_w = thresholds.stop_power_w
    row.stop_grace_s = thresholds.stop_grace_s
    row.outage_close_s = thresholds.outage_close_s
    if isinstance(spec.transport, TcpEndpoint):
        row.transport, row.tcp_host, row.tcp_port = "tcp", spec.transport.host, spec.transport.port
        row.rtu_device = row.parity = None
        row.baudrate = row.stopbits = None
    else:
        line = spec.transport.line
        row.transport, row.rtu_device = "rtu", spec.transport.device
        row.baudrate, row.parity, row.stopbits = line.baudrate, line.parity.value, line.stopbits
        row.tcp_host, row.tcp_port = None, None


async def _get(session: AsyncSession, caller: Caller, scope: Scope, meter_id: str) -> Meter:
    """The meter, if `scope` holds on its site for the caller; `NotFound` otherwise."""
    return await reachable_on_site(
        session, caller, scope, await session.get(Meter, meter_id), NotFound("meter", meter_id)
    )


async def _view(session: AsyncSession, row: Meter) -> MeterView:
    state = await session.get(MeterState, row.id)
    transaction_id = await session.scalar(
        select(MeterSession.transaction_id).where(MeterSession.meter_id == row.id, MeterSession.stopped_at.is_(None))
    )
    reading = None
    if state is not None and state.read_at is not None and state.energy_wh is not None:
        reading = MeterReading(
            energy_kwh=wh_to_kwh(state.energy_wh),
            max_current=state.max_current_a,
            power=state.power_w,
            read_at=state.read_at,
        )
    status = MeterStatus(
        charging=transaction_id is not None,
        transaction_id=transaction_id,
        last_reading=reading,
        phase=state.phase if state is not None else None,
    )
    return _meter_view(row, spec_of(row), status)


async def get_meter(session: AsyncSession, caller: Caller, meter_id: str) -> MeterView:
    return await _view(session, await _get(session, caller, Scope.METERS_READ, meter_id))


async def list_meters(
    session: AsyncSession,
    caller: Caller,
    page: PageRequest,
    *,
    site_id: str | None = None,
    station_id: str | None = None,
    enabled: bool | None = None,
) -> Page[MeterView]:
    """The meters on sites the caller reaches with `meters:read`, ordered by id; `site_id`, `station_id` and
    `enabled` narrow them."""
    query = (
        select(Meter)
        .join(Site, Site.id == Meter.site_id)
        .where(site_filter(caller.reach(Scope.METERS_READ)))
        .order_by(Meter.id)
        .limit(page.fetch)
    )
    if site_id is not None:
        query = query.where(Meter.site_id == site_id)
    if station_id is not None:
        query = query.where(Meter.station_id == station_id)
    if enabled is not None:
        query = query.where(Meter.enabled.is_(enabled))
    if page.after is not None:
        query = query.where(Meter.id > page.after)
    views = [await _view(session, row) for row in await session.scalars(query)]
    return page.page(views, lambda meter: meter.id)


async def meters_of_charge_points(session: AsyncSession, charge_point_ids: list[str]) -> list[MeterView]:
    """The meters measuring these charge points, for the charge points' own views (whose reach was checked)."""
    rows = await session.scalars(
        select(Meter).where(Meter.charge_point_id.in_(charge_point_ids)).order_by(Meter.created_at, Meter.id)
    )
    return [await _view(session, row) for row in rows]


async def update_meter(
    session: AsyncSession,
    caller: Caller,
    meter_id: str,
    *,
    now: datetime,
    id_tag: str | None = None,
    poll_interval: float | None = None,
    thresholds: ThresholdSettings | None = None,
    enabled: bool | None = None,
    expected_version: int | None = None,
) -> MeterView:
    """Change a meter's idTag, poll interval, thresholds or enabled flag; the poller picks it up within 2 s."""
    row = await _get(session, caller, Scope.METERS_WRITE, meter_id)
    check_version("meter", row.id, row.version, expected_version)
    current = spec_of(row)
    spec = build_spec(
        meter_id=row.id,
        site_id=row.site_id,
        station_id=current.station_id,
        charge_point_id=current.charge_point_id,
        connector_id=current.connector_id,
        id_tag=id_tag if id_tag is not None else current.id_tag,
        profile=current.profile.name,
        unit_id=current.unit_id,
        transport=current.transport,
        thresholds=build_thresholds(thresholds, base=current.thresholds),
        poll_interval_s=poll_interval if poll_interval is not None else current.poll_interval_s,
    )
    changed = _differences(current, spec)
    if enabled is not None and enabled != row.enabled:
        changed.append("enabled" if enabled else "disabled")
    if not changed:
        return await _view(session, row)
    _store_spec(row, spec)
    if enabled is not None:
        row.enabled = enabled
    row.updated_at = now
    row.version += 1
    await session.flush()
    if changed in (["enabled"], ["disabled"]):
        action = "meter.enable" if enabled else "meter.disable"
    else:
        action = "meter.update"
    await audit.record_change(session, caller, action, row, now=now, detail={"changed": ", ".join(changed)})
    return await _view(session, row)


def _differences(before: MeterSpec, after: MeterSpec) -> list[str]:
    """What an update changes, named for the audit log."""
    old, new = before.thresholds, after.thresholds
    pairs: list[tuple[str, object, object]] = [
        ("idTag", before.id_tag, after.id_tag),
        ("poll interval", before.poll_interval_s, after.poll_interval_s),
        ("start current", old.start_current_a, new.start_current_a),
        ("stop current", old.stop_current_a, new.stop_current_a),
        ("start power", old.start_power_w, new.start_power_w),
        ("stop power", old.stop_power_w, new.stop_power_w),
        ("stop grace", old.stop_grace_s, new.stop_grace_s),
        ("outage close", old.outage_close_s, new.outage_close_s),
    ]
    return [label for label, a, b in pairs if a != b]


async def delete_meter(session: AsyncSession, caller: Caller, outbox: Outbox, meter_id: str, *, now: datetime) -> None:
    """Remove a meter. Its open session, if any, closes at its last charging reading with reason Other (a
    StartTransaction once sent always gets its StopTransaction); its sessions stay as transactions."""
    row = await _get(session, caller, Scope.METERS_WRITE, meter_id)
    await audit.record_change(
        session, caller, "meter.delete", row, now=now, detail={"station": row.station_id, "bus": transport_of(row).key}
    )
    open_session = await meter_records.open_session_of(session, meter_id)
    if open_session is not None:
        await meter_records.stop_session(
            session,
            outbox,
            open_session.transaction_id,
            meter_stop_wh=open_session.last_charging_wh,
            reason=StopReason.OTHER,
            at=now,
        )
    await session.delete(row)
    await session.flush()


class PollHealth(View):
    """A meter's poll counters as the process polling its bus last stored them (every 10 s): they count since
    that process took the bus, so they start again at 0 when another one does."""

    bus_key: str
    owner: str
    reads: int
    errors: int
    timeouts: int
    crc_errors: int
    last_answer_at: Instant | None
    last_error: str | None
    dead: bool
    updated_at: Instant


def _health_of(row: MeterPollHealth) -> PollHealth:
    return PollHealth(
        bus_key=row.bus_key,
        owner=row.owner,
        reads=row.reads,
        errors=row.errors,
        timeouts=row.timeouts,
        crc_errors=row.crc_errors,
        last_answer_at=row.last_answer_at,
        last_error=row.last_error,
        dead=row.dead,
        updated_at=row.updated_at,
    )


async def poll_health(session: AsyncSession, meter_ids: list[str]) -> dict[str, PollHealth]:
    """The stored poll health of these meters (of views the caller reached), by meter id; a meter never polled
    has none."""
    if not meter_ids:
        return {}
    rows = await session.scalars(select(MeterPollHealth).where(MeterPollHealth.meter_id.in_(meter_ids)))
    return {row.meter_id: _health_of(row) for row in rows}


class BusView(View):
    """One TCP endpoint or RTU bus, as its meters' stored health tells it (meters never polled are not counted):
    who polls it, and their counters summed."""

    bus_key: str
    owner: str
    lease_expires_at: Instant | None
    meters: int
    dead_meters: int
    reads: int
    errors: int
    timeouts: int
    crc_errors: int
    last_answer_at: Instant | None
    updated_at: Instant


async def list_buses(session: AsyncSession, caller: Caller, page: PageRequest) -> Page[BusView]:
    """The buses of the meters on sites the caller reaches with `meters:read`, by key. The holder is the lease's
    (several processes on PostgreSQL) or else the process that last stored the health (SQLite: one process)."""
    query = (
        select(
            MeterPollHealth.bus_key,
            func.max(MeterPollHealth.owner),
            func.count(),
            func.sum(case((MeterPollHealth.dead, 1), else_=0)),
            func.sum(MeterPollHealth.reads),
            func.sum(MeterPollHealth.errors),
            func.sum(MeterPollHealth.timeouts),
            func.sum(MeterPollHealth.crc_errors),
            func.max(MeterPollHealth.last_answer_at),
            func.max(MeterPollHealth.updated_at),
        )
        .join(Meter, Meter.id == MeterPollHealth.meter_id)
        .join(Site, Site.id == Meter.site_id)
        .where(site_filter(caller.reach(Scope.METERS_READ)))
        .group_by(MeterPollHealth.bus_key)
        .order_by(MeterPollHealth.bus_key)
        .limit(page.fetch)
    )
    if page.after is not None:
        query = query.where(MeterPollHealth.bus_key > page.after)
    rows = (await session.execute(query)).all()
    leases = {
        lease.bus_key: lease
        for lease in await session.scalars(
            select(MeterBusLease).where(MeterBusLease.bus_key.in_([row[0] for row in rows]))
        )
    }
    views = []
    for key, owner, meters, dead, reads, errors, timeouts, crc_errors, last_answer_at, updated_at in rows:
        lease = leases.get(key)
        views.append(
            BusView(
                bus_key=key,
                owner=lease.owner if lease is not None and lease.owner is not None else owner,
                lease_expires_at=lease.expires_at if lease is not None and lease.owner is not None else None,
                meters=meters,
                dead_meters=int(dead or 0),
                reads=int(reads or 0),
                errors=int(errors or 0),
                timeouts=int(timeouts or 0),
                crc_errors=int(crc_errors or 0),
                last_answer_at=last_answer_at,
                updated_at=updated_at,
            )
        )
    return page.page(views, lambda bus: bus.bus_key)


def profile_names() -> list[str]:
    """The meter profiles a meter can be created with."""
    return list(PROFILES)


def bus_label(view: MeterView) -> str:
    transport = view.transport
    if isinstance(transport, TcpTransportView):
        return f"tcp {transport.host}:{transport.port}"
    return f"rtu {transport.device} {transport.baud} {transport.parity}{transport.stopbits}"


__all__ = [
    "BusView",
    "MeterStatus",
    "MeterView",
    "PollHealth",
    "RtuBus",
    "bus_label",
    "create_meter",
    "delete_meter",
    "get_meter",
    "list_buses",
    "list_meters",
    "poll_health",
    "spec_of",
    "update_meter",
]
