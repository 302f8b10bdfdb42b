"""Groups of the caller's own company (scope `groups:write`). A site-level grant manages only groups
anchored at that site, so it cannot hand out more than it reaches (`chargenet.services.groups`). Every change is
written to the audit log by the use case."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field

from chargenet.api.bounds import Bounds, Integral
from chargenet.api.dependencies import Context
from chargenet.api.fields import Name, ObjectId
from chargenet.api.pagination import PageParams
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.domain.text import INT32_MAX
from chargenet.services import groups
from chargenet.services.callers import ApiApplication
from chargenet.services.groups import GroupView
from chargenet.services.pages import Page

Admin = Annotated[ApiApplication, Depends(require(Scope.GROUPS_WRITE))]

router = APIRouter(tags=["groups"])


class NewGroup(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"name": "Depot partners", "scopes": ["charge-points:read", "sessions:write"]}]
        },
    )

    name: Name
    site_id: ObjectId | None = Field(default=None, alias="siteId", description="anchored at the company when absent")
    scopes: list[Scope] = Field(min_length=1, max_length=len(Scope))


class GroupChange(BaseModel):
    """Only what is given changes; `siteId: null` anchors the group at the company."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: Name | None = None
    site_id: ObjectId | None = Field(default=None, alias="siteId")
    scopes: list[Scope] | None = Field(default=None, min_length=1, max_length=len(Scope))
    version: Annotated[int, Bounds(1, INT32_MAX), Integral] | None = Field(
        default=None, description="refuse the change (409) unless the group is at this version"
    )


@router.get("/groups", response_model=Page[GroupView])
async def list_groups(context: Context, caller: Admin, page: PageParams) -> Page[GroupView]:
    """The groups the caller may manage, ordered by id: all of its company's with a company-level grant,
    otherwise those anchored at the sites it holds `groups:write` on."""
    async with context.store.read() as session:
        return await groups.list_groups(session, caller, page)


@router.post("/groups", status_code=201, response_model=GroupView)
async def create_group(body: NewGroup, context: Context, caller: Admin) -> GroupView:
    async with context.store.transaction() as session:
        return await groups.create_group(
            session,
            caller,
            site_id=body.site_id,
            name=body.name,
            scopes=[s.value for s in body.scopes],
            now=context.clock.now(),
        )


@router.get("/groups/{group_id}", response_model=GroupView)
async def get_group(group_id: str, context: Context, caller: Admin) -> GroupView:
    async with context.store.read() as session:
        return await groups.get_group(session, caller, group_id)


@router.patch("/groups/{group_id}", response_model=GroupView)
async def update_group(group_id: str, body: GroupChange, context: Context, caller: Admin) -> GroupView:
    """Rename the group, change its scopes or move its anchor (to another site of the company, or the company)."""
    async with context.store.transaction() as session:
        return await groups.update_group(
            session,
            caller,
            group_id,
            now=context.clock.now(),
            name=body.name,
            scopes=None if body.scopes is None else [s.value for s in body.scopes],
            site_id=body.site_id if "site_id" in body.model_fields_set else groups.KEEP,
            expected_version=body.version,
        )


@router.delete("/groups/{group_id}", status_code=204, response_class=Response)
async def delete_group(group_id: str, context: Context, caller: Admin) -> Response:
    async with context.store.transaction() as session:
        await groups.delete_group(session, caller, group_id, now=context.clock.now())
    return Response(status_code=204)


@router.put("/groups/{group_id}/applications/{client_id}", status_code=204, response_class=Response)
async def add_application(group_id: str, client_id: str, context: Context, caller: Admin) -> Response:
    async with context.store.transaction() as session:
        await groups.add_app(session, caller, group_id, client_id, now=context.clock.now())
    return Response(status_code=204)


@router.delete("/groups/{group_id}/applications/{client_id}", status_code=204, response_class=Response)
async def remove_application(group_id: str, client_id: str, context: Context, caller: Admin) -> Response:
    async with context.store.transaction() as session:
        await groups.remove_app(session, caller, group_id, client_id, now=context.clock.now())
    return Response(status_code=204)
