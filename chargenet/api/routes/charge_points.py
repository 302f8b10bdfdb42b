"""`/charge-points` (`charge-points:read`): what partners poll."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from starlette.responses import Response

from chargenet.api.dependencies import Context, Directory
from chargenet.api.pagination import PageParams
from chargenet.api.rendering import RenderedPages
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.services import charge_points
from chargenet.services.callers import ApiApplication
from chargenet.services.charge_points import ChargePointView
from chargenet.services.pages import Page

ChargePointReader = Annotated[ApiApplication, Depends(require(Scope.CHARGE_POINTS_READ))]

router = APIRouter(tags=["charge points"])
RENDERED = RenderedPages[ChargePointView]()


@router.get("/charge-points", response_model=Page[ChargePointView])
async def list_charge_points(
    context: Context,
    caller: ChargePointReader,
    page: PageParams,
    directory: Directory,
    site_id: Annotated[str | None, Query(alias="siteId", max_length=64)] = None,
) -> Response:
    """The charge points the caller's groups reach, with their connectors' last known status."""
    listed = await charge_points.list_charge_points(
        context.store.read_statement, caller, context.edge, page, site_id=site_id, directory=directory
    )
    return RENDERED.response(listed)


@router.get("/charge-points/{charge_point_id}", response_model=ChargePointView)
async def get_charge_point(
    charge_point_id: str, context: Context, caller: ChargePointReader, directory: Directory
) -> Response:
    """One charge point the caller's groups reach, with its connectors' last known status."""
    found = await charge_points.get_charge_point(
        context.store.read_statement, caller, context.edge, charge_point_id, directory=directory
    )
    return RENDERED.item_response(found)
