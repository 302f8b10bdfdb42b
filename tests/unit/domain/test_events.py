from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from chargenet.domain.events import (
    AuthorizationStatus,
    ChargePointErrorCode,
    ConnectorStatus,
    EventType,
    StopReason,
    StopTransactionPayload,
    WebhookTestEvent,
    build_event,
    build_test_event,
    parse_event,
    parse_event_json,
)
from chargenet.domain.schemas import render
from chargenet.errors import InvalidInput

SCHEMAS = Path(__file__).resolve().parents[3] / "docs" / "schemas"

ENVELOPE = {
    "eventId": "7d0e6c1f-3b0a-4c55-9a3e-1f2b3c4d5e6f",
    "siteId": "site_1",
    "timestamp": "2026-07-01T14:03:22.123+02:00",
}

# One example per event type, built from the tables of service.md §2 and decisions.md §3, optional fields included.
EXAMPLES: dict[str, dict[str, Any]] = {
    "Authorize": {
        "stationId": "ST-1",
        "idTag": "04A2B3C4D5",
        "status": "Accepted",
        "chargePointId": "ST-1",
        "connectorId": 1,
    },
    "ChargePointStatus": {
        "stationId": "ST-1",
        "chargePointId": "ST-1",
        "connectorId": 1,
        "status": "Charging",
        "errorCode": "NoError",
        "info": "cable locked",
    },
    "StartTransaction": {
        "stationId": "ST-1",
        "chargePointId": "ST-1",
        "connectorId": 1,
        "idTag": "04A2B3C4D5",
        "meterStart": 1234.5,
        "transactionId": 42,
        "reservationId": 7,
    },
    "StopTransaction": {
        "stationId": "ST-1",
        "chargePointId": "ST-1",
        "connectorId": 1,
        "idTag": "04A2B3C4D5",
        "meterStart": 1234.5,
        "meterStop": 1250.125,
        "transactionId": 42,
        "reason": "EVDisconnected",
    },
}


def envelope(event_type: str, **payload_changes: Any) -> dict[str, Any]:
    payload = {**EXAMPLES[event_type], **payload_changes}
    return {**copy.deepcopy(ENVELOPE), "eventType": event_type, "payload": payload}


def refusal(data: Any) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        parse_event(data)
    return caught.value


@pytest.mark.parametrize("event_type", list(EXAMPLES))
def test_spec_example_validates_and_round_trips(event_type: str) -> None:
    data = envelope(event_type)
    assert parse_event(data).to_json_dict() == data


