"""Groups of the caller's own company (scope `groups:write`). A site-level grant manages only groups
anchored at that site, so it cannot hand out more than it reaches."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field

from chargenet.api.pagination import Page, page_params
from chargenet.api.security import require
from chargenet.auth.errors import InsufficientScope
from chargenet.auth.server import Caller
from chargenet.context import AppContext
from chargenet.domain.scopes import Scope
from chargenet.errors import NotFound
from chargenet.services import groups

Admin = Annotated[Caller, Depends(require(Scope.GROUPS_WRITE))]
PageParams = Annotated[Page, Depends(page_params)]

router = APIRouter(tags=["groups"])


class NewGroup(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    site_id: str | None = Field(default=None, alias="siteId", max_length=64)
    scopes: list[str] = Field(min_length=1, max_length=20)


def _context(request: Request) -> AppContext:
    context: AppContext = request.app.state.context
    return context


def _check(caller: Caller, site_id: str | None) -> str:
    company_id = caller.principal.company_id
    if not caller.permissions.allows(Scope.GROUPS_WRITE, company_id, site_id):
        if site_id is not None and not caller.permissions.reach(Scope.GROUPS_WRITE).covers_site(company_id, site_id):
            raise NotFound("site", site_id)
        raise InsufficientScope(Scope.GROUPS_WRITE.value)
    return company_id


async def _reachable(request: Request, caller: Caller, group_id: str) -> groups.GroupView:
    async with _context(request).store.transaction() as session:
        view = await groups.get_group(session, group_id, company_id=caller.principal.company_id)
    if not caller.permissions.allows(Scope.GROUPS_WRITE, view.company_id, view.site_id):
        raise NotFound("group", group_id)
    return view


@router.get("/groups")
async def list_groups(request: Request, caller: Admin, page: PageParams) -> dict[str, Any]:
    """The groups the caller may manage, ordered by id: all of its company's with a company-level grant,
    otherwise those anchored at the sites it holds `groups:write` on. The filter is in the query, so
    every page is full until the last."""
    company_id = caller.principal.company_id
    reach = caller.permissions.reach(Scope.GROUPS_WRITE)
    site_ids = None if company_id in reach.companies else reach.sites
    async with _context(request).store.transaction() as session:
        rows = await groups.list_groups(
            session, company_id=company_id, site_ids=site_ids, limit=page.fetch, after=page.after
        )
    return page.answer(rows, lambda g: g.id, groups.GroupView.to_json)


@router.post("/groups", status_code=201)
async def create_group(body: NewGroup, request: Request, caller: Admin) -> dict[str, Any]:
    company_id = _check(caller, body.site_id)
    ctx = _context(request)
    async with ctx.store.transaction() as session:
        view = await groups.create_group(
            session,
            company_id=company_id,
            site_id=body.site_id,
            name=body.name,
            scopes=body.scopes,
            now=ctx.clock.now(),
        )
    return view.to_json()


@router.get("/groups/{group_id}")
async def get_group(group_id: str, request: Request, caller: Admin) -> dict[str, Any]:
    return (await _reachable(request, caller, group_id)).to_json()


@router.delete("/groups/{group_id}", status_code=204)
async def delete_group(group_id: str, request: Request, caller: Admin) -> Response:
    view = await _reachable(request, caller, group_id)
    async with _context(request).store.transaction() as session:
        await groups.delete_group(session, view.id, company_id=view.company_id)
    return Response(status_code=204)


@router.put("/groups/{group_id}/applications/{client_id}", status_code=204)
async def add_application(group_id: str, client_id: str, request: Request, caller: Admin) -> Response:
    view = await _reachable(request, caller, group_id)
    async with _context(request).store.transaction() as session:
        await groups.add_app(session, view.id, client_id, company_id=view.company_id)
    return Response(status_code=204)


@router.delete("/groups/{group_id}/applications/{client_id}", status_code=204)
async def remove_application(group_id: str, client_id: str, request: Request, caller: Admin) -> Response:
    view = await _reachable(request, caller, group_id)
    async with _context(request).store.transaction() as session:
        await groups.remove_app(session, view.id, client_id, company_id=view.company_id)
    return Response(status_code=204)
