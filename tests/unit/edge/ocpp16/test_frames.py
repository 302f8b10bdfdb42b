from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from chargenet.edge.ocpp16 import frames
from chargenet.edge.ocpp16.errors import (
    CallErrorReceived,
    DuplicateMessageId,
    ErrorCode,
    FrameTooLarge,
    LocalProtocolError,
    MalformedFrame,
    OccurenceConstraintViolation,
    PropertyConstraintViolation,
    StructureViolation,
    TypeConstraintViolation,
    UnknownAction,
    UnreadableFrame,
    UnsupportedAction,
)
from chargenet.edge.ocpp16.frames import Call, CallError, CallResult, FrameLimits
from chargenet.errors import InvalidInput

NOW = "2026-07-01T12:00:00Z"
BOOT = {"chargePointVendor": "Alfen BV", "chargePointModel": "ICU Eve Mini"}


def test_call_is_parsed() -> None:
    frame = frames.parse_frame(json.dumps([2, "abc", "BootNotification", BOOT]))
    assert frame == Call("abc", "BootNotification", BOOT)


def test_call_result_is_parsed() -> None:
    assert frames.parse_frame('[3,"abc",{"currentTime":"2026-01-01T00:00:00Z"}]') == CallResult(
        "abc", {"currentTime": "2026-01-01T00:00:00Z"}
    )


def test_call_error_is_parsed() -> None:
    frame = frames.parse_frame('[4,"abc","NotSupported","nope",{"x":1}]')
    assert frame == CallError("abc", ErrorCode.NOT_SUPPORTED, "nope", {"x": 1})


def test_call_error_in_2_0_1_spelling_is_read_as_the_1_6_code() -> None:
    frame = frames.parse_frame('[4,"abc","FormatViolation","",{}]')
    assert isinstance(frame, CallError)
    assert frame.code is ErrorCode.FORMATION_VIOLATION


def test_call_error_with_a_code_outside_table_7_becomes_generic_error_keeping_the_code_in_the_text() -> None:
    frame = frames.parse_frame('[4,"abc","MessageTypeNotSupported","why",{}]')
    assert isinstance(frame, CallError)
    assert (frame.code, frame.description) == (ErrorCode.GENERIC_ERROR, "MessageTypeNotSupported: why")


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "{}",
        "[2]",
        '[2,"a"]',
        '[2,17,"Heartbeat",{}]',
        '[2,"","Heartbeat",{}]',
        '[2,"a","Heartbeat",{"x":NaN}]',
    ],
)
def test_frame_without_a_readable_id_is_unreadable(text: str) -> None:
    with pytest.raises(UnreadableFrame):
        frames.parse_frame(text)


def test_unknown_message_type_id_is_unreadable_but_keeps_the_id() -> None:
    with pytest.raises(UnreadableFrame) as caught:
        frames.parse_frame('[7,"abc","Heartbeat",{}]')
    assert caught.value.unique_id == "abc"


def test_boolean_message_type_id_is_unreadable() -> None:
    with pytest.raises(UnreadableFrame):
        frames.parse_frame('[true,"abc",{}]')


def test_utf16_bytes_are_unreadable() -> None:
    with pytest.raises(UnreadableFrame):
        frames.parse_frame('[2,"a","Heartbeat",{}]'.encode("utf-16"))


def test_utf8_bytes_are_read() -> None:
    assert frames.parse_frame(b'[2,"a","Heartbeat",{}]') == Call("a", "Heartbeat", {})


def test_frame_over_the_size_limit_is_too_large() -> None:
    text = json.dumps([2, "a", "DataTransfer", {"vendorId": "x", "data": "y" * 200}])
    with pytest.raises(FrameTooLarge) as caught:
        frames.parse_frame(text, FrameLimits(max_frame_bytes=100))
    assert caught.value.limit == 100


def test_call_with_a_37_character_id_is_malformed_with_its_id() -> None:
    unique_id = "x" * 37
    with pytest.raises(MalformedFrame) as caught:
        frames.parse_frame(json.dumps([2, unique_id, "Heartbeat", {}]))
    assert caught.value.unique_id == unique_id
    assert caught.value.code is ErrorCode.FORMATION_VIOLATION


@pytest.mark.parametrize(
    "text",
    ['[2,"a","Heartbeat"]', '[2,"a",5,{}]', '[2,"a","Heartbeat",null]', '[2,"a","Heartbeat",{},1]'],
)
def test_call_of_the_wrong_shape_is_malformed(text: str) -> None:
    with pytest.raises(MalformedFrame) as caught:
        frames.parse_frame(text)
    assert caught.value.unique_id == "a"


