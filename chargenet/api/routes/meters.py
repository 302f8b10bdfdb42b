"""`/api/v1/meters`: meter configuration and each meter's charging state and last reading.

Reading needs scope `meters:read`, changing needs `meters:write`, on the meter's site (or its company). A meter
the caller's groups do not reach is answered 404, like one that does not exist. Routes only parse, check the
permission, call `chargenet.services.meters` and render; errors become RFC 9457 problems in `api/problems.py`.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.api.security import require
from chargenet.app import AppContext
from chargenet.auth.server import Caller
from chargenet.domain.scopes import Scope
from chargenet.errors import InvalidInput, NotFound
from chargenet.services import meters
from chargenet.store.models import Site

MeterReader = Annotated[Caller, Depends(require(Scope.METERS_READ))]
MeterWriter = Annotated[Caller, Depends(require(Scope.METERS_WRITE))]

router = APIRouter(prefix="/meters", tags=["meters"])


async def _check_site(session: AsyncSession, caller: Caller, scope: Scope, site_id: str, missing: NotFound) -> None:
    company_id = await session.scalar(select(Site.company_id).where(Site.id == site_id))
    if company_id is None or not caller.permissions.allows(scope, company_id, site_id):
        raise missing


async def _check_meter(session: AsyncSession, caller: Caller, scope: Scope, meter_id: str) -> None:
    view = await meters.get_meter(session, meter_id)
    await _check_site(session, caller, scope, view.spec.site_id, NotFound("meter", meter_id))


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Thresholds(_Body):
    idTag: Annotated[str, Field(min_length=1, max_length=255)] | None = None
    pollInterval: float | None = None
    startCurrent: float | None = None
    stopCurrent: float | None = None
    startPower: float | None = None
    stopPower: float | None = None
    stopGrace: float | None = None
    outageClose: float | None = None

    def options(self) -> dict[str, Any]:
        return {
            "id_tag": self.idTag,
            "poll_interval": self.pollInterval,
            "start_current": self.startCurrent,
            "stop_current": self.stopCurrent,
            "start_power": self.startPower,
            "stop_power": self.stopPower,
            "stop_grace": self.stopGrace,
            "outage_close": self.outageClose,
        }


class TcpTransport(_Body):
    type: Literal["tcp"]
    host: Annotated[str, Field(min_length=1, max_length=255)]
    port: Annotated[int, Field(ge=1, le=65535)] = 502


class RtuTransport(_Body):
    type: Literal["rtu"]
    device: Annotated[str, Field(min_length=1, max_length=255)]
    baud: int = 9600
    parity: Literal["N", "E", "O"] = "N"
    stopbits: Literal[1, 2] = 1


class MeterCreate(Thresholds):
    siteId: str
    stationId: str
    chargePointId: str | None = None
    connectorId: int | None = None
    profile: str
    unitId: int
    transport: Annotated[TcpTransport | RtuTransport, Field(discriminator="type")]


class MeterUpdate(Thresholds):
    enabled: bool | None = None


def _context(request: Request) -> AppContext:
    context = request.app.state.context
    assert isinstance(context, AppContext)
    return context


@router.post("", status_code=201)
async def create_meter(body: MeterCreate, request: Request, caller: MeterWriter) -> dict[str, Any]:
    context = _context(request)
    transport: dict[str, Any]
    if isinstance(body.transport, TcpTransport):
        transport = {"tcp": f"[{body.transport.host}]:{body.transport.port}"}
    else:
        rtu = body.transport
        transport = {"rtu": rtu.device, "baud": rtu.baud, "parity": rtu.parity, "stopbits": rtu.stopbits}
    async with context.store.transaction() as session:
        await _check_site(session, caller, Scope.METERS_WRITE, body.siteId, NotFound("site", body.siteId))
        view = await meters.create_meter(
            session,
            site_id=body.siteId,
            station_id=body.stationId,
            charge_point_id=body.chargePointId,
            connector_id=body.connectorId,
            profile=body.profile,
            unit_id=body.unitId,
            now=context.clock.now(),
            **transport,
            **body.options(),
        )
    return view.to_json()


@router.get("")
async def list_meters(
    request: Request,
    caller: MeterReader,
    siteId: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = None,
) -> dict[str, Any]:
    reach = caller.permissions.reach(Scope.METERS_READ)
    async with _context(request).store.transaction() as session:
        companies = {site: company for site, company in await session.execute(select(Site.id, Site.company_id))}
        views = [
            view
            for view in await meters.list_meters(session, site_id=siteId)
            if reach.covers_site(companies.get(view.spec.site_id, ""), view.spec.site_id)
        ]
    start = _decode_cursor(cursor)
    page = views[start : start + limit]
    following = start + limit if start + limit < len(views) else None
    return {"items": [view.to_json() for view in page], "next": _encode_cursor(following)}


@router.get("/{meter_id}")
async def get_meter(meter_id: str, request: Request, caller: MeterReader) -> dict[str, Any]:
    async with _context(request).store.transaction() as session:
        await _check_meter(session, caller, Scope.METERS_READ, meter_id)
        return (await meters.get_meter(session, meter_id)).to_json()


@router.patch("/{meter_id}")
async def update_meter(meter_id: str, body: MeterUpdate, request: Request, caller: MeterWriter) -> dict[str, Any]:
    context = _context(request)
    async with context.store.transaction() as session:
        await _check_meter(session, caller, Scope.METERS_WRITE, meter_id)
        view = await meters.update_meter(
            session, meter_id, now=context.clock.now(), enabled=body.enabled, **body.options()
        )
    return view.to_json()


@router.delete("/{meter_id}", status_code=204)
async def delete_meter(meter_id: str, request: Request, caller: MeterWriter) -> Response:
    context = _context(request)
    async with context.store.transaction() as session:
        await _check_meter(session, caller, Scope.METERS_WRITE, meter_id)
        await meters.delete_meter(session, context.outbox, meter_id, now=context.clock.now())
    return Response(status_code=204)


def _encode_cursor(offset: int | None) -> str | None:
    return None if offset is None else base64.urlsafe_b64encode(f"o:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if not text.startswith("o:"):
            raise ValueError(text)
        return min(max(int(text[2:]), 0), 2**31 - 1)
    except ValueError:
        raise InvalidInput("not a cursor this API gave out", field="cursor") from None
