"""`/api/v1/meters`: meter configuration and each meter's charging state and last reading.

Reading needs scope `meters:read`, changing needs `meters:write`, on the meter's site (or its company); the use
cases in `chargenet.services.meters` check it (a meter the caller's groups do not reach is 404, like one that does
not exist). Routes only parse, call and render; errors become RFC 9457 problems in `api/problems.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field

from chargenet.api.dependencies import Context
from chargenet.api.pagination import PageParams
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.services import meters
from chargenet.services.callers import ApiApplication
from chargenet.services.meters import MeterView
from chargenet.services.pages import Page

MeterReader = Annotated[ApiApplication, Depends(require(Scope.METERS_READ))]
MeterWriter = Annotated[ApiApplication, Depends(require(Scope.METERS_WRITE))]

router = APIRouter(prefix="/meters", tags=["meters"])


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


@router.post("", status_code=201, response_model=MeterView)
async def create_meter(body: MeterCreate, context: Context, caller: MeterWriter) -> MeterView:
    transport: dict[str, Any]
    if isinstance(body.transport, TcpTransport):
        transport = {"tcp": f"[{body.transport.host}]:{body.transport.port}"}
    else:
        rtu = body.transport
        transport = {"rtu": rtu.device, "baud": rtu.baud, "parity": rtu.parity, "stopbits": rtu.stopbits}
    async with context.store.transaction() as session:
        return await meters.create_meter(
            session,
            caller,
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


@router.get("", response_model=Page[MeterView])
async def list_meters(
    context: Context, caller: MeterReader, page: PageParams, siteId: str | None = None
) -> Page[MeterView]:
    async with context.store.read() as session:
        return await meters.list_meters(session, caller, page, site_id=siteId)


@router.get("/{meter_id}", response_model=MeterView)
async def get_meter(meter_id: str, context: Context, caller: MeterReader) -> MeterView:
    async with context.store.read() as session:
        return await meters.get_meter(session, caller, meter_id)


@router.patch("/{meter_id}", response_model=MeterView)
async def update_meter(meter_id: str, body: MeterUpdate, context: Context, caller: MeterWriter) -> MeterView:
    async with context.store.transaction() as session:
        return await meters.update_meter(
            session, caller, meter_id, now=context.clock.now(), enabled=body.enabled, **body.options()
        )


@router.delete("/{meter_id}", status_code=204, response_class=Response)
async def delete_meter(meter_id: str, context: Context, caller: MeterWriter) -> Response:
    async with context.store.transaction() as session:
        await meters.delete_meter(session, caller, context.outbox, meter_id, now=context.clock.now())
    return Response(status_code=204)
