"""A site's circuits, its power as the allocator shares it, and where a station hangs (decisions.md "Site power"):
`/sites/{siteId}/circuits`, `/sites/{siteId}/power` and `/sites/{siteId}/stations/{stationId}/circuit`. Read with
`sites:read`, change with `sites:write`, as the site's other settings; the use cases check both."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictStr, WithJsonSchema

from chargenet.api.bounds import Bounds, Integral
from chargenet.api.dependencies import Context
from chargenet.api.fields import Name, ObjectId
from chargenet.api.pagination import PageParams
from chargenet.api.routes.meters import RtuTransport, TcpTransport
from chargenet.api.security import require
from chargenet.domain.circuits import MINIMUM_SESSION_A, PHASE_CHOICES
from chargenet.domain.scopes import Scope
from chargenet.domain.text import INT32_MAX
from chargenet.meters.profiles import PROFILES
from chargenet.meters.spec import POLL_INTERVAL_S, UNIT_IDS
from chargenet.services import circuits, grid_meters, site_power
from chargenet.services.callers import ApiApplication
from chargenet.services.circuits import PRIORITIES, CircuitView, StationCircuitView
from chargenet.services.grid_meters import GridMeterView
from chargenet.services.pages import Page
from chargenet.services.site_power import SitePowerHistoryView, SitePowerView

SiteReader = Annotated[ApiApplication, Depends(require(Scope.SITES_READ))]
SiteWriter = Annotated[ApiApplication, Depends(require(Scope.SITES_WRITE))]
MeterReader = Annotated[ApiApplication, Depends(require(Scope.METERS_READ))]
MeterWriter = Annotated[ApiApplication, Depends(require(Scope.METERS_WRITE))]

router = APIRouter(tags=["site power"])

Amps = Annotated[float, Field(strict=True, ge=0, le=100_000, description="amperes per phase")]
Limit = Annotated[
    float,
    Field(
        strict=True, ge=MINIMUM_SESSION_A, le=100_000, description="amperes per phase; at least one session's minimum"
    ),
]
Phases = Annotated[StrictStr, Field(json_schema_extra={"enum": list(PHASE_CHOICES)})]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class NewCircuit(_Body):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"name": "Grid connection", "limitAmps": 250, "marginAmps": 10}]}
    )

    name: Name
    limitAmps: Limit = Field(description="the circuit's limit, per phase; at least 6 A above its margin")
    parentId: ObjectId | None = Field(default=None, description="the circuit above; none: the grid connection")
    meterId: ObjectId | None = Field(default=None, description="a grid meter of the site measuring this circuit")
    marginAmps: Amps = Field(default=0.0, description="kept free below the limit")
    phases: Phases = Field(default="L1L2L3", description="the phases the circuit carries")


class CircuitChange(_Body):
    name: Name | None = None
    limitAmps: Limit | None = None
    marginAmps: Amps | None = None
    parentId: ObjectId | None = None
    toRoot: StrictBool = Field(default=False, description="make it the site's top circuit")
    meterId: ObjectId | None = None
    removeMeter: StrictBool = False
    phases: Phases | None = None
    version: Annotated[int, Bounds(1, INT32_MAX), Integral] | None = Field(
        default=None, description="the version the change was made from; refused (409) when it changed since"
    )


class StationPlacement(_Body):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"circuitId": "circuit_01H...", "phases": "L2", "priority": 0}]}
    )

    circuitId: ObjectId | None = Field(default=None, description="kept when absent; needed the first time")
    phases: Phases | None = Field(default=None, description="kept when absent; needed the first time")
    priority: Annotated[int, Bounds(PRIORITIES.start, PRIORITIES.stop - 1), Integral] | None = Field(
        default=None, description="higher is served first (0 when never given)"
    )


@router.get("/sites/{site_id}/circuits", response_model=Page[CircuitView])
async def list_circuits(site_id: str, context: Context, caller: SiteReader, page: PageParams) -> Page[CircuitView]:
    async with context.store.read() as session:
        return await circuits.list_circuits(session, caller, page, site_id=site_id)


@router.post("/sites/{site_id}/circuits", status_code=201, response_model=CircuitView)
async def create_circuit(site_id: str, body: NewCircuit, context: Context, caller: SiteWriter) -> CircuitView:
    async with context.store.transaction() as session:
        return await circuits.create_circuit(
            session,
            caller,
            site_id=site_id,
            name=body.name,
            limit_amps=body.limitAmps,
            now=context.clock.now(),
            parent_id=body.parentId,
            meter_id=body.meterId,
            margin_amps=body.marginAmps,
            phases=body.phases,
        )


@router.get("/sites/{site_id}/circuits/{circuit_id}", response_model=CircuitView)
async def get_circuit(site_id: str, circuit_id: str, context: Context, caller: SiteReader) -> CircuitView:
    async with context.store.read() as session:
        return await circuits.get_circuit(session, caller, circuit_id, site_id=site_id)


@router.patch("/sites/{site_id}/circuits/{circuit_id}", response_model=CircuitView)
async def update_circuit(
    site_id: str, circuit_id: str, body: CircuitChange, context: Context, caller: SiteWriter
) -> CircuitView:
    async with context.store.transaction() as session:
        return await circuits.update_circuit(
            session,
            caller,
            circuit_id,
            now=context.clock.now(),
            site_id=site_id,
            name=body.name,
            limit_amps=body.limitAmps,
            margin_amps=body.marginAmps,
            parent_id=body.parentId,
            to_root=body.toRoot,
            meter_id=body.meterId,
            no_meter=body.removeMeter,
            phases=body.phases,
            expected_version=body.version,
        )


@router.delete("/sites/{site_id}/circuits/{circuit_id}", status_code=204, response_class=Response)
async def delete_circuit(site_id: str, circuit_id: str, context: Context, caller: SiteWriter) -> Response:
    async with context.store.transaction() as session:
        await circuits.delete_circuit(session, caller, circuit_id, now=context.clock.now(), site_id=site_id)
    return Response(status_code=204)


@router.get("/sites/{site_id}/power", response_model=SitePowerView)
async def get_site_power(site_id: str, context: Context, caller: SiteReader) -> SitePowerView:
    """The circuits with their limit, measured and allocated current per phase, and the sessions in progress with
    their allowance, draw and whether they are paused."""
    silent_after = timedelta(seconds=context.settings.grid_meter_silent_s)
    async with context.store.read() as session:
        return await site_power.site_power(session, caller, site_id, now=context.clock.now(), silent_after=silent_after)


@router.get("/sites/{site_id}/power/history", response_model=SitePowerHistoryView)
async def get_site_power_history(
    site_id: str,
    context: Context,
    caller: SiteReader,
    hours: Annotated[int, Query(ge=1, le=24, description="how many hours back (6)")] = 6,
) -> SitePowerHistoryView:
    """Each circuit's limit, measured load and stations' draw over the last hours, one sample a minute."""
    since = context.clock.now() - timedelta(hours=hours)
    async with context.store.read() as session:
        return await site_power.site_power_history(session, caller, site_id, since=since)


@router.put("/sites/{site_id}/stations/{station_id}/circuit", response_model=StationCircuitView)
async def place_station(
    site_id: str, station_id: str, body: StationPlacement, context: Context, caller: SiteWriter
) -> StationCircuitView:
    """Hang the station on a circuit of its site, with the phases its connectors use and its priority."""
    async with context.store.transaction() as session:
        return await circuits.place_station(
            session,
            caller,
            station_id,
            now=context.clock.now(),
            site_id=site_id,
            circuit_id=body.circuitId,
            phases=body.phases,
            priority=body.priority,
        )


class NewGridMeter(_Body):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"profile": "sdm630", "unitId": 1, "transport": {"type": "tcp", "host": "10.0.0.9"}}]
        }
    )

    profile: Annotated[StrictStr, WithJsonSchema({"type": "string", "enum": sorted(PROFILES)})]
    unitId: Annotated[int, Bounds(UNIT_IDS.start, UNIT_IDS.stop - 1), Integral] = Field(
        description="the Modbus unit id on its bus"
    )
    transport: Annotated[TcpTransport | RtuTransport, Field(discriminator="type")]
    pollInterval: Annotated[StrictFloat, Field(ge=POLL_INTERVAL_S[0], le=POLL_INTERVAL_S[1])] | None = Field(
        default=None, description="seconds between readings (1)"
    )


@router.post("/sites/{site_id}/grid-meters", status_code=201, response_model=GridMeterView)
async def create_grid_meter(site_id: str, body: NewGridMeter, context: Context, caller: MeterWriter) -> GridMeterView:
    """A Modbus meter with role `grid`: it measures a circuit (`meterId` of the circuit), with no station and no
    sessions."""
    transport: dict[str, Any]
    if isinstance(body.transport, TcpTransport):
        transport = {"tcp": f"[{body.transport.host}]:{body.transport.port}"}
    else:
        rtu = body.transport
        transport = {"rtu": rtu.device, "baud": rtu.baud, "parity": rtu.parity, "stopbits": rtu.stopbits}
    async with context.store.transaction() as session:
        return await grid_meters.create_grid_meter(
            session,
            caller,
            site_id=site_id,
            profile=body.profile,
            unit_id=body.unitId,
            now=context.clock.now(),
            poll_interval=body.pollInterval,
            **transport,
        )


@router.get("/sites/{site_id}/grid-meters", response_model=Page[GridMeterView])
async def list_grid_meters(
    site_id: str, context: Context, caller: MeterReader, page: PageParams
) -> Page[GridMeterView]:
    async with context.store.read() as session:
        return await grid_meters.list_grid_meters(session, caller, page, site_id=site_id)


@router.get("/sites/{site_id}/grid-meters/{meter_id}", response_model=GridMeterView)
async def get_grid_meter(site_id: str, meter_id: str, context: Context, caller: MeterReader) -> GridMeterView:
    async with context.store.read() as session:
        return await grid_meters.get_grid_meter(session, caller, meter_id, site_id=site_id)


@router.delete("/sites/{site_id}/grid-meters/{meter_id}", status_code=204, response_class=Response)
async def delete_grid_meter(site_id: str, meter_id: str, context: Context, caller: MeterWriter) -> Response:
    async with context.store.transaction() as session:
        await grid_meters.delete_grid_meter(session, caller, meter_id, now=context.clock.now(), site_id=site_id)
    return Response(status_code=204)
