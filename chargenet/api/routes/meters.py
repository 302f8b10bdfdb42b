"""`/api/v1/meters`: meter configuration and each meter's charging state and last reading.

Reading needs scope `meters:read`, changing needs `meters:write`, on the meter's site (or its company); the use
cases in `chargenet.services.meters` check it (a meter the caller's groups do not reach is 404, like one that does
not exist). Routes only parse, call and render; errors become RFC 9457 problems in `api/problems.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictStr, WithJsonSchema

from chargenet.api.bounds import Bounds, Integral
from chargenet.api.dependencies import Context
from chargenet.api.fields import NOT_BLANK, NumberedConnectorId, ObjectId, StationId
from chargenet.api.pagination import PageParams
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.domain.text import INT32_MAX
from chargenet.meters.bus import BAUD_RATES
from chargenet.meters.profiles import PROFILES
from chargenet.meters.spec import POLL_INTERVAL_S, UNIT_IDS, ThresholdSettings
from chargenet.services import meters
from chargenet.services.callers import ApiApplication
from chargenet.services.meters import MeterView
from chargenet.services.pages import Page

MeterReader = Annotated[ApiApplication, Depends(require(Scope.METERS_READ))]
MeterWriter = Annotated[ApiApplication, Depends(require(Scope.METERS_WRITE))]

router = APIRouter(prefix="/meters", tags=["meters"])


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


Positive = Annotated[StrictFloat, Field(gt=0)]
NotNegative = Annotated[StrictFloat, Field(ge=0)]


class Thresholds(_Body):
    idTag: Annotated[StrictStr, Field(min_length=1, max_length=255)] | None = Field(
        default=None, description="the idTag of its sessions; `METER-{id}` when absent"
    )
    pollInterval: Annotated[StrictFloat, Field(ge=POLL_INTERVAL_S[0], le=POLL_INTERVAL_S[1])] | None = Field(
        default=None, description="seconds between readings (5); shorter than `outageClose`"
    )
    startCurrent: Positive | None = Field(default=None, description="amperes that start a session (3)")
    stopCurrent: NotNegative | None = Field(
        default=None, description="amperes under which it stops (1); at most `startCurrent`"
    )
    startPower: Positive | None = Field(default=None, description="watts that start a session (500)")
    stopPower: NotNegative | None = Field(
        default=None, description="watts under which it stops (200); at most `startPower`"
    )
    stopGrace: NotNegative | None = Field(
        default=None, description="seconds under the stop thresholds before it stops (180)"
    )
    outageClose: Positive | None = Field(
        default=None, description="seconds without a good reading that close the session (900)"
    )

    def options(self) -> dict[str, Any]:
        thresholds = ThresholdSettings(
            start_current=self.startCurrent,
            stop_current=self.stopCurrent,
            start_power=self.startPower,
            stop_power=self.stopPower,
            stop_grace=self.stopGrace,
            outage_close=self.outageClose,
        )
        return {"id_tag": self.idTag, "poll_interval": self.pollInterval, "thresholds": thresholds}


class TcpTransport(_Body):
    type: Literal["tcp"]
    host: Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9._:%-]{1,255}$", description="a name or an IP address")]
    port: Annotated[int, Bounds(1, 65535), Integral] = 502


class RtuTransport(_Body):
    type: Literal["rtu"]
    device: Annotated[
        StrictStr, Field(min_length=1, max_length=255, pattern=NOT_BLANK, description="e.g. /dev/ttyUSB0")
    ]
    baud: Annotated[
        int, Bounds(1, INT32_MAX), Integral, WithJsonSchema({"type": "integer", "enum": list(BAUD_RATES)})
    ] = 9600
    parity: Literal["N", "E", "O"] = "N"
    stopbits: Annotated[int, Bounds(1, 2), Integral] = 1


class MeterCreate(Thresholds):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "siteId": "site_4f9q2x7m1cae",
                    "stationId": "CP-0042",
                    "connectorId": 1,
                    "profile": "sdm630",
                    "unitId": 1,
                    "transport": {"type": "tcp", "host": "10.0.0.20", "port": 502},
                }
            ]
        }
    )

    siteId: ObjectId
    stationId: StationId
    chargePointId: ObjectId | None = Field(default=None, description="the station's first charge point when absent")
    connectorId: NumberedConnectorId | None = Field(default=None, description="1 when absent")
    profile: Annotated[StrictStr, WithJsonSchema({"type": "string", "enum": sorted(PROFILES)})]
    unitId: Annotated[int, Bounds(UNIT_IDS.start, UNIT_IDS.stop - 1), Integral] = Field(
        description="the Modbus unit id on its bus"
    )
    transport: Annotated[TcpTransport | RtuTransport, Field(discriminator="type")]


class MeterUpdate(Thresholds):
    enabled: StrictBool | None = None


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
