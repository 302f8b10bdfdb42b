"""`/sites`: read with `sites:read`, create and change with `sites:write` (decisions.md §3)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from chargenet.api.bounds import Bounds, Integral
from chargenet.api.dependencies import Context
from chargenet.api.fields import Name, ObjectId, OcppVersions, Secret, WebSocketUrl
from chargenet.api.pagination import PageParams
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.services import sites
from chargenet.services.callers import ApiApplication
from chargenet.services.pages import Page
from chargenet.services.sites import SiteView

SiteReader = Annotated[ApiApplication, Depends(require(Scope.SITES_READ))]
SiteWriter = Annotated[ApiApplication, Depends(require(Scope.SITES_WRITE))]

router = APIRouter(tags=["sites"])


class NewSite(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"name": "Depot North", "upstreamUrl": "wss://cpo.example/ocpp", "upstreamPassword": "s3cret"}]
        },
    )

    companyId: ObjectId | None = Field(default=None, description="the caller's own company when absent")
    name: Name
    upstreamUrl: WebSocketUrl | None = Field(default=None, description="the central system stations are relayed to")
    upstreamPassword: Secret | None = None
    upstreamOcppVersions: OcppVersions | None = Field(
        default=None,
        description="the OCPP versions the upstream takes, in any order; a station speaking another is answered by the"
        " edge as central system; default ocpp1.6",
    )


class SiteChange(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"name": "Depot South"}]})

    name: Name | None = None
    upstreamUrl: WebSocketUrl | None = Field(
        default=None, description="`null` with `removeUpstream` drops the upstream"
    )
    removeUpstream: StrictBool = Field(default=False, description="drop the upstream and its password")
    upstreamPassword: Secret | None = None
    removeUpstreamPassword: StrictBool = Field(default=False, description="drop the upstream password, keep the URL")
    upstreamOcppVersions: OcppVersions | None = Field(default=None, description="the OCPP versions the upstream takes")
    upstreamSecurityProfile: Annotated[int, Bounds(1, 3), Integral] | None = Field(
        default=None,
        description="of the link to the upstream: 1 password over ws:// or wss://, 2 password over wss:// only, 3 the"
        " site's client certificate over wss:// (set with its files by `chargenet admin site upstream-tls`)",
    )


@router.get("/sites", response_model=Page[SiteView])
async def list_sites(
    context: Context,
    caller: SiteReader,
    page: PageParams,
    company_id: Annotated[str | None, Query(alias="companyId", max_length=64)] = None,
) -> Page[SiteView]:
    """The sites the caller's groups reach with `sites:read`."""
    async with context.store.read() as session:
        return await sites.list_sites(session, caller, page, company_id=company_id)


@router.get("/sites/{site_id}", response_model=SiteView)
async def get_site(site_id: str, context: Context, caller: SiteReader) -> SiteView:
    async with context.store.read() as session:
        return await sites.get_site(session, caller, site_id)


@router.post("/sites", status_code=201, response_model=SiteView)
async def create_site(body: NewSite, context: Context, caller: SiteWriter) -> SiteView:
    """A new site; a company-level `sites:write` grant is needed. The upstream password is never shown again."""
    async with context.store.transaction() as session:
        return await sites.create_site(
            session,
            caller,
            context.keys.credential_cipher(),
            company_id=body.companyId or caller.permissions.company_id,
            name=body.name,
            now=context.clock.now(),
            upstream_url=body.upstreamUrl,
            upstream_password=body.upstreamPassword,
            upstream_ocpp_versions=body.upstreamOcppVersions,
        )


@router.patch("/sites/{site_id}", response_model=SiteView)
async def update_site(site_id: str, body: SiteChange, context: Context, caller: SiteWriter) -> SiteView:
    async with context.store.transaction() as session:
        return await sites.update_site(
            session,
            caller,
            context.keys.credential_cipher(),
            site_id,
            now=context.clock.now(),
            name=body.name,
            upstream_url=body.upstreamUrl,
            remove_upstream=body.removeUpstream,
            upstream_password=body.upstreamPassword,
            clear_upstream_password=body.removeUpstreamPassword,
            upstream_ocpp_versions=body.upstreamOcppVersions,
            upstream_security_profile=body.upstreamSecurityProfile,
        )