@pytest.mark.parametrize("text", ['[3,"a",[]]', '[3,"a",{},{}]', '[4,"a","X",{}]', '[4,"a","X","d",[]]'])
def test_result_or_error_of_the_wrong_shape_is_unreadable(text: str) -> None:
    with pytest.raises(UnreadableFrame):
        frames.parse_frame(text)


def test_decimals_keep_their_digits_through_a_round_trip() -> None:
    frame = frames.parse_frame('[3,"a",{"limit":4.11,"big":12345.678901}]')
    assert isinstance(frame, CallResult)
    assert frame.payload["limit"] == Decimal("4.11")
    assert frames.serialize_frame(frame) == '[3,"a",{"limit":4.11,"big":12345.678901}]'


def test_serialized_call_error_has_empty_description_and_details_objects() -> None:
    assert frames.serialize_frame(CallError("a", ErrorCode.GENERIC_ERROR)) == '[4,"a","GenericError","",{}]'


def test_serialized_call_round_trips() -> None:
    call = Call("a", "BootNotification", BOOT)
    assert frames.parse_frame(frames.serialize_frame(call)) == call


def test_serializing_a_call_with_a_long_id_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError):
        frames.serialize_frame(Call("x" * 37, "Heartbeat", {}))


def test_serializing_an_unencodable_payload_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError):
        frames.serialize_frame(CallResult("a", {"x": object()}))


def test_serializing_over_the_size_limit_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError):
        frames.serialize_frame(CallResult("a", {"x": "y" * 200}), FrameLimits(max_frame_bytes=100))


def test_echoed_long_id_is_serialized_in_an_error_answer() -> None:
    unique_id = "x" * 40
    assert unique_id in frames.serialize_frame(CallError(unique_id, ErrorCode.FORMATION_VIOLATION))


def test_unknown_action_is_not_implemented() -> None:
    with pytest.raises(UnknownAction) as caught:
        frames.check_call(Call("a", "FlyToTheMoon", {}))
    assert caught.value.code is ErrorCode.NOT_IMPLEMENTED
    assert caught.value.unique_id == "a"


def test_known_but_unsupported_action_code_is_not_supported() -> None:
    assert UnsupportedAction("Reset").code is ErrorCode.NOT_SUPPORTED


def test_missing_required_field_is_occurence_constraint_violation_naming_the_field() -> None:
    with pytest.raises(OccurenceConstraintViolation) as caught:
        frames.check_call(Call("a", "BootNotification", {"chargePointVendor": "x"}))
    assert caught.value.code == "OccurenceConstraintViolation"
    assert caught.value.field == "chargePointModel"


def test_wrong_type_is_type_constraint_violation() -> None:
    with pytest.raises(TypeConstraintViolation) as caught:
        frames.check_call(
            Call("a", "StatusNotification", {"connectorId": "1", "errorCode": "NoError", "status": "Available"})
        )
    assert caught.value.field == "connectorId"


def test_string_over_its_cistring_length_is_type_constraint_violation() -> None:
    with pytest.raises(TypeConstraintViolation):
        frames.check_call(Call("a", "Authorize", {"idTag": "x" * 21}))


def test_value_outside_the_enum_is_property_constraint_violation() -> None:
    with pytest.raises(PropertyConstraintViolation) as caught:
        frames.check_call(
            Call("a", "StatusNotification", {"connectorId": 1, "errorCode": "Error", "status": "Available"})
        )
    assert caught.value.field == "errorCode"


def test_bad_date_time_is_property_constraint_violation() -> None:
    payload = {"connectorId": 1, "idTag": "T", "meterStart": 0, "timestamp": "yesterday"}
    with pytest.raises(PropertyConstraintViolation):
        frames.check_call(Call("a", "StartTransaction", payload))


def test_start_transaction_on_connector_zero_is_property_constraint_violation() -> None:
    payload = {"connectorId": 0, "idTag": "T", "meterStart": 0, "timestamp": "2026-07-01T12:00:00Z"}
    with pytest.raises(PropertyConstraintViolation) as caught:
        frames.check_call(Call("a", "StartTransaction", payload))
    assert caught.value.field == "connectorId" and caught.value.unique_id == "a"


