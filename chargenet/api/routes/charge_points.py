from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.api.pagination import Page, encode_cursor, page_params
from chargenet.api.security import require
from chargenet.auth.permissions import Reach
from chargenet.auth.server import Caller
from chargenet.domain.scopes import Scope
from chargenet.errors import NotFound
from chargenet.services import catalog, meters
from chargenet.store.models import StationPresence

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
    return await charge_point_page(request, caller.permissions.reach(Scope.CHARGE_POINTS_READ), page, site_id)


async def charge_point_page(request: Request, reach: Reach, page: Page, site_id: str | None) -> dict[str, Any]:
    """One page of `GET /charge-points` for what `reach` covers (the benchmark calls it without the bearer check)."""
    async with request.app.state.context.store.transaction() as session:
        rows = await catalog.list_charge_points(session, reach, limit=page.limit, after=page.after, site_id=site_id)
        items = await _with_state(request, session, [r.to_json() for r in rows])
    more = len(rows) == page.limit
    return {"items": items, "next": encode_cursor(rows[-1].id) if more and rows else None}


@router.get("/charge-points/{charge_point_id}")
async def get_charge_point(charge_point_id: str, request: Request, caller: ChargePointReader) -> dict[str, Any]:
    async with request.app.state.context.store.transaction() as session:
        row = await catalog.get_charge_point(
            session, caller.permissions.reach(Scope.CHARGE_POINTS_READ), charge_point_id
        )
        if row is None:
            raise NotFound("charge point", charge_point_id)
        [item] = await _with_state(request, session, [row.to_json()])
    return item


async def _with_state(request: Request, session: AsyncSession, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add how each charge point is reached and, where meters measure it, their charging state and last reading.

    `connection` is `connected` while its station holds an OCPP link to this process, `meter` for a station known
    only through meters, and `disconnected` otherwise (decisions.md §4)."""
    if not items:
        return items
    edge = request.app.state.context.edge
    station_ids = sorted({item["stationId"] for item in items})
    presence = {
        row.station_id: row
        for row in await session.scalars(select(StationPresence).where(StationPresence.station_id.in_(station_ids)))
    }
    metered: dict[str, list[dict[str, Any]]] = {}
    for site_id in sorted({item["siteId"] for item in items}):
        for view in await meters.list_meters(session, site_id=site_id):
            entry = {"id": view.id, "connectorId": view.spec.connector_id, "enabled": view.enabled}
            if view.status is not None:
                entry.update(view.status.to_json())
            metered.setdefault(view.spec.charge_point_id, []).append(entry)
    stations_with_meters = {item["stationId"] for item in items if item["id"] in metered}
    for item in items:
        station_id = item["stationId"]
        seen = presence.get(station_id)
        if edge is not None and edge.is_connected(station_id):
            item["connection"] = "connected"
        elif station_id in stations_with_meters and seen is None:
            item["connection"] = "meter"
        else:
            item["connection"] = "disconnected"
        item["lastHeartbeat"] = seen.last_heartbeat_at.isoformat() if seen and seen.last_heartbeat_at else None
        item["meters"] = metered.get(item["id"], [])
    return items
