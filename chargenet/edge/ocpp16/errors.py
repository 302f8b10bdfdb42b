"""What can go wrong in OCPP-J 1.6 RPC, as one tree with the wire codes of OCPP-J 1.6 Table 7.

Theory of operation. Every error is either the peer's fault or ours (the h11 split):

- `RemoteProtocolError`: the peer sent something that breaks OCPP-J. When the frame is a CALL whose id
  can be read, the edge answers with a CALLERROR carrying the class's `code` and keeps the connection;
  otherwise (`UnreadableFrame`) the frame is dropped and counted, and a run of them closes the connection.
- `LocalProtocolError`: we were about to send something that breaks OCPP-J. That is a bug in chargenet:
  it is raised, never put on the wire, and a test that triggers it fails.

The same violation (a payload failing its schema) can be either, depending on who produced the payload;
`frames` raises the remote class while checking and re-raises it as `LocalProtocolError` on the sending
side, keeping the code, at the one place where outgoing frames are built.

The codes are spelled as OCPP-J 1.6 spells them (`FormationViolation`, `OccurenceConstraintViolation`,
errata "known issues that will not be fixed"). `NotImplemented` means the action is not known at all;
`NotSupported` means it is known but this receiver does not handle it. The `ocpp` package swaps those two.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, ClassVar

from chargenet.errors import ChargenetError


class ErrorCode(StrEnum):
    NOT_IMPLEMENTED = "NotImplemented"
    NOT_SUPPORTED = "NotSupported"
    INTERNAL_ERROR = "InternalError"
    PROTOCOL_ERROR = "ProtocolError"
    SECURITY_ERROR = "SecurityError"
    FORMATION_VIOLATION = "FormationViolation"
    PROPERTY_CONSTRAINT_VIOLATION = "PropertyConstraintViolation"
    OCCURENCE_CONSTRAINT_VIOLATION = "OccurenceConstraintViolation"
    TYPE_CONSTRAINT_VIOLATION = "TypeConstraintViolation"
    GENERIC_ERROR = "GenericError"


# Spellings other implementations put on the wire for the same meaning (OCPP 2.0.1, ocpp-rpc), read as the
# 1.6 code so that a relayed CALLERROR reaches a 1.6 station in the spelling it knows.
ERROR_CODE_ALIASES: Mapping[str, ErrorCode] = {
    "FormatViolation": ErrorCode.FORMATION_VIOLATION,
    "OccurrenceConstraintViolation": ErrorCode.OCCURENCE_CONSTRAINT_VIOLATION,
}


def error_code_from_wire(text: str) -> ErrorCode | None:
    """The 1.6 code for a code read from the wire, or None when it is no code of Table 7."""
    try:
        return ErrorCode(text)
    except ValueError:
        return ERROR_CODE_ALIASES.get(text)


class OcppProtocolError(ChargenetError):
    """Something broke OCPP-J 1.6. Abstract: raise `RemoteProtocolError` or `LocalProtocolError` subclasses."""

    code: ClassVar[ErrorCode] = ErrorCode.GENERIC_ERROR

    def __init__(self, message: str, *, unique_id: str | None = None, details: Mapping[str, Any] | None = None):
        super().__init__(message)
        self.unique_id = unique_id
        self.details: Mapping[str, Any] = details or {}


class RemoteProtocolError(OcppProtocolError):
    """The peer broke the protocol; answered with a CALLERROR when the frame's id is known."""


class UnreadableFrame(RemoteProtocolError):
    """Not a frame at all (not JSON, not an array, no readable id, unknown MessageTypeId): counted, and answered
    with a `FormationViolation` CALLERROR under `answer_id` unless that is None (an answer, or a MessageTypeId
    OCPP-J §4.1.3 says to ignore). `answer_id` is the id the frame shows when one can be recovered, "-1" otherwise
    (the convention of the later OCPP-J editions)."""

    code = ErrorCode.FORMATION_VIOLATION

    def __init__(
        self,
        message: str,
        *,
        unique_id: str | None = None,
        answer_id: str | None = "-1",
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, unique_id=unique_id, details=details)
        self.answer_id = answer_id