def test_remote_start_on_connector_zero_is_property_constraint_violation() -> None:
    with pytest.raises(PropertyConstraintViolation):
        frames.check_call(Call("a", "RemoteStartTransaction", {"connectorId": 0, "idTag": "T"}))


def test_remote_start_without_a_connector_passes() -> None:
    frames.check_call(Call("a", "RemoteStartTransaction", {"idTag": "T"}))


def test_reservation_of_connector_zero_passes() -> None:
    payload = {"connectorId": 0, "expiryDate": "2026-07-01T13:00:00Z", "idTag": "T", "reservationId": 1}
    frames.check_call(Call("a", "ReserveNow", payload))


def test_building_a_start_on_connector_zero_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError):
        frames.build_call("x", "RemoteStartTransaction", {"connectorId": 0, "idTag": "T"})


def test_extra_property_is_formation_violation() -> None:
    with pytest.raises(StructureViolation) as caught:
        frames.check_call(Call("a", "Heartbeat", {"extra": 1}))
    assert caught.value.code == "FormationViolation"


def test_charging_limit_with_one_decimal_passes_multiple_of_check() -> None:
    payload = {
        "connectorId": 1,
        "csChargingProfiles": {
            "chargingProfileId": 1,
            "stackLevel": 0,
            "chargingProfilePurpose": "TxDefaultProfile",
            "chargingProfileKind": "Absolute",
            "chargingSchedule": {
                "chargingRateUnit": "A",
                "chargingSchedulePeriod": [{"startPeriod": 0, "limit": Decimal("21.4")}],
            },
        },
    }
    frames.check_call(Call("a", "SetChargingProfile", payload))


def test_our_own_charging_limit_as_a_float_is_checked_against_multiple_of() -> None:
    def profile(limit: float) -> dict[str, Any]:
        schedule = {"chargingRateUnit": "A", "chargingSchedulePeriod": [{"startPeriod": 0, "limit": limit}]}
        return {
            "connectorId": 1,
            "csChargingProfiles": {
                "chargingProfileId": 1,
                "stackLevel": 0,
                "chargingProfilePurpose": "TxProfile",
                "chargingProfileKind": "Relative",
                "chargingSchedule": schedule,
            },
        }

    frames.validate_payload("SetChargingProfile", profile(30.6))
    with pytest.raises(frames.PropertyConstraintViolation):
        frames.validate_payload("SetChargingProfile", profile(30.65))


def test_valid_call_passes() -> None:
    frames.check_call(Call("a", "BootNotification", BOOT))


def test_result_is_checked_against_the_response_schema() -> None:
    with pytest.raises(OccurenceConstraintViolation):
        frames.check_result("BootNotification", CallResult("a", {"status": "Accepted"}))


def test_building_an_invalid_call_is_a_local_error_keeping_the_code() -> None:
    with pytest.raises(LocalProtocolError) as caught:
        frames.build_call("a", "Reset", {"type": "Medium"})
    assert caught.value.violated_code is ErrorCode.PROPERTY_CONSTRAINT_VIOLATION


def test_building_an_invalid_result_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError):
        frames.build_result("Heartbeat", "a", {})


def test_building_a_valid_result_gives_the_result() -> None:
    result = frames.build_result("Heartbeat", "a", {"currentTime": "2026-01-01T00:00:00Z"})
    assert result == CallResult("a", {"currentTime": "2026-01-01T00:00:00Z"})


def test_known_actions_hold_both_directions() -> None:
    assert {"BootNotification", "RemoteStartTransaction", "DataTransfer"} <= frames.known_actions()
    assert "DataTransfer" in frames.CENTRAL_ACTIONS
    assert "Reset" not in frames.STATION_ACTIONS


def test_remote_error_maps_to_its_code_and_details() -> None:
    error = frames.call_error_for(TypeConstraintViolation("bad", field="connectorId"), "a")
    assert error == CallError("a", ErrorCode.TYPE_CONSTRAINT_VIOLATION, "bad", {"field": "connectorId"})


def test_duplicate_message_id_maps_to_protocol_error() -> None:
    assert frames.call_error_for(DuplicateMessageId("again"), "a").code is ErrorCode.PROTOCOL_ERROR


def test_invalid_input_maps_to_property_constraint_violation() -> None:
    error = frames.call_error_for(InvalidInput("17 is above 16", field="connectorId"), "a")
    assert (error.code, error.details) == (ErrorCode.PROPERTY_CONSTRAINT_VIOLATION, {"field": "connectorId"})


