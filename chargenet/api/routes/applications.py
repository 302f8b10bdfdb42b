"""Applications of the caller's own company (scope `applications:write`, granted at the company)."""

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
from chargenet.services import applications

Admin = Annotated[Caller, Depends(require(Scope.APPLICATIONS_WRITE))]
PageParams = Annotated[Page, Depends(page_params)]

router = APIRouter(tags=["applications"])


class NewApplication(BaseModel):
    name: str = Field(min_length=1, max_length=200)


def _company(caller: Caller) -> str:
    """Applications belong to a company, so only a company-level grant manages them."""
    company_id = caller.principal.company_id
    if not caller.permissions.allows(Scope.APPLICATIONS_WRITE, company_id):
        raise InsufficientScope(Scope.APPLICATIONS_WRITE.value)
    return company_id


def _context(request: Request) -> AppContext:
    context: AppContext = request.app.state.context
    return context


@router.get("/applications")
async def list_applications(request: Request, caller: Admin, page: PageParams) -> dict[str, Any]:
    """The company's applications, ordered by `client_id`."""
    company_id = _company(caller)
    async with _context(request).store.transaction() as session:
        rows = await applications.list_applications(session, company_id=company_id, limit=page.fetch, after=page.after)
    return page.answer(rows, lambda a: a.client_id, applications.ApplicationView.to_json)


@router.post("/applications", status_code=201)
async def create_application(body: NewApplication, request: Request, caller: Admin) -> dict[str, Any]:
    """The new application's `client_id` and `client_secret`; the secret is shown only in this answer."""
    company_id = _company(caller)
    ctx = _context(request)
    async with ctx.store.transaction() as session:
        created = await applications.create_application(
            session, ctx.keys.secret_hasher(), company_id=company_id, name=body.name, now=ctx.clock.now()
        )
    return created.to_json()


@router.get("/applications/{client_id}")
async def get_application(client_id: str, request: Request, caller: Admin) -> dict[str, Any]:
    company_id = _company(caller)
    async with _context(request).store.transaction() as session:
        view = await applications.get_application(session, client_id, company_id=company_id)
    return view.to_json()


async def _set_enabled(request: Request, caller: Caller, client_id: str, enabled: bool) -> dict[str, Any]:
    company_id = _company(caller)
    ctx = _context(request)
    async with ctx.store.transaction() as session:
        view = await applications.set_enabled(
            session, client_id, enabled=enabled, now=ctx.clock.now(), company_id=company_id
        )
    return view.to_json()


@router.post("/applications/{client_id}/disable")
async def disable_application(client_id: str, request: Request, caller: Admin) -> dict[str, Any]:
    return await _set_enabled(request, caller, client_id, False)


@router.post("/applications/{client_id}/enable")
async def enable_application(client_id: str, request: Request, caller: Admin) -> dict[str, Any]:
    return await _set_enabled(request, caller, client_id, True)


@router.post("/applications/{client_id}/rotate-secret")
async def rotate_secret(client_id: str, request: Request, caller: Admin) -> dict[str, Any]:
    company_id = _company(caller)
    ctx = _context(request)
    async with ctx.store.transaction() as session:
        rotated = await applications.rotate_secret(
            session, ctx.keys.secret_hasher(), client_id, now=ctx.clock.now(), company_id=company_id
        )
    return rotated.to_json()


@router.delete("/applications/{client_id}", status_code=204)
async def delete_application(client_id: str, request: Request, caller: Admin) -> Response:
    company_id = _company(caller)
    async with _context(request).store.transaction() as session:
        await applications.delete_application(session, client_id, company_id=company_id)
    return Response(status_code=204)
