"""Station commands on a charge point: reset, unlock, availability, trigger (scope charge-points:write).

Each answers 200 `{"status": <the station's answer>}`, 503 when the station is not connected, 504 when it did
not answer, 502 when it answered with a CALLERROR (its code and description are in the problem's
`stationErrorCode` and `stationErrorDescription`)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from chargenet.api.dependencies import Context
from chargenet.api.fields import ConnectorId, NumberedConnectorId
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.domain.triggers import MessageTrigger
from chargenet.services import charge_point_commands
from chargenet.services.callers import ApiApplication
from chargenet.services.charge_point_commands import AvailabilityAnswer, CommandAnswer

router = APIRouter(tags=["charge point commands"])

Commander = Annotated[ApiApplication, Depends(require(Scope.CHARGE_POINTS_WRITE))]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResetBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"type": "Soft"}]})

    type: Literal["Soft", "Hard"]


class UnlockBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"connectorId": 1}]})

    connectorId: NumberedConnectorId


class AvailabilityBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"connectorId": 0, "type": "Inoperative"}]})

    connectorId: ConnectorId = Field(description="0: the whole charge point")
    type: Literal["Inoperative", "Operative"]


class TriggerBody(_Body):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"requestedMessage": "StatusNotification", "connectorId": 1}]}
    )

    requestedMessage: MessageTrigger
    connectorId: ConnectorId | None = None


async def _send(
    context: Context,
    caller: ApiApplication,
    charge_point_id: str,
    action: str,
    payload: dict[str, object],
    connector_id: int = 0,
) -> CommandAnswer:
    return await charge_point_commands.charge_point_command(
        context.store.read,
        context.stations,
        caller,
        charge_point_id=charge_point_id,
        action=action,
        payload=payload,
        connector_id=connector_id,
    )


@router.post("/charge-points/{charge_point_id}/reset", response_model=CommandAnswer)
async def reset(charge_point_id: str, body: ResetBody, context: Context, caller: Commander) -> CommandAnswer:
    return await _send(context, caller, charge_point_id, "Reset", {"type": body.type})


@router.post("/charge-points/{charge_point_id}/unlock", response_model=CommandAnswer)
async def unlock(charge_point_id: str, body: UnlockBody, context: Context, caller: Commander) -> CommandAnswer:
    payload: dict[str, object] = {"connectorId": body.connectorId}
    return await _send(context, caller, charge_point_id, "UnlockConnector", payload, body.connectorId)


@router.post("/charge-points/{charge_point_id}/availability", response_model=AvailabilityAnswer)
async def availability(
    charge_point_id: str, body: AvailabilityBody, context: Context, caller: Commander
) -> AvailabilityAnswer:
    """`connectorId` 0 is the whole charge point: on a station with several, each of its connectors is sent its own
    ChangeAvailability, and the answer adds each one's status under `connectors`."""
    return await charge_point_commands.change_availability(
        context.store.read,
        context.stations,
        caller,
        charge_point_id=charge_point_id,
        connector_id=body.connectorId,
        availability=body.type,
    )


@router.post("/charge-points/{charge_point_id}/trigger", response_model=CommandAnswer)
async def trigger(charge_point_id: str, body: TriggerBody, context: Context, caller: Commander) -> CommandAnswer:
    payload: dict[str, object] = {"requestedMessage": body.requestedMessage}
    if body.connectorId is not None:
        payload["connectorId"] = body.connectorId
    return await _send(context, caller, charge_point_id, "TriggerMessage", payload, body.connectorId or 0)