def test_unexpected_exception_maps_to_internal_error_without_details() -> None:
    error = frames.call_error_for(RuntimeError("database password is hunter2"), "a")
    assert error == CallError("a", ErrorCode.INTERNAL_ERROR, "An internal error occurred.")


def test_local_protocol_error_maps_to_internal_error() -> None:
    error = frames.call_error_for(LocalProtocolError("our bug"), "a")
    assert error.code is ErrorCode.INTERNAL_ERROR


def test_fifth_unreadable_frame_in_a_row_closes() -> None:
    run = frames.UnreadableRun()
    assert [run.unreadable() for _ in range(5)] == [False, False, False, False, True]


def test_readable_frame_ends_an_unreadable_run() -> None:
    run = frames.UnreadableRun()
    for _ in range(4):
        run.unreadable()
    run.readable()
    assert run.unreadable() is False
    assert run.total == 5


def test_relayed_call_error_keeps_the_far_ends_code() -> None:
    received = CallErrorReceived("Reset", ErrorCode.NOT_SUPPORTED, "no resets", {"why": "policy"})
    assert frames.call_error_for(received, "a") == CallError(
        "a", ErrorCode.NOT_SUPPORTED, "no resets", {"why": "policy"}
    )


def test_stored_payload_keeps_decimals() -> None:
    assert frames.load_payload(frames.dump_payload({"limit": Decimal("4.11")})) == {"limit": Decimal("4.11")}


# The fast path of Rule 4 against jsonschema, on every 1.6 schema: payloads built from each schema, then every
# member (and every nested member, array items included) replaced by each odd value, every required member left
# out, arrays emptied and doubled, and an unknown member added. The two must agree on each.
_ODD_VALUES: list[object] = [
    None,
    [],
    {},
    {"status": "Accepted"},
    "",
    "x",
    "x" * 20,
    "x" * 21,
    "x" * 256,
    0,
    -5,
    2**70,
    1.0,
    1.5,
    Decimal("2.5"),
    Decimal("3"),
    True,
    False,
    "2026-01-01T00:00:00Z",
    "2026-01-01T00:00:00.123+02:00",
    "2026-13-01T00:00:00Z",
    "2026-02-30T00:00:00Z",
    "2026-01-01T00:00:00",
    "2026-01-01 00:00:00Z",
    "Accepted",
    "Available",
    "NoError",
]


