"""`/stations` and a site's local authorization list: read with `sites:read`, create and change with `sites:write`
(decisions.md §3). A station's charge points are created with it (`chargePoints`, `connectors`)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query, Response
from pydantic import BaseModel, ConfigDict, Field, JsonValue, StrictBool, StrictInt

from chargenet.api.bounds import Bounds, Integral
from chargenet.api.dependencies import Context
from chargenet.api.fields import (
    AuthorizationKey,
    DateTime,
    IdToken,
    NumberedConnectorId,
    ObjectId,
    OcppVersions,
    Secret,
    StationId,
)
from chargenet.api.pagination import PageParams
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.domain.tenants import MAX_CHARGE_POINTS_PER_STATION, MAX_CONNECTORS_PER_CHARGE_POINT
from chargenet.domain.text import INT32_MAX
from chargenet.edge.ocpp201.commands import DEFAULT_TOKEN_TYPE, IdTokenType
from chargenet.services import localauth, station_import, stations
from chargenet.services.callers import ApiApplication
from chargenet.services.localauth import MAX_ID_TOKEN, LocalAuthView
from chargenet.services.pages import Page
from chargenet.services.station_import import ImportResult
from chargenet.services.stations import StationView

SiteReader = Annotated[ApiApplication, Depends(require(Scope.SITES_READ))]
SiteWriter = Annotated[ApiApplication, Depends(require(Scope.SITES_WRITE))]

router = APIRouter(tags=["stations"])

MAX_IMPORT_ROWS = 10_000  # and the body's 1 MiB; the command line imports files of any size


# Several charge points are created with their connectors: `connectors` is needed with them.
CONNECTORS_WITH_SEVERAL_CHARGE_POINTS: list[JsonValue] = [
    {"properties": {"chargePoints": {"maximum": 1}}},
    {
        "required": ["connectors"],
        "properties": {"connectors": {"type": "integer", "minimum": 1, "maximum": MAX_CONNECTORS_PER_CHARGE_POINT}},
    },
]


class NewStation(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": CONNECTORS_WITH_SEVERAL_CHARGE_POINTS,
            "examples": [
                {"siteId": "site_4f9q2x7m1cae", "id": "CP-0042", "password": "0123456789abcdef"},
                {"siteId": "site_4f9q2x7m1cae", "id": "HUB-7", "chargePoints": 4, "connectors": 2},
            ],
        },
    )

    siteId: ObjectId
    id: StationId = Field(description="the {stationId} of its OCPP URL")
    password: AuthorizationKey | None = Field(default=None, description="AuthorizationKey; none: security profile 0")
    upstreamPassword: Secret | None = None
    chargePoints: Annotated[int, Bounds(1, MAX_CHARGE_POINTS_PER_STATION), Integral] = Field(
        default=1, description="`{id}-1` .. `{id}-N` when more than one; otherwise the station's id"
    )
    connectors: NumberedConnectorId | None = Field(
        default=None, description="connectors per charge point, created ahead; needed with several charge points"
    )
    ocppVersions: OcppVersions | None = Field(
        default=None, description="the OCPP versions it may connect with, in any order; default both"
    )


class ImportedStation(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"anyOf": CONNECTORS_WITH_SEVERAL_CHARGE_POINTS})

    id: StationId = Field(description="the {stationId} of its OCPP URL")
    password: AuthorizationKey | None = Field(default=None, description="AuthorizationKey; none: security profile 0")
    upstreamPassword: Secret | None = None
    chargePoints: Annotated[int, Bounds(1, MAX_CHARGE_POINTS_PER_STATION), Integral] | None = None
    connectors: NumberedConnectorId | None = Field(
        default=None, description="connectors per charge point; needed with several charge points"
    )


class StationImport(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"stations": [{"id": "HUB-7", "chargePoints": 2, "connectors": 2}, {"id": "CP-0043"}]}]
        },
    )

    stations: list[ImportedStation] = Field(min_length=1, max_length=MAX_IMPORT_ROWS)


class StationChange(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"password": "fedcba9876543210"}]})

    password: AuthorizationKey | None = None
    upstreamPassword: Secret | None = None
    removePassword: StrictBool = Field(
        default=False, description="no AuthorizationKey; at security profile 1 this lowers it to 0 (owners only)"
    )
    removeUpstreamPassword: StrictBool = Field(default=False, description="the site's upstream password is used")
    ocppVersions: OcppVersions | None = Field(default=None, description="the OCPP versions it may connect with")
    serialNumber: str | None = Field(
        default=None, max_length=64, description="the CN of its profile 3 certificate in place of its id; '' removes it"
    )
    # A strict integer: JSON's false is no profile 0 (a Literal of integers takes booleans as their values).
    securityProfile: Annotated[StrictInt, Field(ge=0, le=3)] | None = Field(
        default=None,
        description="0: no password, 1: Basic over ws, 2: Basic over TLS, 3: TLS client certificate. Raising is "
        "allowed; lowering is an owner's act in the console or the command line (403 here), and the station must "
        "then be reconfigured on site",
    )


class LocalAuthEntry(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"status": "Accepted", "expiresAt": "2027-01-01T00:00:00Z"}]}
    )

    status: Literal["Accepted", "Blocked", "Expired", "Invalid"] = "Accepted"
    expiresAt: DateTime | None = None
    parentIdTag: IdToken | None = None
    idTokenType: IdTokenType = Field(
        default=DEFAULT_TOKEN_TYPE, description="what a 2.0.1 station is told the token is; 1.6 stations get the value"
    )
    version: Annotated[int, Bounds(1, INT32_MAX), Integral] | None = Field(
        default=None,
        description="refuse the change (409) unless the entry is at this version; a new entry needs none",
    )


TagPath = Annotated[
    str,
    Path(
        min_length=1,
        max_length=MAX_ID_TOKEN,
        description="the idTag (OCPP idToken: up to 36 characters; one over 20 reaches 2.0.1 stations only)",
    ),
]


@router.get("/stations", response_model=Page[StationView])
async def list_stations(
    context: Context,
    caller: SiteReader,
    page: PageParams,
    site_id: Annotated[str | None, Query(alias="siteId", max_length=64)] = None,
) -> Page[StationView]:
    async with context.store.read() as session:
        return await stations.list_stations(session, caller, page, site_id=site_id)


@router.get("/stations/{station_id}", response_model=StationView)
async def get_station(station_id: str, context: Context, caller: SiteReader) -> StationView:
    async with context.store.read() as session:
        return await stations.get_station(session, caller, station_id)


@router.post("/stations", status_code=201, response_model=StationView)
async def create_station(body: NewStation, context: Context, caller: SiteWriter) -> StationView:
    """Register a station and its charge points; its keys are stored hashed or encrypted and never shown."""
    async with context.store.transaction() as session:
        return await stations.create_station(
            session,
            caller,
            context.keys.secret_hasher(),
            context.keys.credential_cipher(),
            site_id=body.siteId,
            station_id=body.id,
            now=context.clock.now(),
            password=body.password,
            upstream_password=body.upstreamPassword,
            charge_points=body.chargePoints,
            connectors=body.connectors,
            ocpp_versions=body.ocppVersions,
        )


@router.post("/sites/{site_id}/stations/import", status_code=201, response_model=ImportResult, tags=["sites"])
async def import_stations(site_id: str, body: StationImport, context: Context, caller: SiteWriter) -> ImportResult:
    """Register many stations of one site at once: every row is checked first, then all are created or none
    (a refusal lists each bad row by its position, from 1). Larger sets: `chargenet admin station import`."""
    rows = station_import.rows_of(
        (n, item.model_dump(exclude_none=True)) for n, item in enumerate(body.stations, start=1)
    )
    async with context.store.transaction() as session:
        return await station_import.import_stations(
            session,
            caller,
            context.keys.secret_hasher(),
            context.keys.credential_cipher(),
            site_id=site_id,
            rows=rows,
            now=context.clock.now(),
        )


@router.patch("/stations/{station_id}", response_model=StationView)
async def update_station(station_id: str, body: StationChange, context: Context, caller: SiteWriter) -> StationView:
    """Change a station's AuthorizationKey, its upstream key or its security profile."""
    async with context.store.transaction() as session:
        return await stations.update_station(
            session,
            caller,
            context.keys.secret_hasher(),
            context.keys.credential_cipher(),
            station_id,
            now=context.clock.now(),
            password=body.password,
            upstream_password=body.upstreamPassword,
            clear_password=body.removePassword,
            clear_upstream_password=body.removeUpstreamPassword,
            ocpp_versions=body.ocppVersions,
            security_profile=body.securityProfile,
            serial_number=body.serialNumber,
        )