@pytest.mark.parametrize("event_type", list(EXAMPLES))
def test_spec_example_validates_against_published_json_schema(event_type: str) -> None:
    schema = json.loads((SCHEMAS / f"{event_type}.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(envelope(event_type))


@pytest.mark.parametrize("event_type", list(EventType))
def test_published_json_schema_matches_the_models(event_type: EventType) -> None:
    assert (SCHEMAS / f"{event_type.value}.json").read_text() == render(event_type), (
        "docs/schemas is stale: run python scripts/generate_schemas.py"
    )


@pytest.mark.parametrize("event_type", list(EventType))
def test_published_json_schema_refuses_a_z_timestamp(event_type: EventType) -> None:
    schema = json.loads((SCHEMAS / f"{event_type.value}.json").read_text())
    data = envelope(event_type.value)
    data["timestamp"] = "2026-07-01T12:03:22Z"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(data)


@pytest.mark.parametrize(
    ("event_type", "field"),
    [
        ("Authorize", "stationId"),
        ("Authorize", "idTag"),
        ("Authorize", "status"),
        ("ChargePointStatus", "errorCode"),
        ("ChargePointStatus", "connectorId"),
        ("StartTransaction", "meterStart"),
        ("StartTransaction", "transactionId"),
        ("StopTransaction", "meterStop"),
        ("StopTransaction", "reason"),
    ],
)
def test_missing_required_payload_field_is_refused_naming_it(event_type: str, field: str) -> None:
    data = envelope(event_type)
    del data["payload"][field]
    error = refusal(data)
    assert error.field == f"payload.{field}"
    assert "required" in error.detail.lower()


@pytest.mark.parametrize("field", ["eventId", "eventType", "siteId", "timestamp", "payload"])
def test_missing_envelope_field_is_refused_naming_it(field: str) -> None:
    data = envelope("Authorize")
    del data[field]
    assert refusal(data).field == field


@pytest.mark.parametrize(
    ("event_type", "field", "value"),
    [
        ("Authorize", "status", "Rejected"),
        ("ChargePointStatus", "status", "Occupied"),
        ("ChargePointStatus", "errorCode", "Overheating"),
        ("StopTransaction", "reason", "Unplugged"),
    ],
)
def test_unknown_enum_value_is_refused_naming_the_field(event_type: str, field: str, value: str) -> None:
    assert refusal(envelope(event_type, **{field: value})).field == f"payload.{field}"


def test_unknown_event_type_is_refused_naming_the_field() -> None:
    data = envelope("Authorize")
    data["eventType"] = "MeterValues"
    assert refusal(data).field == "eventType"


@pytest.mark.parametrize("stamp", ["2026-07-01T12:03:22.123Z", "2026-07-01T12:03:22Z"])
def test_z_timestamp_is_refused(stamp: str) -> None:
    data = envelope("Authorize")
    data["timestamp"] = stamp
    error = refusal(data)
    assert error.field == "timestamp"
    assert "not Z" in error.detail


def test_timestamp_with_an_offset_brussels_did_not_have_is_refused() -> None:
    data = envelope("Authorize")
    data["timestamp"] = "2026-07-01T13:03:22.123+01:00"  # the same instant, but Brussels is at +02:00 in July
    assert refusal(data).field == "timestamp"


def test_timestamp_without_offset_is_refused() -> None:
    data = envelope("Authorize")
    data["timestamp"] = "2026-07-01T14:03:22.123"
    assert refusal(data).field == "timestamp"


@pytest.mark.parametrize(
    ("event_type", "field"),
    [
        ("Authorize", "connectorId"),
        ("ChargePointStatus", "connectorId"),
        ("StartTransaction", "transactionId"),
        ("StartTransaction", "reservationId"),
        ("StopTransaction", "transactionId"),
    ],
)
def test_float_where_an_integer_is_required_is_refused(event_type: str, field: str) -> None:
    assert refusal(envelope(event_type, **{field: 1.0})).field == f"payload.{field}"


@pytest.mark.parametrize("value", [True, "1"])
def test_boolean_or_string_connector_id_is_refused(value: object) -> None:
    assert refusal(envelope("ChargePointStatus", connectorId=value)).field == "payload.connectorId"


def test_integer_is_accepted_where_a_number_is_required() -> None:
    assert (
        parse_event(envelope("StopTransaction", meterStart=12, meterStop=13)).to_json_dict()["payload"]["meterStart"]
        == 12
    )


@pytest.mark.parametrize("value", ["12.5", True])
def test_string_or_boolean_energy_is_refused(value: object) -> None:
    assert refusal(envelope("StopTransaction", meterStop=value)).field == "payload.meterStop"


def test_energy_with_more_than_three_decimals_is_refused() -> None:
    assert refusal(envelope("StopTransaction", meterStop=1250.1254)).field == "payload.meterStop"


def test_null_optional_field_is_refused() -> None:
    error = refusal(envelope("Authorize", connectorId=None))
    assert error.field == "payload.connectorId"
    assert "null" in error.detail


def test_unknown_field_is_refused() -> None:
    assert refusal(envelope("Authorize", color="blue")).field == "payload.color"


def test_event_id_must_be_a_uuid() -> None:
    data = envelope("Authorize")
    data["eventId"] = "event-1"
    assert refusal(data).field == "eventId"


def test_absent_optional_fields_are_left_out_of_the_json() -> None:
    data = envelope("Authorize")
    del data["payload"]["chargePointId"]
    del data["payload"]["connectorId"]
    assert set(parse_event(data).to_json_dict()["payload"]) == {"stationId", "idTag", "status"}


def test_parse_event_json_reports_the_field_of_malformed_json_input() -> None:
    raw = json.dumps(envelope("ChargePointStatus", connectorId="x"))
    with pytest.raises(InvalidInput) as caught:
        parse_event_json(raw)
    assert caught.value.field == "payload.connectorId"


def test_build_event_stamps_brussels_time_and_the_event_type() -> None:
    event = build_event(
        event_id="7d0e6c1f-3b0a-4c55-9a3e-1f2b3c4d5e6f",
        site_id="site_1",
        raised_at=datetime(2026, 1, 15, 9, 30, tzinfo=UTC),
        payload=StopTransactionPayload.model_validate(EXAMPLES["StopTransaction"]),
    )
    assert event.eventType is EventType.STOP_TRANSACTION
    assert event.timestamp == "2026-01-15T10:30:00.000+01:00"


def test_enums_hold_exactly_the_spec_values() -> None:
    assert [s.value for s in AuthorizationStatus] == ["Accepted", "Blocked", "Expired", "Invalid", "ConcurrentTx"]
    assert len(ConnectorStatus) == 9
    assert len(ChargePointErrorCode) == 16
    assert len(StopReason) == 11
    assert "SuspendedEVSE" in {s.value for s in ConnectorStatus}
    assert "WeakSignal" in {c.value for c in ChargePointErrorCode}


def test_the_test_event_is_documented_and_its_envelope_validates_against_the_published_schema() -> None:
    schema = json.loads((SCHEMAS / "WebhookTest.json").read_text())
    assert (SCHEMAS / "WebhookTest.json").read_text() == render("WebhookTest"), (
        "docs/schemas is stale: run python scripts/generate_schemas.py"
    )
    event = build_test_event(
        event_id=ENVELOPE["eventId"],
        site_id="site_1",
        raised_at=datetime(2026, 1, 15, 9, 30, tzinfo=UTC),
        webhook_id="wh_1",
        requested_by="operator ana@example.org",
    )
    data = event.to_json_dict()
    assert data == {
        "eventId": ENVELOPE["eventId"],
        "eventType": "WebhookTest",
        "siteId": "site_1",
        "timestamp": "2026-01-15T10:30:00.000+01:00",
        "payload": {"webhookId": "wh_1", "requestedBy": "operator ana@example.org"},
    }
    jsonschema.Draft202012Validator(schema).validate(data)
    assert WebhookTestEvent.model_validate(data) == event
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate({**data, "payload": {"webhookId": "wh_1"}})
