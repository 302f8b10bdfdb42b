"""Station commands on a charge point: reset, unlock, availability, trigger (scope charge-points:write).

Each answers 200 `{"status": <the station's answer>}`, 503 when the station is not connected, 504 when it did
not answer, 502 when it answered with a CALLERROR (its code and description are in the problem's
`stationErrorCode` and `stationErrorDescription`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from chargenet.api.edge_access import ScopedCaller, require
from chargenet.edge.hub import Edge
from chargenet.services import sessions

router = APIRouter(tags=["charge point commands"])

Commander = Annotated[ScopedCaller, Depends(require("charge-points:write"))]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResetBody(_Body):
    type: Literal["Soft", "Hard"]


class UnlockBody(_Body):
    connectorId: StrictInt = Field(ge=1)


class AvailabilityBody(_Body):
    connectorId: StrictInt = Field(ge=0)
    type: Literal["Inoperative", "Operative"]


class TriggerBody(_Body):
    requestedMessage: Literal[
        "BootNotification",
        "DiagnosticsStatusNotification",
        "FirmwareStatusNotification",
        "Heartbeat",
        "MeterValues",
        "StatusNotification",
    ]
    connectorId: StrictInt | None = Field(default=None, ge=0)


def _edge(request: Request) -> Edge:
    edge = request.app.state.context.edge
    assert isinstance(edge, Edge)
    return edge


async def _send(
    request: Request,
    caller: ScopedCaller,
    charge_point_id: str,
    action: str,
    payload: dict[str, object],
    connector_id: int = 0,
) -> dict[str, str]:
    return await sessions.charge_point_command(
        request.app.state.context.store,
        _edge(request),
        caller.allowed,
        charge_point_id=charge_point_id,
        action=action,
        payload=payload,
        connector_id=connector_id,
    )


@router.post("/charge-points/{charge_point_id}/reset")
async def reset(charge_point_id: str, body: ResetBody, request: Request, caller: Commander) -> dict[str, str]:
    return await _send(request, caller, charge_point_id, "Reset", {"type": body.type})


@router.post("/charge-points/{charge_point_id}/unlock")
async def unlock(charge_point_id: str, body: UnlockBody, request: Request, caller: Commander) -> dict[str, str]:
    payload: dict[str, object] = {"connectorId": body.connectorId}
    return await _send(request, caller, charge_point_id, "UnlockConnector", payload, body.connectorId)


@router.post("/charge-points/{charge_point_id}/availability")
async def availability(
    charge_point_id: str, body: AvailabilityBody, request: Request, caller: Commander
) -> dict[str, Any]:
    """`connectorId` 0 is the whole charge point: on a station with several, each of its connectors is sent its own
    ChangeAvailability, and the answer adds each one's status under `connectors`."""
    return await sessions.change_availability(
        request.app.state.context.store,
        _edge(request),
        caller.allowed,
        charge_point_id=charge_point_id,
        connector_id=body.connectorId,
        availability=body.type,
    )


@router.post("/charge-points/{charge_point_id}/trigger")
async def trigger(charge_point_id: str, body: TriggerBody, request: Request, caller: Commander) -> dict[str, str]:
    payload: dict[str, object] = {"requestedMessage": body.requestedMessage}
    if body.connectorId is not None:
        payload["connectorId"] = body.connectorId
    return await _send(request, caller, charge_point_id, "TriggerMessage", payload, body.connectorId or 0)
