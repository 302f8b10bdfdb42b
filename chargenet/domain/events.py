"""The webhook envelope and its four payloads, exactly as service.md §2 and decisions.md §3 define them, and the
`WebhookTest` envelope an operator sends to check a webhook (decisions.md "Test event").

Rules that the models enforce, because partners rely on them:
- Rule 1: types are strict. An integer field refuses 1.0, "1" and true; a number field refuses strings and booleans.
- Rule 2: an optional field is either absent or has a value of its type; `null` is refused, and on the way out
  absent fields are left out rather than written as null.
- Rule 3: enum fields accept exactly the values of the spec's tables, spelled as there.
- Rule 4: every id is a string except connectorId, transactionId and reservationId (integers).
- Rule 5: energy is kWh as a JSON number with at most 3 decimals.
- Rule 6: the envelope timestamp is Europe/Brussels with a numeric offset (see `timestamps`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from chargenet.domain.energy import has_at_most_three_decimals
from chargenet.domain.timestamps import brussels_timestamp, parse_brussels_timestamp
from chargenet.errors import InvalidInput


class EventType(StrEnum):
    AUTHORIZE = "Authorize"
    CHARGE_POINT_STATUS = "ChargePointStatus"
    START_TRANSACTION = "StartTransaction"
    STOP_TRANSACTION = "StopTransaction"


class AuthorizationStatus(StrEnum):
    ACCEPTED = "Accepted"
    BLOCKED = "Blocked"
    EXPIRED = "Expired"
    INVALID = "Invalid"
    CONCURRENT_TX = "ConcurrentTx"


class ConnectorStatus(StrEnum):
    AVAILABLE = "Available"
    PREPARING = "Preparing"
    CHARGING = "Charging"
    SUSPENDED_EVSE = "SuspendedEVSE"
    SUSPENDED_EV = "SuspendedEV"
    FINISHING = "Finishing"
    RESERVED = "Reserved"
    UNAVAILABLE = "Unavailable"
    FAULTED = "Faulted"


class ChargePointErrorCode(StrEnum):
    NO_ERROR = "NoError"
    CONNECTOR_LOCK_FAILURE = "ConnectorLockFailure"
    EV_COMMUNICATION_ERROR = "EVCommunicationError"
    GROUND_FAILURE = "GroundFailure"
    HIGH_TEMPERATURE = "HighTemperature"
    INTERNAL_ERROR = "InternalError"
    LOCAL_LIST_CONFLICT = "LocalListConflict"
    OTHER_ERROR = "OtherError"
    OVER_CURRENT_FAILURE = "OverCurrentFailure"
    POWER_METER_FAILURE = "PowerMeterFailure"
    POWER_SWITCH_FAILURE = "PowerSwitchFailure"
    READER_FAILURE = "ReaderFailure"
    RESET_FAILURE = "ResetFailure"
    UNDER_VOLTAGE = "UnderVoltage"
    OVER_VOLTAGE = "OverVoltage"
    WEAK_SIGNAL = "WeakSignal"


class StopReason(StrEnum):
    LOCAL = "Local"
    EV_DISCONNECTED = "EVDisconnected"
    EMERGENCY_STOP = "EmergencyStop"
    REMOTE = "Remote"
    HARD_RESET = "HardReset"
    SOFT_RESET = "SoftReset"
    REBOOT = "Reboot"
    POWER_LOSS = "PowerLoss"
    UNLOCK_COMMAND = "UnlockCommand"
    DE_AUTHORIZED = "DeAuthorized"
    OTHER = "Other"


# Rule 1 is written per type rather than model-wide, because model-wide strictness would also refuse
# enum values given as plain strings.
Identifier = Annotated[StrictStr, Field(min_length=1, max_length=255)]
IdTag = Annotated[StrictStr, Field(min_length=1, max_length=255)]
ConnectorId = Annotated[StrictInt, Field(ge=0)]
TransactionId = Annotated[StrictInt, Field(ge=1)]
Kwh = Annotated[float, Strict(), Field(ge=0)]
# decisions.md §5: what a 2.0.1 station said beside the event model's value (its idToken type, its own
# authorization status, stop reason and transaction id), added to the payloads and optional.
StationValue = Annotated[StrictStr, Field(min_length=1, max_length=36)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def _three_decimals(value: float) -> float:
    if not has_at_most_three_decimals(value):
        raise ValueError("kWh values carry at most 3 decimals")
    return value


class _StrictPayload(_Strict):
    @field_validator("*", mode="before")
    @classmethod
    def _refuse_null(cls, value: Any) -> Any:
        # Rule 2: pydantic lets `None` stand for an absent optional; the wire contract does not.
        if value is None:
            raise ValueError("must be left out when it has no value, not null")
        return value


class AuthorizePayload(_StrictPayload):
    stationId: Identifier
    idTag: IdTag
    status: AuthorizationStatus
    chargePointId: Identifier | None = None
    connectorId: ConnectorId | None = None
    idTokenType: StationValue | None = None
    stationStatus: StationValue | None = None


class ChargePointStatusPayload(_StrictPayload):
    stationId: Identifier
    chargePointId: Identifier
    connectorId: ConnectorId
    status: ConnectorStatus
    errorCode: ChargePointErrorCode
    info: Annotated[StrictStr, Field(max_length=255)] | None = None


class StartTransactionPayload(_StrictPayload):
    stationId: Identifier
    chargePointId: Identifier
    connectorId: ConnectorId
    idTag: IdTag
    meterStart: Kwh
    transactionId: TransactionId
    reservationId: StrictInt | None = None
    idTokenType: StationValue | None = None
    stationTransactionId: StationValue | None = None
    requestId: Annotated[StrictStr, Field(min_length=1, max_length=40)] | None = None

    _check_kwh = field_validator("meterStart")(_three_decimals)


class StopTransactionPayload(_StrictPayload):
    stationId: Identifier
    chargePointId: Identifier
    connectorId: ConnectorId
    idTag: IdTag
    meterStart: Kwh
    meterStop: Kwh
    transactionId: TransactionId
    # decisions.md §3: always present on the wire; `Local` when the station left it out.
    reason: StopReason
    idTokenType: StationValue | None = None
    stationTransactionId: StationValue | None = None
    stationReason: StationValue | None = None

    _check_kwh = field_validator("meterStart", "meterStop")(_three_decimals)


Payload: TypeAlias = AuthorizePayload | ChargePointStatusPayload | StartTransactionPayload | StopTransactionPayload


class _Envelope(_Strict):
    eventId: StrictStr
    eventType: EventType
    siteId: Identifier
    timestamp: StrictStr

    @field_validator("eventId")
    @classmethod
    def _uuid(cls, value: str) -> str:
        try:
            parsed = uuid.UUID(value)
        except ValueError:
            raise ValueError("must be a UUID such as 2f1c0b9e-4b7a-4f6e-9a51-0d8f5b1c2e3a") from None
        if str(parsed) != value.lower():
            raise ValueError("must be a UUID in its canonical hyphenated form")
        return value

    @field_validator("timestamp")
    @classmethod
    def _brussels(cls, value: str) -> str:
        parse_brussels_timestamp(value)
        return value


class AuthorizeEvent(_Envelope):
    eventType: Literal[EventType.AUTHORIZE]
    payload: AuthorizePayload


class ChargePointStatusEvent(_Envelope):
    eventType: Literal[EventType.CHARGE_POINT_STATUS]
    payload: ChargePointStatusPayload


class StartTransactionEvent(_Envelope):
    eventType: Literal[EventType.START_TRANSACTION]
    payload: StartTransactionPayload


class StopTransactionEvent(_Envelope):
    eventType: Literal[EventType.STOP_TRANSACTION]
    payload: StopTransactionPayload


Event: TypeAlias = AuthorizeEvent | ChargePointStatusEvent | StartTransactionEvent | StopTransactionEvent

EVENT_CLASSES: dict[EventType, type[Event]] = {
    EventType.AUTHORIZE: AuthorizeEvent,
    EventType.CHARGE_POINT_STATUS: ChargePointStatusEvent,
    EventType.START_TRANSACTION: StartTransactionEvent,
    EventType.STOP_TRANSACTION: StopTransactionEvent,
}

_PAYLOAD_EVENT_TYPES: dict[type[BaseModel], EventType] = {
    AuthorizePayload: EventType.AUTHORIZE,
    ChargePointStatusPayload: EventType.CHARGE_POINT_STATUS,
    StartTransactionPayload: EventType.START_TRANSACTION,
    StopTransactionPayload: EventType.STOP_TRANSACTION,
}

_EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Annotated[Event, Field(discriminator="eventType")])


# decisions.md "Test event": sent on request, outside the lanes, never subscribed to; partners may ignore it.
WEBHOOK_TEST = "WebhookTest"


class WebhookTestPayload(_StrictPayload):
    webhookId: Identifier
    requestedBy: Annotated[StrictStr, Field(min_length=1, max_length=300)]


class WebhookTestEvent(_Envelope):
    eventType: Literal["WebhookTest"]  # type: ignore[assignment]  # not an EventType: no lane carries it
    payload: WebhookTestPayload


# Every envelope partners can receive, by eventType, as docs/schemas/ documents them.
DOCUMENTED_EVENTS: dict[str, type[_Envelope]] = {
    **{event_type.value: model for event_type, model in EVENT_CLASSES.items()},
    WEBHOOK_TEST: WebhookTestEvent,
}


def build_test_event(
    *, event_id: str, site_id: str, raised_at: datetime, webhook_id: str, requested_by: str
) -> WebhookTestEvent:
    """The `WebhookTest` envelope: `requestedBy` names who asked for it, as the audit log does."""
    return WebhookTestEvent(
        eventId=event_id,
        eventType=WEBHOOK_TEST,
        siteId=site_id,
        timestamp=brussels_timestamp(raised_at),
        payload=WebhookTestPayload(webhookId=webhook_id, requestedBy=requested_by[:300]),
    )


def event_type_of(payload: Payload) -> EventType:
    return _PAYLOAD_EVENT_TYPES[type(payload)]


def build_event(*, event_id: str, site_id: str, raised_at: datetime, payload: Payload) -> Event:
    """Wrap a payload in its envelope; `raised_at` becomes the Brussels timestamp, fixed for every retry."""
    event_type = event_type_of(payload)
    return EVENT_CLASSES[event_type](
        eventId=event_id,
        eventType=event_type,
        siteId=site_id,
        timestamp=brussels_timestamp(raised_at),
        payload=payload,
    )


def parse_event(data: Any) -> Event:
    """Validate a JSON-shaped envelope.

    Raises `InvalidInput` whose `field` names the first offending field, e.g. `payload.connectorId`.
    """
    if isinstance(data, dict) and "eventType" in data and data["eventType"] not in set(EventType):
        raise InvalidInput(f"{data['eventType']!r} is not one of {', '.join(EventType)}", field="eventType")
    try:
        return _EVENT_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise _invalid(exc) from None


def parse_event_json(raw: str | bytes) -> Event:
    try:
        return _EVENT_ADAPTER.validate_json(raw)
    except ValidationError as exc:
        raise _invalid(exc) from None


def _invalid(exc: ValidationError) -> InvalidInput:
    first = exc.errors()[0]
    if first["type"] == "union_tag_not_found":
        return InvalidInput("Field required", field="eventType")
    if first["type"] == "union_tag_invalid":
        return InvalidInput(f"is not one of {', '.join(EventType)}", field="eventType")
    # The discriminated union puts the event type name into the location; partners think in JSON paths.
    location = [str(part) for part in first["loc"] if str(part) not in set(EventType)]
    message = first["msg"].removeprefix("Value error, ")
    return InvalidInput(message, field=".".join(location) or None)