@router.get("/sites/{site_id}/local-authorization-list", response_model=Page[LocalAuthView], tags=["sites"])
async def list_local_authorization(
    site_id: str, context: Context, caller: SiteReader, page: PageParams
) -> Page[LocalAuthView]:
    """The site's local authorization list, ordered by idTag: tags the edge decides itself."""
    async with context.store.read() as session:
        return await localauth.list_entries(session, caller, page, site_id=site_id)


@router.put("/sites/{site_id}/local-authorization-list/{id_tag}", response_model=LocalAuthView, tags=["sites"])
async def put_local_authorization(
    site_id: str, id_tag: TagPath, body: LocalAuthEntry, context: Context, caller: SiteWriter
) -> LocalAuthView:
    """Add the tag to the site's list, or change its entry (`version`: only if no one changed it meanwhile)."""
    async with context.store.transaction() as session:
        return await localauth.add_entry(
            session,
            caller,
            site_id=site_id,
            id_tag=id_tag,
            now=context.clock.now(),
            status=body.status,
            expires_at=body.expiresAt,
            parent_id_tag=body.parentIdTag,
            expected_version=body.version,
            id_token_type=body.idTokenType,
        )


@router.delete(
    "/sites/{site_id}/local-authorization-list/{id_tag}", status_code=204, response_class=Response, tags=["sites"]
)
async def delete_local_authorization(site_id: str, id_tag: TagPath, context: Context, caller: SiteWriter) -> Response:
    async with context.store.transaction() as session:
        await localauth.remove_entry(session, caller, site_id=site_id, id_tag=id_tag, now=context.clock.now())
    return Response(status_code=204)