def _inline(schema: Any, root: dict[str, Any]) -> Any:
    """The schema with every `$ref` (to `#/definitions/...`; the 1.6 schemas are not recursive) inlined."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _inline(root["definitions"][schema["$ref"].rsplit("/", 1)[1]], root)
        return {key: _inline(value, root) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_inline(item, root) for item in schema]
    return schema


def _example(schema: dict[str, Any], *, full: bool) -> object:
    kind = schema.get("type")
    if kind == "object":
        properties: dict[str, dict[str, Any]] = schema.get("properties", {})
        required: list[str] = schema.get("required", [])
        return {name: _example(sub, full=full) for name, sub in properties.items() if full or name in required}
    if kind == "array":
        return [_example(schema["items"], full=full)]
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("format") == "date-time":
        return "2026-01-01T00:00:00Z"
    return {"string": "s", "integer": 1, "number": Decimal("1.5"), "boolean": True}[kind]


def _variants(schema: dict[str, Any], value: object) -> list[object]:
    """`value` (built for `schema`) with one thing changed, at every depth."""
    if isinstance(value, list) and schema.get("type") == "array":
        item = value[0] if value else _example(schema["items"], full=True)
        return [[], [item, item], *([changed] for changed in _variants(schema["items"], item))]
    if not isinstance(value, dict) or schema.get("type") != "object":
        return list(_ODD_VALUES) + ([*schema["enum"], "Unknown"] if "enum" in schema else [])
    properties: dict[str, dict[str, Any]] = schema.get("properties", {})
    out: list[object] = [{**value, "unknownMember": 1}]
    out += [{k: v for k, v in value.items() if k != name} for name in value]
    for name, subschema in properties.items():
        base = value.get(name, _example(subschema, full=True))
        out += [{**value, name: changed} for changed in _variants(subschema, base)]
    return out


def _schemas() -> list[str]:
    return sorted(p.stem for p in frames._schema_dir().glob("*.json"))


def _schema(name: str) -> dict[str, Any]:
    return _inline(dict(frames._validator(name).schema), dict(frames._validator(name).schema))


def _jsonschema_verdict(name: str, payload: object) -> bool | None:
    try:
        return bool(frames._validator(name).is_valid(payload))
    except TypeError:  # jsonschema cannot take a float against a Decimal `multipleOf`; the wire never has floats
        return None


@pytest.mark.parametrize("schema_name", _schemas())
def test_the_fast_path_agrees_with_jsonschema(schema_name: str) -> None:
    schema = _schema(schema_name)
    payloads: list[object] = []
    for full in (True, False):
        example = _example(schema, full=full)
        payloads += [example, *_variants(schema, example)]
    verdicts = [(frames._fast_verdict(schema_name, p), _jsonschema_verdict(schema_name, p)) for p in payloads]
    # What the fast path accepts, jsonschema accepts; what it does not (or cannot decide: a Decimal against a
    # `multipleOf`), jsonschema decides and names.
    assert all(theirs is not False for ours, theirs in verdicts if ours), schema_name


@pytest.mark.parametrize("name", ["Heartbeat", "StatusNotification", "MeterValues", "StartTransaction", "Authorize"])
def test_valid_payloads_of_the_busiest_messages_are_decided_by_the_fast_path(name: str) -> None:
    for schema_name in (name, f"{name}Response"):
        assert frames._fast_verdict(schema_name, _example(_schema(schema_name), full=True))


# Hostile input (issue 13) ------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["not json", "", "[2,", "\x00", "[2,'a','Heartbeat',{}]"])
def test_frame_that_is_not_json_is_answered_with_id_minus_one(text: str) -> None:
    with pytest.raises(UnreadableFrame) as caught:
        frames.parse_frame(text)
    assert caught.value.answer_id == "-1"
    assert caught.value.code is ErrorCode.FORMATION_VIOLATION


@pytest.mark.parametrize(
    ("text", "unique_id"),
    [
        ('[2,"abc","Heartbeat",{', "abc"),
        ('[2, "m-1" ,"Heartbeat",{}]]', "m-1"),
        ('[2,"x1","Heartbeat",{"a":NaN}]', "x1"),
    ],
)
def test_call_that_is_not_json_is_answered_with_the_id_it_shows(text: str, unique_id: str) -> None:
    with pytest.raises(UnreadableFrame) as caught:
        frames.parse_frame(text)
    assert caught.value.answer_id == unique_id


@pytest.mark.parametrize("text", ['[9,"a",{}]', '[3,"a",[]]', '[4,"a","X",{}]', '[3,"abc",{'])
def test_unreadable_answer_or_unknown_message_type_gets_no_answer(text: str) -> None:
    with pytest.raises(UnreadableFrame) as caught:
        frames.parse_frame(text)
    assert caught.value.answer_id is None


@pytest.mark.parametrize("text", ["{}", "[2]", "[]", '[2,17,"Heartbeat",{}]', "17"])
def test_json_that_is_no_frame_is_answered_with_id_minus_one(text: str) -> None:
    with pytest.raises(UnreadableFrame) as caught:
        frames.parse_frame(text)
    assert caught.value.answer_id == "-1"


def test_recovered_id_longer_than_36_characters_is_not_echoed() -> None:
    with pytest.raises(UnreadableFrame) as caught:
        frames.parse_frame('[2,"' + "x" * 37 + '","Heartbeat",{')
    assert caught.value.answer_id == "-1"


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, 2**63, 2**64 + 1, 10**40])
def test_integer_beyond_32_bits_is_type_constraint_violation(value: int) -> None:
    call = Call("a", "StartTransaction", {"connectorId": 1, "idTag": "T", "meterStart": value, "timestamp": NOW})
    with pytest.raises(TypeConstraintViolation) as caught:
        frames.check_call(call)
    assert caught.value.field == "meterStart"


@pytest.mark.parametrize("value", [2**31 - 1, -(2**31)])
def test_integer_at_the_32_bit_bounds_passes_the_range_check(value: int) -> None:
    frames.check_call(
        Call("a", "StartTransaction", {"connectorId": 1, "idTag": "T", "meterStart": value, "timestamp": NOW})
    )


def test_nested_integer_beyond_32_bits_names_its_path() -> None:
    payload = {
        "connectorId": 1,
        "meterValue": [{"timestamp": NOW, "sampledValue": [{"value": "1"}]}],
        "transactionId": 2**40,
    }
    with pytest.raises(TypeConstraintViolation) as caught:
        frames.check_call(Call("a", "MeterValues", payload))
    assert caught.value.field == "transactionId"


def test_lone_surrogate_in_a_payload_string_is_type_constraint_violation_naming_the_field() -> None:
    with pytest.raises(TypeConstraintViolation) as caught:
        frames.parse_frame('[2,"a","Authorize",{"idTag":"ab\\ud800"}]')
    assert (caught.value.field, caught.value.unique_id) == ("idTag", "a")


def test_lone_surrogate_in_a_payload_key_is_type_constraint_violation() -> None:
    with pytest.raises(TypeConstraintViolation) as caught:
        frames.parse_frame('[2,"a","DataTransfer",{"vendorId":"v","\\udc00":1}]')
    assert caught.value.unique_id == "a"
    frames.serialize_frame(frames.call_error_for(caught.value, "a")).encode("utf-8")


def test_surrogate_pair_is_a_character_like_any_other() -> None:
    frame = frames.parse_frame('[2,"a","Authorize",{"idTag":"\\ud83d\\ude00"}]')
    assert frame == Call("a", "Authorize", {"idTag": "\U0001f600"})


def test_lone_surrogate_in_the_id_is_answered_with_id_minus_one() -> None:
    with pytest.raises(UnreadableFrame) as caught:
        frames.parse_frame('[2,"a\\ud800","Heartbeat",{}]')
    assert caught.value.answer_id == "-1"


def test_lone_surrogate_in_the_action_is_formation_violation_with_its_id() -> None:
    with pytest.raises(MalformedFrame) as caught:
        frames.parse_frame('[2,"a","Heart\\udbffbeat",{}]')
    assert caught.value.unique_id == "a"
    frames.serialize_frame(frames.call_error_for(caught.value, "a")).encode("utf-8")


def test_lone_surrogate_in_a_result_fails_the_check_of_the_call_it_answers() -> None:
    frame = frames.parse_frame('[3,"a",{"status":"Accepted","x":"\\ud800"}]')
    assert isinstance(frame, CallResult)
    with pytest.raises(TypeConstraintViolation):
        frames.check_result("ClearCache", frame)


def test_lone_surrogate_in_a_call_error_is_replaced_so_it_can_be_shown() -> None:
    frame = frames.parse_frame('[4,"a","InternalError","bad \\ud800",{"k\\udc00":"v\\ud800"}]')
    assert isinstance(frame, CallError)
    json.dumps([frame.description, frame.details], ensure_ascii=False).encode("utf-8")
    assert frame.description == "bad \ufffd"


def test_text_holding_a_raw_lone_surrogate_is_unreadable() -> None:
    with pytest.raises(UnreadableFrame):
        frames.parse_frame('[2,"a","Authorize",{"idTag":"\ud800"}]')


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_date_time_that_cannot_be_shown_in_utc_is_property_constraint_violation(stamp: str) -> None:
    with pytest.raises(PropertyConstraintViolation):
        frames.check_call(
            Call(
                "a",
                "StatusNotification",
                {"connectorId": 1, "errorCode": "NoError", "status": "Available", "timestamp": stamp},
            )
        )


def test_only_causes_answered_with_internal_error_are_our_own_faults() -> None:
    assert frames.is_own_fault(RuntimeError("x"))
    assert frames.is_own_fault(LocalProtocolError("x"))
    assert not frames.is_own_fault(UnknownAction("X"))
    assert not frames.is_own_fault(InvalidInput("no such connector", field="connectorId"))
    assert not frames.is_own_fault(CallErrorReceived("Authorize", ErrorCode.INTERNAL_ERROR, "far end", {}))


def test_nul_in_a_payload_string_is_type_constraint_violation() -> None:
    with pytest.raises(TypeConstraintViolation) as caught:
        frames.parse_frame('[2,"a","Authorize",{"idTag":"A\\u0000"}]')
    assert caught.value.field == "idTag"


@pytest.mark.parametrize("action", ["Authorize", "StartTransaction"])
def test_empty_id_tag_is_property_constraint_violation(action: str) -> None:
    payload: dict[str, Any] = {"idTag": ""}
    if action == "StartTransaction":
        payload.update(connectorId=1, meterStart=0, timestamp=NOW)
    with pytest.raises(PropertyConstraintViolation) as caught:
        frames.check_call(Call("a", action, payload))
    assert caught.value.field == "idTag"
