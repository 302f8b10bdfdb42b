"""Meter configuration use cases, shared by the CLI and the API (decisions.md §4 "Meters")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.energy import wh_to_kwh
from chargenet.domain.events import StopReason
from chargenet.domain.tenants import MAX_CONNECTORS_PER_CHARGE_POINT
from chargenet.errors import Conflict, InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.meters import records as meter_records
from chargenet.meters.bus import RtuBus, TcpEndpoint
from chargenet.meters.detect import Thresholds
from chargenet.meters.records import spec_of, transport_of
from chargenet.meters.spec import MeterSpec, build_spec, build_thresholds, parse_transport
from chargenet.outbox import Outbox
from chargenet.store.models import ChargePoint, Meter, MeterSession, MeterState, Site, Station


@dataclass(frozen=True, slots=True)
class MeterStatus:
    """What a meter-measured charge point shows: charging or not, and the last reading."""

    transaction_id: int | None
    energy_wh: int | None
    max_current_a: float | None
    power_w: float | None
    read_at: datetime | None
    phase: str | None

    def to_json(self) -> dict[str, Any]:
        reading = None
        if self.read_at is not None and self.energy_wh is not None:
            reading = {
                "energyKwh": wh_to_kwh(self.energy_wh),
                "maxCurrent": self.max_current_a,
                "power": self.power_w,
                "readAt": self.read_at.isoformat(),
            }
        return {
            "charging": self.transaction_id is not None,
            "transactionId": self.transaction_id,
            "lastReading": reading,
        }


@dataclass(frozen=True, slots=True)
class MeterView:
    spec: MeterSpec
    enabled: bool
    created_at: datetime
    status: MeterStatus | None = None

    @property
    def id(self) -> str:
        return self.spec.meter_id

    def to_json(self) -> dict[str, Any]:
        spec, thresholds = self.spec, self.spec.thresholds
        transport: dict[str, Any]
        if isinstance(spec.transport, TcpEndpoint):
            transport = {"type": "tcp", "host": spec.transport.host, "port": spec.transport.port}
        else:
            line = spec.transport.line
            transport = {
                "type": "rtu",
                "device": spec.transport.device,
                "baud": line.baudrate,
                "parity": line.parity.value,
                "stopbits": line.stopbits,
            }
        document: dict[str, Any] = {
            "id": spec.meter_id,
            "siteId": spec.site_id,
            "stationId": spec.station_id,
            "chargePointId": spec.charge_point_id,
            "connectorId": spec.connector_id,
            "profile": spec.profile.name,
            "unitId": spec.unit_id,
            "transport": transport,
            "idTag": spec.id_tag,
            "pollInterval": spec.poll_interval_s,
            "startCurrent": thresholds.start_current_a,
            "stopCurrent": thresholds.stop_current_a,
            "startPower": thresholds.start_power_w,
            "stopPower": thresholds.stop_power_w,
            "stopGrace": thresholds.stop_grace_s,
            "outageClose": thresholds.outage_close_s,
            "enabled": self.enabled,
            "createdAt": self.created_at.isoformat(),
        }
        if self.status is not None:
            document["status"] = self.status.to_json()
        return document


async def create_meter(
    session: AsyncSession,
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
    start_current: float | None = None,
    stop_current: float | None = None,
    start_power: float | None = None,
    stop_power: float | None = None,
    stop_grace: float | None = None,
    outage_close: float | None = None,
    meter_id: str | None = None,
) -> MeterView:
    """Register a meter. NotFound for an unknown site or station; InvalidInput naming the bad setting;
    Conflict when the connector already has a meter or the bus address is taken."""
    if await session.get(Site, site_id) is None:
        raise NotFound("site", site_id)
    station = await session.get(Station, station_id)
    if station is None:
        raise NotFound("station", station_id)
    if station.site_id != site_id:
        raise InvalidInput(f"station {station_id!r} belongs to another site", field="station")
    charge_point = await _charge_point(session, station, charge_point_id)
    connector = connector_id if connector_id is not None else 1
    limit = station.connectors_per_charge_point or MAX_CONNECTORS_PER_CHARGE_POINT
    if not 1 <= connector <= limit:
        raise InvalidInput(f"must be 1-{limit} on charge point {charge_point.id!r}, got {connector}", field="connector")
    transport = parse_transport(tcp=tcp, rtu=rtu, baud=baud, parity=parity, stopbits=stopbits)
    thresholds = build_thresholds(
        start_current=start_current,
        stop_current=stop_current,
        start_power=start_power,
        stop_power=stop_power,
        stop_grace=stop_grace,
        outage_close=outage_close,
    )
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
        thresholds=thresholds,
        poll_interval_s=poll_interval if poll_interval is not None else 5.0,
    )
    if await session.get(Meter, new_meter_id) is not None:
        raise Conflict(f"meter {new_meter_id!r} already exists")
    await _check_free(session, spec)
    row = Meter(id=new_meter_id, site_id=site_id, created_at=now, updated_at=now, enabled=True)
    _store_spec(row, spec)
    session.add(row)
    await session.flush()
    return MeterView(spec, row.enabled, row.created_at)


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
        raise InvalidInput(f"{charge_point_id!r} is not a charge point of station {station.id!r}", field="charge-point")
    return row


async def _check_free(session: AsyncSession, spec: MeterSpec) -> None:
    for other in await session.scalars(select(Meter).where(Meter.id != spec.meter_id)):
        if other.charge_point_id == spec.charge_point_id and other.connector_id == spec.connector_id:
            raise Conflict(
                f"connector {spec.connector_id} of {spec.charge_point_id!r} is already measured by meter {other.id!r}"
            )
        if transport_of(other).key == spec.bus_key and other.unit_id == spec.unit_id:
            raise Conflict(f"unit {spec.unit_id} on {spec.bus_key} is already meter {other.id!r}")


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


async def _get(session: AsyncSession, meter_id: str) -> Meter:
    row = await session.get(Meter, meter_id)
    if row is None:
        raise NotFound("meter", meter_id)
    return row


async def _status(session: AsyncSession, meter_id: str) -> MeterStatus:
    state = await session.get(MeterState, meter_id)
    transaction_id = await session.scalar(
        select(MeterSession.transaction_id).where(MeterSession.meter_id == meter_id, MeterSession.stopped_at.is_(None))
    )
    return MeterStatus(
        transaction_id=transaction_id,
        energy_wh=state.energy_wh if state else None,
        max_current_a=state.max_current_a if state else None,
        power_w=state.power_w if state else None,
        read_at=state.read_at if state else None,
        phase=state.phase if state else None,
    )


async def get_meter(session: AsyncSession, meter_id: str) -> MeterView:
    row = await _get(session, meter_id)
    return MeterView(spec_of(row), row.enabled, row.created_at, await _status(session, meter_id))


async def list_meters(session: AsyncSession, *, site_id: str | None = None) -> list[MeterView]:
    query = select(Meter).order_by(Meter.created_at, Meter.id)
    if site_id is not None:
        query = query.where(Meter.site_id == site_id)
    return [
        MeterView(spec_of(row), row.enabled, row.created_at, await _status(session, row.id))
        for row in await session.scalars(query)
    ]


async def update_meter(
    session: AsyncSession,
    meter_id: str,
    *,
    now: datetime,
    id_tag: str | None = None,
    poll_interval: float | None = None,
    start_current: float | None = None,
    stop_current: float | None = None,
    start_power: float | None = None,
    stop_power: float | None = None,
    stop_grace: float | None = None,
    outage_close: float | None = None,
    enabled: bool | None = None,
) -> MeterView:
    """Change a meter's idTag, poll interval, thresholds or enabled flag; the poller picks it up within 2 s."""
    row = await _get(session, meter_id)
    current = spec_of(row)
    given = current.thresholds

    def pick(value: float | None, existing: float) -> float:
        return existing if value is None else value

    thresholds: Thresholds = build_thresholds(
        start_current=pick(start_current, given.start_current_a),
        stop_current=pick(stop_current, given.stop_current_a),
        start_power=pick(start_power, given.start_power_w),
        stop_power=pick(stop_power, given.stop_power_w),
        stop_grace=pick(stop_grace, given.stop_grace_s),
        outage_close=pick(outage_close, given.outage_close_s),
    )
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
        thresholds=thresholds,
        poll_interval_s=pick(poll_interval, current.poll_interval_s),
    )
    _store_spec(row, spec)
    if enabled is not None:
        row.enabled = enabled
    row.updated_at = now
    await session.flush()
    return MeterView(spec, row.enabled, row.created_at, await _status(session, meter_id))


async def delete_meter(session: AsyncSession, outbox: Outbox, meter_id: str, *, now: datetime) -> None:
    """Remove a meter. Its open session, if any, closes at its last charging reading with reason Other (a
    StartTransaction once sent always gets its StopTransaction); its sessions stay as transactions."""
    row = await _get(session, meter_id)
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


def bus_label(document: dict[str, Any]) -> str:
    transport = document["transport"]
    if transport["type"] == "tcp":
        return f"tcp {transport['host']}:{transport['port']}"
    return f"rtu {transport['device']} {transport['baud']} {transport['parity']}{transport['stopbits']}"


__all__ = [
    "MeterStatus",
    "MeterView",
    "RtuBus",
    "bus_label",
    "create_meter",
    "delete_meter",
    "get_meter",
    "list_meters",
    "spec_of",
    "update_meter",
]