class UnreadableMessageId(UnreadableFrame):
    """The frame's message id is not a non-empty string (2.0.1 names this `RpcFrameworkError`)."""


class UnknownMessageType(UnreadableFrame):
    """A MessageTypeId OCPP-J does not define: ignored in 1.6 (§4.1.3); 2.0.1 answers `MessageTypeNotSupported`
    under `unique_id`."""

    def __init__(self, message: str, *, unique_id: str) -> None:
        super().__init__(message, unique_id=unique_id, answer_id=None)


class FrameTooLarge(UnreadableFrame):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes is over the {limit} byte limit")
        self.size = size
        self.limit = limit


class MalformedFrame(RemoteProtocolError):
    """A frame whose id is readable but whose structure is not OCPP-J (wrong element count or types)."""

    code = ErrorCode.FORMATION_VIOLATION


class MessageIdTooLong(MalformedFrame):
    """A CALL's id is longer than OCPP-J allows (2.0.1 names this `RpcFrameworkError`)."""


class UnknownAction(RemoteProtocolError):
    """The action is not an OCPP 1.6 action at all."""

    code = ErrorCode.NOT_IMPLEMENTED

    def __init__(self, action: str, *, unique_id: str | None = None) -> None:
        super().__init__(f"unknown action {action!r}", unique_id=unique_id)
        self.action = action


class UnsupportedAction(RemoteProtocolError):
    """The action is OCPP 1.6 but this receiver does not handle it (in this direction, or at all)."""

    code = ErrorCode.NOT_SUPPORTED

    def __init__(self, action: str, *, unique_id: str | None = None) -> None:
        super().__init__(f"action {action!r} is not supported here", unique_id=unique_id)
        self.action = action


class DuplicateMessageId(RemoteProtocolError):
    """A CALL reused an id the same sender already used for a CALL on this connection (OCPP-J §4.1.4)."""

    code = ErrorCode.PROTOCOL_ERROR


class TooManyCalls(RemoteProtocolError):
    """The peer sent more CALLs than wait to be answered (OCPP-J §4.1.1: one CALL at a time)."""

    code = ErrorCode.PROTOCOL_ERROR


class PayloadViolation(RemoteProtocolError):
    """A payload fails its schema; `field` is the JSON path of the offending field ("" for the payload itself)."""

    def __init__(self, message: str, *, field: str, unique_id: str | None = None) -> None:
        super().__init__(message, unique_id=unique_id, details={"field": field} if field else {})
        self.field = field


class StructureViolation(PayloadViolation):
    """A payload does not have the structure of its PDU (not an object, or a property the PDU does not have)."""

    code = ErrorCode.FORMATION_VIOLATION


class OccurenceConstraintViolation(PayloadViolation):
    """A required field is missing, or a list has too few or too many entries."""

    code = ErrorCode.OCCURENCE_CONSTRAINT_VIOLATION


class TypeConstraintViolation(PayloadViolation):
    """A field has the wrong JSON type, or is longer than its CiString type allows."""

    code = ErrorCode.TYPE_CONSTRAINT_VIOLATION


class PropertyConstraintViolation(PayloadViolation):
    """A field has a value outside what the PDU allows (an enum, a range, a date-time, a connector id)."""

    code = ErrorCode.PROPERTY_CONSTRAINT_VIOLATION


class LocalProtocolError(OcppProtocolError):
    """chargenet was about to send something that breaks OCPP-J: a bug, never sent."""

    def __init__(self, message: str, *, code: ErrorCode = ErrorCode.GENERIC_ERROR) -> None:
        super().__init__(message)
        self.violated_code = code


class CallErrorReceived(ChargenetError):
    """The peer answered our CALL with a CALLERROR."""

    def __init__(self, action: str, code: ErrorCode, description: str, details: Mapping[str, Any]) -> None:
        super().__init__(f"{action} answered with {code}: {description}")
        self.action = action
        self.code = code
        self.description = description
        self.details = details


class CallTimedOut(ChargenetError):
    """The peer did not answer our CALL before its deadline."""

    def __init__(self, action: str, unique_id: str) -> None:
        super().__init__(f"{action} ({unique_id}) was not answered in time")
        self.action = action
        self.unique_id = unique_id
