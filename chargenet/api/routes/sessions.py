"""`POST /sessions`, `POST /sessions/{transactionId}/stop`, `GET /transactions` (decisions.md §1)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from chargenet.api.bounds import Int32Path
from chargenet.api.edge_access import ScopedCaller, require
from chargenet.edge.hub import Edge
from chargenet.services import sessions

router = APIRouter(tags=["sessions"])

SessionWriter = Annotated[ScopedCaller, Depends(require("sessions:write"))]
TransactionReader = Annotated[ScopedCaller, Depends(require("transactions:read"))]


class StartSession(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chargePointId: StrictStr = Field(min_length=1, max_length=64)
    connectorId: StrictInt = Field(ge=1)
    idTag: StrictStr = Field(min_length=1, max_length=20)


def _edge(request: Request) -> Edge:
    edge = request.app.state.context.edge
    assert isinstance(edge, Edge)
    return edge


@router.post("/sessions", status_code=202)
async def start_session(body: StartSession, request: Request, caller: SessionWriter) -> JSONResponse:
    result = await sessions.start_session(
        request.app.state.context.store,
        _edge(request),
        caller.allowed,
        charge_point_id=body.chargePointId,
        connector_id=body.connectorId,
        id_tag=body.idTag,
    )
    return JSONResponse(result, status_code=202)


@router.post("/sessions/{transaction_id}/stop", status_code=202)
async def stop_session(transaction_id: Int32Path, request: Request, caller: SessionWriter) -> JSONResponse:
    result = await sessions.stop_session(
        request.app.state.context.store, _edge(request), caller.allowed, transaction_id=transaction_id
    )
    return JSONResponse(result, status_code=202)


@router.get("/transactions")
async def list_transactions(
    request: Request,
    caller: TransactionReader,
    site_id: Annotated[str | None, Query(alias="siteId", max_length=64)] = None,
    charge_point_id: Annotated[str | None, Query(alias="chargePointId", max_length=64)] = None,
    active: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> dict[str, Any]:
    async with request.app.state.context.store.transaction() as session:
        items, last = await sessions.list_transactions(
            session,
            caller.allowed,
            limit=limit,
            after=sessions.decode_cursor(cursor) if cursor else None,
            site_id=site_id,
            charge_point_id=charge_point_id,
            active=active,
        )
    return {"items": [i.to_json() for i in items], "next": sessions.encode_cursor(last) if last else None}
