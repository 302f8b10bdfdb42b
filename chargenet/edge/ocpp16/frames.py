"""OCPP-J 1.6 frames: reading and writing `[2|3|4, ...]`, payload validation, and the one CALLERROR mapper.

No networking code here: text in, values out, values in, text out.

Rules (OCPP-J 1.6 §4 unless noted):
- Rule 1: a frame is UTF-8 JSON, an array whose first element is the MessageTypeId 2 (CALL), 3 (CALLRESULT)
  or 4 (CALLERROR). Anything whose id cannot be read is unreadable: it is counted, and
  `FrameLimits.max_unreadable_in_row` of them in a row close the connection with `FrameLimits.close_code`.
  1.6 has no frame for it, so the edge answers as the later OCPP-J editions do: a CALLERROR `FormationViolation`
  under the id the text shows when it starts like a CALL (Rule 1a), "-1" otherwise, so that a station's
  developer sees why. An unknown MessageTypeId is ignored (§4.1.3) and an answer is never answered: both are
  counted without a word.
- Rule 2: a CALL with a readable id but the wrong shape is `FormationViolation`, answered; a CALLRESULT or
  CALLERROR of the wrong shape cannot be answered and counts as unreadable.
- Rule 3: a CALL id is a string of at most 36 characters. The edge echoes whatever id it got in its answers.
- Rule 4: payloads are validated against the OCPP 1.6 JSON schemas shipped in the `ocpp` package, with our own
  mapping to Table 7 codes (see `_CODE_OF_KEYWORD`); the package's runtime is not used.
- Rule 5: numbers with a fraction are read as `Decimal` and written back with the digits they came with
  (the `ocpp` package rounds them to one decimal place). `NaN` and `Infinity` are not JSON and are refused.
- Rule 6: frames are limited to `FrameLimits.max_frame_bytes` (decisions.md §4: 64 KiB).
- Rule 7: what the OCPP 1.6 field tables require beyond the JSON schemas is checked with the schemas, with the
  same codes (`_POSITIVE_CONNECTOR`): a transaction runs on one connector, so StartTransaction and
  RemoteStartTransaction name a connector numbered from 1 ("connectorId > 0"); connector 0, the whole charge
  point, is `PropertyConstraintViolation`. ReserveNow keeps connector 0: there it reserves the charge point.
  An `idTag` is never empty (it identifies a driver's card), also `PropertyConstraintViolation`.
- Rule 8: every string is text the store can keep (`domain.text` Rule 2). JSON lets a `\\u` escape name half a
  surrogate pair, which no UTF-8 store, log or answer can hold, or U+0000, which PostgreSQL cannot: in a CALL's
  payload that is `TypeConstraintViolation` naming the field, in its id the frame is unreadable, in its action
  `FormationViolation`; an answer holding one fails the call it answers; a CALLERROR's text keeps U+FFFD in its
  place.
- Rule 9: integers are 32-bit signed, as OCPP 1.6 defines its `integer` type; a larger one is
  `TypeConstraintViolation` before it reaches a store or a service.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from enum import IntEnum
from functools import cache
from pathlib import Path
from typing import Any, TypeAlias

import fastjsonschema
from jsonschema import Draft4Validator, FormatChecker, validators
from jsonschema.exceptions import ValidationError, best_match

from chargenet.domain.text import is_storable, replace_unstorable
from chargenet.edge.ocpp16.errors import (
    CallErrorReceived,
    ErrorCode,
    FrameTooLarge,
    LocalProtocolError,
    MalformedFrame,
    MessageIdTooLong,
    OccurenceConstraintViolation,
    OcppProtocolError,
    PayloadViolation,
    PropertyConstraintViolation,
    RemoteProtocolError,
    StructureViolation,
    TypeConstraintViolation,
    UnknownAction,
    UnknownMessageType,
    UnreadableFrame,
    UnreadableMessageId,
    error_code_from_wire,
)
from chargenet.errors import ChargenetError, InvalidInput

Payload: TypeAlias = dict[str, Any]


class MessageTypeId(IntEnum):
    CALL = 2
    CALLRESULT = 3
    CALLERROR = 4


@dataclass(frozen=True, slots=True)
class Call:
    unique_id: str
    action: str
    payload: Payload


@dataclass(frozen=True, slots=True)
class CallResult:
    unique_id: str
    payload: Payload
    # Rule 8: an answer holding text that is not Unicode is kept for the call it answers, which fails with this.
    defect: PayloadViolation | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class CallError:
    unique_id: str
    code: ErrorCode
    description: str = ""
    details: Payload = field(default_factory=dict)


Frame: TypeAlias = Call | CallResult | CallError


@dataclass(frozen=True, slots=True)
class FrameLimits:
    max_frame_bytes: int = 65536
    max_unreadable_in_row: int = 5
    close_code: int = 1002  # WebSocket "protocol error"
    max_id_length: int = 36


DEFAULT_LIMITS = FrameLimits()

# OCPP 1.6 (with the Security Whitepaper's messages) names who may send which CALL. DataTransfer goes both ways.
STATION_ACTIONS = frozenset(
    {
        "Authorize",
        "BootNotification",
        "DataTransfer",
        "DiagnosticsStatusNotification",
        "FirmwareStatusNotification",
        "Heartbeat",
        "MeterValues",
        "StartTransaction",
        "StatusNotification",
        "StopTransaction",
        "LogStatusNotification",
        "SecurityEventNotification",
        "SignCertificate",
        "SignedFirmwareStatusNotification",
    }
)


def _schema_dir(generation: str = "v16") -> Path:
    """The `ocpp` package's schemas of one generation (`v16`, `v201`): the framing is OCPP-J's in both, so the
    2.0.1 face validates through the functions below with `generation="v201"`."""
    # find_spec locates the package without executing it: its runtime (asyncio, its own validation) stays out.
    spec = importlib.util.find_spec("ocpp")
    if spec is None or spec.origin is None:
        raise ChargenetError("the `ocpp` package, which ships the OCPP JSON schemas, is not installed")
    return Path(spec.origin).parent / generation / "schemas"


@cache
def known_actions() -> frozenset[str]:
    """Every OCPP 1.6 action, read from the schema files."""
    return frozenset(p.stem for p in _schema_dir().glob("*.json") if not p.stem.endswith("Response"))


CENTRAL_ACTIONS = frozenset(known_actions() - STATION_ACTIONS | {"DataTransfer"})

_FORMATS = FormatChecker(formats=())


_DATE_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")


@_FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _DATE_TIME.fullmatch(value):
        return False
    try:
        # An instant that has no UTC form (year 1 east of Greenwich) cannot be stored or compared.
        datetime.fromisoformat(value).astimezone(UTC)
    except OverflowError:
        return False
    return True


# Rule 9: OCPP 1.6 integers are 32-bit signed ("integer: 32 bit (31 bit resolution, 1 sign bit)"), which the JSON
# schemas leave unsaid. Every integer property of every schema gets that range, as the keyword `int32` for jsonschema
# (a TypeConstraintViolation: the value is no OCPP integer) and as bounds for the compiled check.
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def _int32(validator: Any, wanted: object, instance: object, _schema: object) -> Iterator[ValidationError]:
    if wanted and validator.is_type(instance, "integer") and not INT32_MIN <= instance <= INT32_MAX:  # type: ignore[operator]
        yield ValidationError("an integer outside the 32-bit range of OCPP integers")


_Validator = validators.extend(Draft4Validator, {"int32": _int32})  # type: ignore[no-untyped-call]


def _is_integer_schema(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "integer" or (isinstance(kind, list) and "integer" in kind)


def _with_int32(node: Any, *, bounds: bool) -> Any:
    if isinstance(node, list):
        return [_with_int32(item, bounds=bounds) for item in node]
    if not isinstance(node, dict):
        return node
    copy = {key: _with_int32(value, bounds=bounds) for key, value in node.items()}
    if _is_integer_schema(node):
        if bounds:
            copy["minimum"] = max(node.get("minimum", INT32_MIN), INT32_MIN)
            copy["maximum"] = min(node.get("maximum", INT32_MAX), INT32_MAX)
        else:
            copy["int32"] = True
    return copy


@cache
def _schema(schema_name: str, generation: str = "v16") -> dict[str, Any]:
    text = (_schema_dir(generation) / f"{schema_name}.json").read_text(encoding="utf-8-sig")
    # Decimal on both sides makes `multipleOf: 0.1` exact (21.4 is a multiple of 0.1; as floats it is not).
    loaded: dict[str, Any] = json.loads(text, parse_float=Decimal)
    return loaded


@cache
def _validator(schema_name: str, generation: str = "v16") -> Draft4Validator:
    schema = _with_int32(_schema(schema_name, generation), bounds=False)
    validator: Draft4Validator = _Validator(schema, format_checker=_FORMATS)
    return validator


# Rule 4, the mapping. Table 7: "FormationViolation: payload ... not conforming to the PDU structure",
# "OccurenceConstraintViolation: ... violates occurrence constraints", "TypeConstraintViolation: ... data type
# constraints", "PropertyConstraintViolation: ... a field contains an invalid value". OCPP 1.6 defines the
# CiString<N>Type data types, so a string over its length breaks a type constraint, not a value one.
_CODE_OF_KEYWORD: Mapping[str, type[PayloadViolation]] = {
    "additionalProperties": StructureViolation,
    "required": OccurenceConstraintViolation,
    "minItems": OccurenceConstraintViolation,
    "maxItems": OccurenceConstraintViolation,
    "type": TypeConstraintViolation,
    "maxLength": TypeConstraintViolation,
    "int32": TypeConstraintViolation,
    "enum": PropertyConstraintViolation,
    "format": PropertyConstraintViolation,
    "minimum": PropertyConstraintViolation,
    "maximum": PropertyConstraintViolation,
    "multipleOf": PropertyConstraintViolation,
}


def _path(error: ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required" and isinstance(error.validator_value, list):
        present = error.instance if isinstance(error.instance, dict) else {}
        missing = [name for name in error.validator_value if name not in present]
        parts.extend(missing[:1])
    return "/".join(parts)


# Rule 4, fast path. jsonschema walks its per-keyword machinery for every payload, which was the largest share of
# a Heartbeat's cost at the edge (most of it checking our own answer). `fastjsonschema` compiles each schema to
# plain Python once and gives the verdict in a microsecond or two; jsonschema is asked only about a payload it
# refuses, to name the violation (tests/unit/edge/ocpp16/test_frames.py holds the two verdicts together).
def _date_time_ok(value: object) -> bool:
    try:
        return _is_date_time(value)
    except ValueError:  # what the format checker is registered to read as "invalid"
        return False


def _any_value(_: object) -> bool:
    return True


# The formats the jsonschema validator checks, and no others (it leaves `uri` unchecked, so does this).
_COMPILED_FORMATS: dict[str, Callable[[Any], bool]] = {"date-time": _date_time_ok, "uri": _any_value}


@cache
def _compiled(schema_name: str, generation: str = "v16") -> Callable[[Any], Any]:
    # Draft 4 for all, as `_validator` reads them (a few security-extension schemas, and all of 2.0.1's, name
    # draft 6, where 1.0 would pass as an integer).
    base = _with_int32(_schema(schema_name, generation), bounds=True)
    schema: dict[str, Any] = {**base, "$schema": "http://json-schema.org/draft-04/schema#"}
    checker: Callable[[Any], Any] = fastjsonschema.compile(schema, formats=_COMPILED_FORMATS, use_default=False)
    return checker


def _fast_verdict(schema_name: str, payload: object, generation: str = "v16") -> bool:
    """Whether `payload` is valid by the compiled schema; False also when the compiled check cannot decide (a float
    against a Decimal bound, say), which leaves the verdict to jsonschema."""
    try:
        _compiled(schema_name, generation)(payload)
    except Exception:
        return False
    return True


def _exact(node: object) -> object:
    """The payload with its floats as the Decimals they print as: our own payloads carry floats (a limit of 30.6 A),
    and the schemas' Decimal bounds (`multipleOf: 0.1`) take Decimals only."""
    if isinstance(node, float):
        return Decimal(repr(node))
    if isinstance(node, dict):
        return {key: _exact(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_exact(value) for value in node]
    return node


def validate_payload(schema_name: str, payload: object, generation: str = "v16") -> None:
    """Check `payload` against the schema `schema_name` of `generation` (1.6: `Action` or `ActionResponse`;
    2.0.1: `ActionRequest` or `ActionResponse`).

    Raises the `PayloadViolation` subclass whose Table 7 code fits the first violation found.
    """
    if not isinstance(payload, dict):
        raise StructureViolation("the payload must be a JSON object", field="")
    if _fast_verdict(schema_name, payload, generation):
        return  # the common case, without jsonschema
    validator = _validator(schema_name, generation)
    error = best_match(validator.iter_errors(_exact(payload)))
    if error is None:
        return
    kind = _CODE_OF_KEYWORD.get(str(error.validator), PropertyConstraintViolation)
    raise kind(error.message, field=_path(error))


# Rule 7: actions whose `connectorId`, when present, is above 0.
_POSITIVE_CONNECTOR = frozenset({"StartTransaction", "RemoteStartTransaction"})


def _check_field_rules(action: str, payload: Payload) -> None:
    if action in _POSITIVE_CONNECTOR and payload.get("connectorId") == 0:
        raise PropertyConstraintViolation(
            f"{action} needs a connector numbered from 1; 0 is the whole charge point", field="connectorId"
        )
    if payload.get("idTag") == "":
        # An IdToken identifies a driver's card: an empty one identifies nobody (events carry 1-255 characters).
        raise PropertyConstraintViolation("idTag must not be empty", field="idTag")


def check_call(call: Call) -> None:
    """Check an incoming CALL's action and payload. Raises `UnknownAction` or a `PayloadViolation`."""
    if call.action not in known_actions():
        raise UnknownAction(call.action, unique_id=call.unique_id)
    try:
        validate_payload(call.action, call.payload)
        _check_field_rules(call.action, call.payload)
    except PayloadViolation as exc:
        exc.unique_id = call.unique_id
        raise


def check_result(action: str, result: CallResult) -> None:
    """Check a CALLRESULT's payload against the response schema of the CALL it answers."""
    if result.defect is not None:
        raise result.defect
    validate_payload(f"{action}Response", result.payload)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Rule 1a: the id a frame that is not JSON shows, when it starts like a CALL; a frame that starts like an answer
# is never answered.
_CALL_PREFIX = re.compile(r'\s*\[\s*2\s*,\s*"([^"\\\x00-\x1f]{1,36})"')
_ANSWER_PREFIX = re.compile(r"\s*\[\s*[34]\s*[,\]]")


def _answer_id_of_text(text: str) -> str | None:
    call = _CALL_PREFIX.match(text)
    if call is not None:
        return call.group(1)
    return None if _ANSWER_PREFIX.match(text) else "-1"


def _unstorable(text: str) -> bool:
    """Rule 8: a lone surrogate or U+0000, no text the store can keep."""
    return not is_storable(text)


def _printable(text: str) -> str:
    return replace_unstorable(text)


def _unstorable_at(value: object) -> list[str] | None:
    """The path of the first key or string holding a lone surrogate (Rule 8), or None. Iterative: a payload nests
    as deep as the JSON reader allowed."""
    stack: list[tuple[object, list[str]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if _unstorable(item):
                return path
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                if _unstorable(key):
                    return [*path, _printable(key)]
                stack.append((child, [*path, key]))
        elif isinstance(item, list):
            stack.extend((child, [*path, str(index)]) for index, child in reversed(list(enumerate(item))))
    return None


def _replace_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return replace_unstorable(value)
    if isinstance(value, dict):
        return {_replace_lone_surrogates(k): _replace_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_lone_surrogates(v) for v in value]
    return value


def _not_unicode(path: list[str], unique_id: str | None) -> TypeConstraintViolation:
    return TypeConstraintViolation(
        "a string holds a lone surrogate or U+0000: it is no text the service keeps",
        field="/".join(path),
        unique_id=unique_id,
    )


def parse_frame(data: str | bytes, limits: FrameLimits = DEFAULT_LIMITS) -> Frame:
    """Read one frame. Raises `UnreadableFrame` (Rule 1), `MalformedFrame` with the id set (Rule 2), or a
    `TypeConstraintViolation` with the id set for a CALL whose payload is not Unicode text (Rule 8)."""
    try:
        # Decoding first: json.loads would also guess UTF-16 and UTF-32 from bytes, which OCPP-J does not allow.
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        size = len(data) if isinstance(data, bytes) else len(text.encode("utf-8"))
    except UnicodeError as exc:
        raise UnreadableFrame("not UTF-8 text") from exc
    if size > limits.max_frame_bytes:
        too_large = FrameTooLarge(size, limits.max_frame_bytes)
        too_large.answer_id = _answer_id_of_text(text[:64])
        raise too_large
    try:
        message = json.loads(text, parse_float=Decimal, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise UnreadableFrame("not JSON", answer_id=_answer_id_of_text(text)) from exc
    # Rule 8: a lone surrogate can only come from a \u escape in the text, so most frames skip the search.
    escaped = "\\u" in text
    if not isinstance(message, list) or len(message) < 3:
        answer = not (isinstance(message, list) and message and message[0] in (3, 4))
        raise UnreadableFrame("a frame is a JSON array of at least 3 elements", answer_id="-1" if answer else None)
    type_id, unique_id = message[0], message[1]
    is_call = type(type_id) is int and type_id == MessageTypeId.CALL
    if not isinstance(unique_id, str) or not unique_id or (escaped and _unstorable(unique_id)):
        raise UnreadableMessageId("the message id is not a non-empty string", answer_id="-1" if is_call else None)
    if type(type_id) is not int or type_id not in MessageTypeId._value2member_map_:
        raise UnknownMessageType(f"unknown MessageTypeId {type_id!r}"[:100], unique_id=unique_id)
    if is_call:
        call = _parse_call(message, unique_id, limits)
        if escaped:
            if _unstorable(call.action):
                raise MalformedFrame("the action is no Unicode text", unique_id=unique_id)
            found = _unstorable_at(call.payload)
            if found is not None:
                raise _not_unicode(found, unique_id)
        return call
    if type_id == MessageTypeId.CALLRESULT:
        if len(message) != 3 or not isinstance(message[2], dict):
            # An answer is never answered, so a broken one is as good as unreadable (Rule 1).
            raise UnreadableFrame("a CALLRESULT is [3, id, {payload}]", unique_id=unique_id, answer_id=None)
        found = _unstorable_at(message[2]) if escaped else None
        return CallResult(unique_id, message[2], None if found is None else _not_unicode(found, unique_id))
    error = _parse_call_error(message, unique_id)
    if escaped:
        # What the peer said is shown to people (API problems, logs): kept, with U+FFFD for what is not text.
        error = CallError(
            unique_id, error.code, _replace_lone_surrogates(error.description), _replace_lone_surrogates(error.details)
        )
    return error


def _parse_call(message: list[Any], unique_id: str, limits: FrameLimits) -> Call:
    if len(unique_id) > limits.max_id_length:
        raise MessageIdTooLong(f"message id longer than {limits.max_id_length} characters", unique_id=unique_id)
    if len(message) != 4 or not isinstance(message[2], str):
        raise MalformedFrame('a CALL is [2, id, "Action", {payload}]', unique_id=unique_id)
    if not isinstance(message[3], dict):
        raise MalformedFrame("the payload of a CALL must be a JSON object", unique_id=unique_id)
    return Call(unique_id, message[2], message[3])


def _parse_call_error(message: list[Any], unique_id: str) -> CallError:
    if len(message) != 5 or not all(isinstance(x, str) for x in message[2:4]) or not isinstance(message[4], dict):
        raise UnreadableFrame(
            'a CALLERROR is [4, id, "code", "description", {details}]', unique_id=unique_id, answer_id=None
        )
    code = error_code_from_wire(message[2])
    description = message[3]
    if code is None:
        # Keep what the peer meant to say; the code itself has no place in a 1.6 frame.
        code, description = ErrorCode.GENERIC_ERROR, f"{message[2]}: {description}"
    return CallError(unique_id, code, description, message[4])


def dump_payload(payload: Payload | list[Any]) -> str:
    """A payload (or a whole frame) as JSON text, with Rule 5's number handling."""
    return json.dumps(payload, default=_encode_default, ensure_ascii=False, separators=(",", ":"))


def load_payload(text: str) -> Payload:
    loaded: Payload = json.loads(text, parse_float=Decimal)
    return loaded


def _encode_default(value: object) -> object:
    if isinstance(value, Decimal):
        # Only literals with a fraction or exponent are read as Decimal; the shortest float repr gives back
        # the digits they were written with (up to 15 significant digits), where "%.1f" would round them.
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def serialize_frame(frame: Frame, limits: FrameLimits = DEFAULT_LIMITS) -> str:
    """Write one frame. Raises `LocalProtocolError` for a frame OCPP-J forbids us to send."""
    if isinstance(frame, Call):
        if not frame.unique_id or len(frame.unique_id) > limits.max_id_length:
            raise LocalProtocolError(f"CALL id {frame.unique_id!r} is not 1..{limits.max_id_length} characters")
        message: list[Any] = [MessageTypeId.CALL.value, frame.unique_id, frame.action, frame.payload]
    elif isinstance(frame, CallResult):
        message = [MessageTypeId.CALLRESULT.value, frame.unique_id, frame.payload]
    else:
        message = [MessageTypeId.CALLERROR.value, frame.unique_id, frame.code.value, frame.description, frame.details]
    try:
        text = json.dumps(message, default=_encode_default, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise LocalProtocolError(f"frame cannot be written as JSON: {exc}") from exc
    if len(text.encode("utf-8")) > limits.max_frame_bytes:
        raise LocalProtocolError(f"frame is over the {limits.max_frame_bytes} byte limit")
    return text


def build_call(unique_id: str, action: str, payload: Payload) -> Call:
    """A CALL we send, checked against its schema; a violation is our bug (`LocalProtocolError`)."""
    try:
        validate_payload(action, payload)
        _check_field_rules(action, payload)
    except PayloadViolation as exc:
        # The checker speaks of the peer's faults; this payload is ours, so the blame moves here.
        raise LocalProtocolError(f"{action}: {exc.message} ({exc.field})", code=exc.code) from exc
    return Call(unique_id, action, payload)


def build_result(action: str, unique_id: str, payload: Payload) -> CallResult:
    """A CALLRESULT we send, checked against the response schema; a violation is our bug."""
    try:
        validate_payload(f"{action}Response", payload)
    except PayloadViolation as exc:
        raise LocalProtocolError(f"{action}Response: {exc.message} ({exc.field})", code=exc.code) from exc
    return CallResult(unique_id, payload)


# The one mapper from errors to CALLERROR (style rule 3). Most specific class first; anything not listed,
# including our own bugs, becomes InternalError without details, so nothing internal leaks to a station.
_CODE_OF_ERROR: tuple[tuple[type[BaseException], ErrorCode], ...] = (
    (InvalidInput, ErrorCode.PROPERTY_CONSTRAINT_VIOLATION),
)


# What a CALLERROR repeats of the offending input stays short: a violation message may quote the whole value.
MAX_DESCRIPTION = 255


def _short(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 3] + "..."


def call_error_for(exc: BaseException, unique_id: str) -> CallError:
    """The CALLERROR that answers the CALL `unique_id` which failed with `exc`."""
    if isinstance(exc, RemoteProtocolError):
        details = {key: _short(value) if isinstance(value, str) else value for key, value in exc.details.items()}
        return CallError(unique_id, exc.code, _short(exc.message), details)
    if isinstance(exc, CallErrorReceived):
        # A relayed call failed at the far end: pass its error on as it came (the edge is a proxy there).
        return CallError(unique_id, exc.code, exc.description, dict(exc.details))
    if isinstance(exc, OcppProtocolError):
        return CallError(unique_id, ErrorCode.INTERNAL_ERROR, "An internal error occurred.")
    for kind, code in _CODE_OF_ERROR:
        if isinstance(exc, kind):
            details = {"field": _short(exc.field)} if isinstance(exc, InvalidInput) and exc.field else {}
            return CallError(unique_id, code, _short(str(exc)), details)
    return CallError(unique_id, ErrorCode.INTERNAL_ERROR, "An internal error occurred.")


OWN_FAULT_CODES = frozenset({ErrorCode.INTERNAL_ERROR, ErrorCode.GENERIC_ERROR})


def is_own_fault(exc: BaseException) -> bool:
    """Whether a CALL that failed with `exc` failed through chargenet's fault, not the peer's: answered with
    `InternalError` (or `GenericError`) and not relayed from the far end. The shell logs and counts each one."""
    if isinstance(exc, RemoteProtocolError | CallErrorReceived):
        return False
    return call_error_for(exc, "-").code in OWN_FAULT_CODES


@dataclass(slots=True)
class UnreadableRun:
    """Counts unreadable frames in a row (Rule 1); any readable frame ends the run."""

    limits: FrameLimits = DEFAULT_LIMITS
    in_row: int = 0
    total: int = 0

    def unreadable(self) -> bool:
        """Count one; True when the connection must now be closed with `limits.close_code`."""
        self.in_row += 1
        self.total += 1
        return self.in_row >= self.limits.max_unreadable_in_row

    def readable(self) -> None:
        self.in_row = 0
