"""Grid meters: Modbus meters with role `grid`, on a circuit rather than in front of a connector (decisions.md
"Site power"). Set up with `meters:write`, read with `meters:read`, as a site's other meters; any of the meter
profiles, over TCP or RTU. Polling them is the site power controller's, not the session detector's."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.errors import Conflict, InvalidInput, NotFound
from chargenet.ids import new_id
from chargenet.meters.bus import TcpEndpoint
from chargenet.meters.profiles import get_profile
from chargenet.meters.records import transport_of
from chargenet.meters.spec import POLL_INTERVAL_S, UNIT_IDS, parse_transport
from chargenet.services import audit
from chargenet.services.callers import Caller
from chargenet.services.meter_addresses import check_address_free
from chargenet.services.meters import RtuTransportView, TcpTransportView
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_on_site, reachable_site, site_filter
from chargenet.services.views import Instant, View
from chargenet.store.models import Circuit, GridMeter, Site

GRID_POLL_INTERVAL_S = 1.0


class GridMeterView(View):
    id: str
    site_id: str
    role: str = "grid"
    profile: str
    unit_id: int
    transport: Annotated[TcpTransportView | RtuTransportView, Field(discriminator="type")]
    poll_interval: float
    circuit_id: str | None
    version: int
    created_at: Instant


def _view(row: GridMeter, circuit_id: str | None) -> GridMeterView:
    transport = transport_of(row)
    shown: TcpTransportView | RtuTransportView
    if isinstance(transport, TcpEndpoint):
        shown = TcpTransportView(host=transport.host, port=transport.port)
    else:
        line = transport.line
        shown = RtuTransportView(
            device=transport.device, baud=line.baudrate, parity=line.parity.value, stopbits=line.stopbits
        )
    return GridMeterView(
        id=row.id,
        site_id=row.site_id,
        profile=row.profile,
        unit_id=row.unit_id,
        transport=shown,
        poll_interval=row.poll_interval_s,
        circuit_id=circuit_id,
        version=row.version,
        created_at=row.created_at,
    )


async def create_grid_meter(
    session: AsyncSession,
    caller: Caller,
    *,
    site_id: str,
    profile: str,
    unit_id: int,
    now: datetime,
    tcp: str | None = None,
    rtu: str | None = None,
    baud: int | None = None,
    parity: str | None = None,
    stopbits: int | None = None,
    poll_interval: float | None = None,
) -> GridMeterView:
    """Register a grid meter of `site_id`; InvalidInput naming the bad setting; Conflict when its bus address is
    another meter's."""
    await reachable_site(session, caller, Scope.METERS_WRITE, site_id)
    resolved = get_profile(profile)
    if unit_id not in UNIT_IDS:
        raise InvalidInput(f"must be 1-247, got {unit_id}", field="unit")
    interval = GRID_POLL_INTERVAL_S if poll_interval is None else poll_interval
    low, high = POLL_INTERVAL_S
    if not low <= interval <= high:
        raise InvalidInput(f"must be {low}-{high:g} seconds, got {interval:g}", field="poll-interval")
    transport = parse_transport(tcp=tcp, rtu=rtu, baud=baud, parity=parity, stopbits=stopbits)
    await check_address_free(session, transport.key, unit_id)
    row = GridMeter(
        id=new_id("meter"),
        site_id=site_id,
        profile=resolved.name,
        unit_id=unit_id,
        poll_interval_s=interval,
        created_at=now,
        updated_at=now,
    )
    if isinstance(transport, TcpEndpoint):
        row.transport, row.tcp_host, row.tcp_port = "tcp", transport.host, transport.port
    else:
        line = transport.line
        row.transport, row.rtu_device = "rtu", transport.device
        row.baudrate, row.parity, row.stopbits = line.baudrate, line.parity.value, line.stopbits
    session.add(row)
    await session.flush()
    detail = {"site": site_id, "role": "grid", "profile": row.profile, "bus": transport.key, "unit": str(unit_id)}
    await audit.record_change(session, caller, "meter.create", row, now=now, detail=detail)
    return _view(row, None)


async def _reachable(
    session: AsyncSession, caller: Caller, scope: Scope, meter_id: str, site_id: str | None
) -> GridMeter:
    row = await session.get(GridMeter, meter_id)
    if row is not None and site_id is not None and row.site_id != site_id:
        row = None
    return await reachable_on_site(session, caller, scope, row, NotFound("grid meter", meter_id))


async def _circuit_of(session: AsyncSession, meter_id: str) -> str | None:
    return await session.scalar(select(Circuit.id).where(Circuit.meter_id == meter_id))


async def get_grid_meter(
    session: AsyncSession, caller: Caller, meter_id: str, *, site_id: str | None = None
) -> GridMeterView:
    row = await _reachable(session, caller, Scope.METERS_READ, meter_id, site_id)
    return _view(row, await _circuit_of(session, meter_id))


async def list_grid_meters(
    session: AsyncSession, caller: Caller, page: PageRequest, *, site_id: str | None = None
) -> Page[GridMeterView]:
    """The grid meters the caller reaches with `meters:read`, ordered by id; `site_id` narrows to one site's."""
    if site_id is not None:
        await reachable_site(session, caller, Scope.METERS_READ, site_id)
    query = (
        select(GridMeter, Circuit.id)
        .join(Site, Site.id == GridMeter.site_id)
        .outerjoin(Circuit, Circuit.meter_id == GridMeter.id)
        .where(site_filter(caller.reach(Scope.METERS_READ)))
        .order_by(GridMeter.id)
        .limit(page.fetch)
    )
    if site_id is not None:
        query = query.where(GridMeter.site_id == site_id)
    if page.after is not None:
        query = query.where(GridMeter.id > page.after)
    views = [_view(row, circuit_id) for row, circuit_id in await session.execute(query)]
    return page.page(views, lambda meter: meter.id)


async def delete_grid_meter(
    session: AsyncSession, caller: Caller, meter_id: str, *, now: datetime, site_id: str | None = None
) -> None:
    """Delete a grid meter no circuit uses (`Conflict` naming the circuit otherwise)."""
    row = await _reachable(session, caller, Scope.METERS_WRITE, meter_id, site_id)
    circuit_id = await _circuit_of(session, meter_id)
    if circuit_id is not None:
        raise Conflict(f"grid meter {meter_id} measures circuit {circuit_id}; take it off the circuit first")
    await audit.record_change(session, caller, "meter.delete", row, now=now, detail={"role": "grid"})
    await session.delete(row)
    await session.flush()
