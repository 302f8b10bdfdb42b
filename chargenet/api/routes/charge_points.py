from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from chargenet.api.pagination import Page, encode_cursor, page_params
from chargenet.api.security import require
from chargenet.auth.server import Caller
from chargenet.domain.scopes import Scope
from chargenet.errors import NotFound
from chargenet.services import catalog

ChargePointReader = Annotated[Caller, Depends(require(Scope.CHARGE_POINTS_READ))]
PageParams = Annotated[Page, Depends(page_params)]

router = APIRouter(tags=["charge points"])


@router.get("/charge-points")
async def list_charge_points(
    request: Request,
    caller: ChargePointReader,
    page: PageParams,
    site_id: Annotated[str | None, Query(alias="siteId", max_length=64)] = None,
) -> dict[str, Any]:
    """The charge points the caller's groups reach, with their connectors' last known status."""
    async with request.app.state.context.store.transaction() as session:
        rows = await catalog.list_charge_points(
            session,
            caller.permissions.reach(Scope.CHARGE_POINTS_READ),
            limit=page.limit,
            after=page.after,
            site_id=site_id,
        )
    more = len(rows) == page.limit
    return {"items": [r.to_json() for r in rows], "next": encode_cursor(rows[-1].id) if more and rows else None}


@router.get("/charge-points/{charge_point_id}")
async def get_charge_point(charge_point_id: str, request: Request, caller: ChargePointReader) -> dict[str, Any]:
    async with request.app.state.context.store.transaction() as session:
        row = await catalog.get_charge_point(
            session, caller.permissions.reach(Scope.CHARGE_POINTS_READ), charge_point_id
        )
    if row is None:
        raise NotFound("charge point", charge_point_id)
    return row.to_json()
