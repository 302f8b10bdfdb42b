"""Applications of the caller's own company (scope `applications:write`, granted at the company)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict

from chargenet.api.dependencies import Context
from chargenet.api.fields import Name
from chargenet.api.pagination import PageParams
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.services import applications
from chargenet.services.applications import ApplicationView, Credentials
from chargenet.services.callers import ApiApplication
from chargenet.services.pages import Page

Admin = Annotated[ApiApplication, Depends(require(Scope.APPLICATIONS_WRITE))]

router = APIRouter(tags=["applications"])


class NewApplication(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"name": "Roaming hub"}]})

    name: Name


@router.get("/applications", response_model=Page[ApplicationView])
async def list_applications(context: Context, caller: Admin, page: PageParams) -> Page[ApplicationView]:
    """The company's applications, ordered by `client_id`."""
    async with context.store.read() as session:
        return await applications.list_applications(session, caller, page)


@router.post("/applications", status_code=201, response_model=Credentials)
async def create_application(body: NewApplication, context: Context, caller: Admin) -> Credentials:
    """The new application's `client_id` and `client_secret`; the secret is shown only in this answer."""
    async with context.store.transaction() as session:
        return await applications.create_application(
            session, caller, context.keys.secret_hasher(), name=body.name, now=context.clock.now()
        )


@router.get("/applications/{client_id}", response_model=ApplicationView)
async def get_application(client_id: str, context: Context, caller: Admin) -> ApplicationView:
    async with context.store.read() as session:
        return await applications.get_application(session, caller, client_id)


@router.post("/applications/{client_id}/disable", response_model=ApplicationView)
async def disable_application(client_id: str, context: Context, caller: Admin) -> ApplicationView:
    async with context.store.transaction() as session:
        return await applications.set_enabled(session, caller, client_id, enabled=False, now=context.clock.now())


@router.post("/applications/{client_id}/enable", response_model=ApplicationView)
async def enable_application(client_id: str, context: Context, caller: Admin) -> ApplicationView:
    async with context.store.transaction() as session:
        return await applications.set_enabled(session, caller, client_id, enabled=True, now=context.clock.now())


@router.post("/applications/{client_id}/rotate-secret", response_model=Credentials)
async def rotate_secret(client_id: str, context: Context, caller: Admin) -> Credentials:
    async with context.store.transaction() as session:
        return await applications.rotate_secret(
            session, caller, context.keys.secret_hasher(), client_id, now=context.clock.now()
        )


@router.delete("/applications/{client_id}", status_code=204, response_class=Response)
async def delete_application(client_id: str, context: Context, caller: Admin) -> Response:
    async with context.store.transaction() as session:
        await applications.delete_application(session, caller, client_id, now=context.clock.now())
    return Response(status_code=204)
