"""Commands to a station as a whole (scope charge-points:write), the API's side of `chargenet admin station VERB`.

`reset`, `availability` (the station itself, OCPP connector 0) and `trigger` (without a connector) go to any
connected station. The central-system commands (configuration, cache, local list, reservations, data transfer)
are for stations whose site has no upstream: where it has one, that system owns them and the answer is 409.
Each answers 200 with the station's answer as OCPP 1.6 defines it, 503 when the station is not connected, 504
when it did not answer, 502 when it answered with a CALLERROR (its code and description are in the problem's
`stationErrorCode` and `stationErrorDescription`) or with an answer its schema refuses.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated, Literal, TypeVar

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, JsonValue, StrictStr

from chargenet.api.bounds import Bounds, Int32, Integral
from chargenet.api.dependencies import Context
from chargenet.api.fields import DateTime, IdToken, ObjectId
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.domain.triggers import MessageTrigger
from chargenet.edge.ocpp16.frames import FrameLimits, Payload
from chargenet.edge.ocpp201 import commands as commands201
from chargenet.services import station_commands, station_notices
from chargenet.services.callers import ApiApplication
from chargenet.services.charge_point_commands import CommandAnswer
from chargenet.services.station_commands import LocalListUpdate

router = APIRouter(tags=["station commands"])

Commander = Annotated[ApiApplication, Depends(require(Scope.CHARGE_POINTS_WRITE))]
Reader = Annotated[ApiApplication, Depends(require(Scope.CHARGE_POINTS_READ))]
# A station leaves out what it has nothing to say about (DataTransfer's data, GetConfiguration's unknownKey): so do we.
command = functools.partial(router.post, response_model_exclude_none=True)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Answer(BaseModel):
    # The station's answer as it came: fields OCPP adds in a later edition are kept, not refused.
    model_config = ConfigDict(extra="allow")


class StatusAnswer(_Answer):
    status: str = Field(description="The station's answer, e.g. Accepted, Rejected, NotSupported")


class SendLocalListAnswer(StatusAnswer):
    skippedIdTags: list[str] | None = Field(
        default=None, description="tags of the list left out: over 20 characters, which an OCPP 1.6 station cannot take"
    )


class ConfigurationKey(_Answer):
    key: str
    readonly: bool
    value: str | None = None


class ConfigurationAnswer(_Answer):
    configurationKey: list[ConfigurationKey] | None = None
    unknownKey: list[str] | None = None


class LocalListVersionAnswer(_Answer):
    listVersion: int = Field(description="-1: the station has no local list support; 0: its list is empty")


class DataTransferAnswer(_Answer):
    status: str
    data: JsonValue = Field(default=None, description="A string from a 1.6 station; any JSON from a 2.0.1 one")


class VariableResults(_Answer):
    """GetVariables' or SetVariables' answer as the station gave it: one result per variable asked."""

    getVariableResult: list[dict[str, JsonValue]] | None = None
    setVariableResult: list[dict[str, JsonValue]] | None = None


class BaseReportAnswer(_Answer):
    status: str
    requestId: int = Field(description="The id the station's NotifyReport parts carry")


class ResetBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"type": "Hard"}]})

    type: Literal["Soft", "Hard"]


class StationAvailabilityBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"type": "Operative"}]})

    type: Literal["Inoperative", "Operative"]


class StationTriggerBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"requestedMessage": "BootNotification"}]})

    requestedMessage: MessageTrigger


ConfigurationKeyName = Annotated[StrictStr, Field(min_length=1, max_length=50)]


# Bounds that keep every command the document allows within one 64 KiB OCPP frame, whatever its characters (six
# bytes each at most, as JSON escapes control characters); the service refuses a longer frame in any case (422).
MAX_KEYS = 100
MAX_DATA = 10_000


class GetConfigurationBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"key": ["HeartbeatInterval"]}]})

    key: list[ConfigurationKeyName] | None = Field(
        default=None, max_length=MAX_KEYS, description="The keys to read; absent: every key the station has"
    )


class ChangeConfigurationBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"key": "HeartbeatInterval", "value": "300"}]})

    key: ConfigurationKeyName
    value: Annotated[StrictStr, Field(max_length=500)]


class SendLocalListBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"listVersion": 7}]})

    listVersion: Annotated[int, Bounds(ge=1), Integral] = Field(
        description="The version the station records for the site's whole list"
    )
    updateType: LocalListUpdate = Field(
        default="Full",
        description="Full: the site's list replaces the station's; Differential: the site's tags are added or "
        "changed there, the station's others kept",
    )


class ReserveBody(_Body):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"connectorId": 1, "idTag": "04A2B3C4D5", "expiryDate": "2027-01-01T12:00:00Z", "reservationId": 17}
            ]
        }
    )

    chargePointId: ObjectId | None = Field(default=None, description="Needed on a station with several")
    connectorId: Annotated[int, Bounds(ge=1), Integral]
    idTag: IdToken = Field(description="Up to 20 characters for an OCPP 1.6 station, 36 for an OCPP 2.0.1 one")
    parentIdTag: IdToken | None = Field(default=None, description="As idTag")
    expiryDate: DateTime
    reservationId: Int32


class VariableName(_Body):
    component: Annotated[StrictStr, Field(min_length=1, max_length=50)]
    variable: Annotated[StrictStr, Field(min_length=1, max_length=50)]
    componentInstance: Annotated[StrictStr, Field(min_length=1, max_length=50)] | None = None
    variableInstance: Annotated[StrictStr, Field(min_length=1, max_length=50)] | None = None
    evseId: Annotated[int, Bounds(ge=0), Integral] | None = Field(default=None, description="The component's EVSE")
    connectorId: Annotated[int, Bounds(ge=1), Integral] | None = Field(default=None, description="... and connector")

    def ref(self) -> commands201.VariableRef:
        evse = None if self.evseId is None else commands201.Evse(self.evseId, self.connectorId)
        return commands201.VariableRef(
            self.component, self.variable, self.componentInstance, self.variableInstance, evse
        )


_HEARTBEAT_INTERVAL = {"component": "OCPPCommCtrlr", "variable": "HeartbeatInterval"}
AttributeType = Literal["Actual", "Target", "MinSet", "MaxSet"]
MAX_VARIABLES = 50


class GetVariablesBody(_Body):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"variables": [{"component": "OCPPCommCtrlr", "variable": "HeartbeatInterval"}]}]
        }
    )

    variables: list[VariableName] = Field(min_length=1, max_length=MAX_VARIABLES)
    attributeType: AttributeType | None = None


class VariableValue(VariableName):
    value: Annotated[StrictStr, Field(max_length=1000)]


class SetVariablesBody(_Body):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"variables": [{"component": "OCPPCommCtrlr", "variable": "HeartbeatInterval", "value": "60"}]}
            ]
        }
    )

    variables: list[VariableValue] = Field(min_length=1, max_length=MAX_VARIABLES)
    attributeType: AttributeType | None = None


class BaseReportBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"reportBase": "FullInventory"}]})

    reportBase: Literal["ConfigurationInventory", "FullInventory", "SummaryInventory"]


class CancelReservationBody(_Body):
    model_config = ConfigDict(json_schema_extra={"examples": [{"reservationId": 17}]})

    reservationId: Int32


class DataTransferBody(_Body):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"vendorId": "com.example", "messageId": "Ping", "data": "hello"}]}
    )

    vendorId: Annotated[StrictStr, Field(min_length=1, max_length=255)]
    messageId: Annotated[StrictStr, Field(max_length=50)] | None = None
    data: Annotated[StrictStr, Field(max_length=MAX_DATA)] | None = None


AnswerT = TypeVar("AnswerT", bound=_Answer)


def _as(model: type[AnswerT], answer: Payload) -> AnswerT:
    return model.model_validate(answer)


@command("/stations/{station_id}/reset", response_model=StatusAnswer)
async def reset(station_id: str, body: ResetBody, context: Context, caller: Commander) -> StatusAnswer:
    answer = await station_commands.reset(
        context.store.read, context.stations, caller, station_id=station_id, kind=body.type
    )
    return _as(StatusAnswer, answer)


@command("/stations/{station_id}/availability", response_model=StatusAnswer)
async def availability(
    station_id: str, body: StationAvailabilityBody, context: Context, caller: Commander
) -> StatusAnswer:
    """The station itself (OCPP connector 0); `POST /charge-points/{id}/availability` changes one charge point."""
    answer = await station_commands.change_availability(
        context.store.read,
        context.stations,
        caller,
        station_id=station_id,
        charge_point_id=None,
        connector_id=None,
        availability=body.type,
    )
    assert not isinstance(answer, BaseModel)  # without a charge point or connector, the station's own answer
    return _as(StatusAnswer, answer)


@command("/stations/{station_id}/trigger", response_model=StatusAnswer)
async def trigger(station_id: str, body: StationTriggerBody, context: Context, caller: Commander) -> StatusAnswer:
    """A message about the station as a whole; `POST /charge-points/{id}/trigger` asks about one connector."""
    answer = await station_commands.trigger(
        context.store.read,
        context.stations,
        caller,
        station_id=station_id,
        requested_message=body.requestedMessage,
        charge_point_id=None,
        connector_id=None,
    )
    assert not isinstance(answer, BaseModel)  # without a connector, the station's own answer
    return _as(StatusAnswer, answer)


async def _central(context: Context, caller: ApiApplication, station_id: str, action: str, payload: Payload) -> Payload:
    return await station_commands.central_command(
        context.store.read,
        context.stations,
        caller,
        station_id=station_id,
        action=action,
        payload=payload,
        limits=FrameLimits(max_frame_bytes=context.settings.ocpp_max_frame),
    )


@command("/stations/{station_id}/get-configuration", response_model=ConfigurationAnswer)
async def get_configuration(
    station_id: str, body: GetConfigurationBody, context: Context, caller: Commander
) -> ConfigurationAnswer:
    payload: Payload = {} if body.key is None else {"key": body.key}
    return _as(ConfigurationAnswer, await _central(context, caller, station_id, "GetConfiguration", payload))


@command("/stations/{station_id}/change-configuration", response_model=StatusAnswer)
async def change_configuration(
    station_id: str, body: ChangeConfigurationBody, context: Context, caller: Commander
) -> StatusAnswer:
    payload: Payload = {"key": body.key, "value": body.value}
    return _as(StatusAnswer, await _central(context, caller, station_id, "ChangeConfiguration", payload))


@command("/stations/{station_id}/clear-cache", response_model=StatusAnswer)
async def clear_cache(station_id: str, context: Context, caller: Commander) -> StatusAnswer:
    return _as(StatusAnswer, await _central(context, caller, station_id, "ClearCache", {}))


@command("/stations/{station_id}/send-local-list", response_model=SendLocalListAnswer)
async def send_local_list(
    station_id: str, body: SendLocalListBody, context: Context, caller: Commander
) -> SendLocalListAnswer:
    """The site's whole local authorization list, replacing the station's (updateType Full) or added to it
    (Differential). A 2.0.1 station gets each tag with its type; a 1.6 station never gets a tag over 20
    characters (`skippedIdTags` names those left out)."""
    answer = await station_commands.send_local_list(
        context.store.read,
        context.stations,
        caller,
        station_id=station_id,
        list_version=body.listVersion,
        limits=FrameLimits(max_frame_bytes=context.settings.ocpp_max_frame),
        update_type=body.updateType,
    )
    return _as(SendLocalListAnswer, answer)


@command("/stations/{station_id}/local-list-version", response_model=LocalListVersionAnswer)
async def local_list_version(station_id: str, context: Context, caller: Commander) -> LocalListVersionAnswer:
    return _as(LocalListVersionAnswer, await _central(context, caller, station_id, "GetLocalListVersion", {}))


@command("/stations/{station_id}/reserve", response_model=CommandAnswer)
async def reserve(station_id: str, body: ReserveBody, context: Context, caller: Commander) -> CommandAnswer:
    expires: datetime = body.expiryDate
    return await station_commands.reserve_now(
        context.store.read,
        context.stations,
        caller,
        station_id=station_id,
        connector=station_commands.StationConnector(body.chargePointId, body.connectorId),
        id_tag=body.idTag,
        expires_at=expires,
        reservation_id=body.reservationId,
        parent_id_tag=body.parentIdTag,
    )


@command("/stations/{station_id}/cancel-reservation", response_model=StatusAnswer)
async def cancel_reservation(
    station_id: str, body: CancelReservationBody, context: Context, caller: Commander
) -> StatusAnswer:
    payload: Payload = {"reservationId": body.reservationId}
    return _as(StatusAnswer, await _central(context, caller, station_id, "CancelReservation", payload))


@command("/stations/{station_id}/data-transfer", response_model=DataTransferAnswer)
async def data_transfer(
    station_id: str, body: DataTransferBody, context: Context, caller: Commander
) -> DataTransferAnswer:
    payload: Payload = body.model_dump(exclude_none=True)
    return _as(DataTransferAnswer, await _central(context, caller, station_id, "DataTransfer", payload))


@command("/stations/{station_id}/get-variables", response_model=VariableResults)
async def get_variables(
    station_id: str, body: GetVariablesBody, context: Context, caller: Commander
) -> VariableResults:
    """OCPP 2.0.1's counterpart of get-configuration (which answers 422 for a 2.0.1 station, as this does for a
    1.6 one)."""
    answer = await station_commands.get_variables(
        context.store.read,
        context.stations,
        caller,
        station_id=station_id,
        variables=[name.ref() for name in body.variables],
        attribute_type=body.attributeType,
    )
    return _as(VariableResults, answer)


@command("/stations/{station_id}/set-variables", response_model=VariableResults)
async def set_variables(
    station_id: str, body: SetVariablesBody, context: Context, caller: Commander
) -> VariableResults:
    """OCPP 2.0.1's counterpart of change-configuration; the station's status for each variable."""
    answer = await station_commands.set_variables(
        context.store.read,
        context.stations,
        caller,
        station_id=station_id,
        values=[(item.ref(), item.value) for item in body.variables],
        attribute_type=body.attributeType,
    )
    return _as(VariableResults, answer)


@command("/stations/{station_id}/get-base-report", response_model=BaseReportAnswer)
async def get_base_report(
    station_id: str, body: BaseReportBody, context: Context, caller: Commander
) -> BaseReportAnswer:
    """Asks a 2.0.1 station for its device model; the report arrives in parts, read assembled at
    `GET /stations/{stationId}/device-model-report`."""
    answer = await station_commands.request_base_report(
        context.store.read, context.stations, caller, station_id=station_id, report_base=body.reportBase
    )
    return _as(BaseReportAnswer, answer)


@router.get("/stations/{station_id}/device-model-report", response_model=station_notices.DeviceModelReportView)
async def device_model_report(
    station_id: str, context: Context, caller: Reader
) -> station_notices.DeviceModelReportView:
    """The station's latest device model report, assembled from the NotifyReport parts stored so far
    (`complete` once every part arrived). 404 when it sent none."""
    async with context.store.read() as session:
        return await station_notices.device_model_report(session, caller, station_id)
