"""OCPP 2.0.1 calls: which actions exist, who sends them, and their payloads checked against the 2.0.1 JSON schemas
of the `ocpp` package (`ocpp/v201/schemas`).

The framing (`[2|3|4, ...]`, message ids, numbers kept with their digits, text the store can keep, 32-bit
integers) is OCPP-J's, the same as 1.6's: it is read and written by `ocpp16.frames`, whose schema checks take the
generation. What is 2.0.1's is here: the action list, the schema names (`<Action>Request` and
`<Action>Response`) and the checks the schemas leave unsaid.
"""

from __future__ import annotations

from functools import cache

from chargenet.edge.ocpp16 import frames
from chargenet.edge.ocpp16.errors import LocalProtocolError, PayloadViolation, UnknownAction
from chargenet.edge.ocpp16.frames import Call, CallResult, Payload

GENERATION = "v201"

# OCPP 2.0.1 Part 2 names who sends which CALL. DataTransfer goes both ways.
STATION_ACTIONS = frozenset(
    {
        "Authorize",
        "BootNotification",
        "ClearedChargingLimit",
        "DataTransfer",
        "FirmwareStatusNotification",
        "Get15118EVCertificate",
        "GetCertificateStatus",
        "Heartbeat",
        "LogStatusNotification",
        "MeterValues",
        "NotifyChargingLimit",
        "NotifyCustomerInformation",
        "NotifyDisplayMessages",
        "NotifyEVChargingNeeds",
        "NotifyEVChargingSchedule",
        "NotifyEvent",
        "NotifyMonitoringReport",
        "NotifyReport",
        "PublishFirmwareStatusNotification",
        "ReportChargingProfiles",
        "ReservationStatusUpdate",
        "SecurityEventNotification",
        "SignCertificate",
        "StatusNotification",
        "TransactionEvent",
    }
)


@cache
def known_actions() -> frozenset[str]:
    """Every OCPP 2.0.1 action, read from the schema files."""
    names = (path.stem for path in frames._schema_dir(GENERATION).glob("*Request.json"))
    return frozenset(name.removesuffix("Request") for name in names)


CENTRAL_ACTIONS = frozenset(known_actions() - STATION_ACTIONS | {"DataTransfer"})


def check_call(call: Call) -> None:
    """Check an incoming CALL's action and payload. Raises `UnknownAction` or a `PayloadViolation`."""
    if call.action not in known_actions():
        raise UnknownAction(call.action, unique_id=call.unique_id)
    try:
        frames.validate_payload(f"{call.action}Request", call.payload, GENERATION)
    except PayloadViolation as exc:
        exc.unique_id = call.unique_id
        raise


def build_call(unique_id: str, action: str, payload: Payload) -> Call:
    """A CALL we send, checked against its schema; a violation is our bug (`LocalProtocolError`)."""
    try:
        frames.validate_payload(f"{action}Request", payload, GENERATION)
    except PayloadViolation as exc:
        raise LocalProtocolError(f"{action}: {exc.message} ({exc.field})", code=exc.code) from exc
    return Call(unique_id, action, payload)


def build_result(action: str, unique_id: str, payload: Payload) -> CallResult:
    """A CALLRESULT we send, checked against the response schema; a violation is our bug."""
    try:
        frames.validate_payload(f"{action}Response", payload, GENERATION)
    except PayloadViolation as exc:
        raise LocalProtocolError(f"{action}Response: {exc.message} ({exc.field})", code=exc.code) from exc
    return CallResult(unique_id, payload)


def check_result(action: str, result: CallResult) -> None:
    """Check a CALLRESULT's payload against the response schema of the CALL it answers."""
    if result.defect is not None:
        raise result.defect
    frames.validate_payload(f"{action}Response", result.payload, GENERATION)
