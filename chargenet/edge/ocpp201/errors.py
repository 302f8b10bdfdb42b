"""OCPP 2.0.1's CALLERROR codes (OCPP-J 2.0.1 §4.3), and the one mapper from what went wrong to them.

The errors themselves are OCPP-J's, shared with the 1.6 face (`ocpp16.errors`): what differs between the
generations is the words. 2.0.1 spells `FormatViolation` and `OccurrenceConstraintViolation`, adds
`RpcFrameworkError` (an unreadable or over-long message id) and `MessageTypeNotSupported` (a MessageTypeId OCPP-J
does not define, answered under the frame's id where 1.6 stays silent), and has no CALLRESULTERROR
(decisions.md §5, "Generations").
"""

from __future__ import annotations

from enum import StrEnum

from chargenet.edge.ocpp16.errors import (
    CallErrorReceived,
    DuplicateMessageId,
    MalformedFrame,
    MessageIdTooLong,
    OccurenceConstraintViolation,
    OcppProtocolError,
    PropertyConstraintViolation,
    RemoteProtocolError,
    StructureViolation,
    TooManyCalls,
    TypeConstraintViolation,
    UnknownAction,
    UnknownMessageType,
    UnreadableFrame,
    UnreadableMessageId,
    UnsupportedAction,
)
from chargenet.errors import InvalidInput


class ErrorCode201(StrEnum):
    FORMAT_VIOLATION = "FormatViolation"
    GENERIC_ERROR = "GenericError"
    INTERNAL_ERROR = "InternalError"
    MESSAGE_TYPE_NOT_SUPPORTED = "MessageTypeNotSupported"
    NOT_IMPLEMENTED = "NotImplemented"
    NOT_SUPPORTED = "NotSupported"
    OCCURRENCE_CONSTRAINT_VIOLATION = "OccurrenceConstraintViolation"
    PROPERTY_CONSTRAINT_VIOLATION = "PropertyConstraintViolation"
    PROTOCOL_ERROR = "ProtocolError"
    RPC_FRAMEWORK_ERROR = "RpcFrameworkError"
    SECURITY_ERROR = "SecurityError"
    TYPE_CONSTRAINT_VIOLATION = "TypeConstraintViolation"


# Most specific class first. Anything not listed, our own bugs included, is InternalError.
_CODE_OF_ERROR: tuple[tuple[type[BaseException], ErrorCode201], ...] = (
    (UnreadableMessageId, ErrorCode201.RPC_FRAMEWORK_ERROR),
    (MessageIdTooLong, ErrorCode201.RPC_FRAMEWORK_ERROR),
    (UnknownMessageType, ErrorCode201.MESSAGE_TYPE_NOT_SUPPORTED),
    (UnreadableFrame, ErrorCode201.FORMAT_VIOLATION),
    (MalformedFrame, ErrorCode201.FORMAT_VIOLATION),
    (StructureViolation, ErrorCode201.FORMAT_VIOLATION),
    (OccurenceConstraintViolation, ErrorCode201.OCCURRENCE_CONSTRAINT_VIOLATION),
    (TypeConstraintViolation, ErrorCode201.TYPE_CONSTRAINT_VIOLATION),
    (PropertyConstraintViolation, ErrorCode201.PROPERTY_CONSTRAINT_VIOLATION),
    (UnknownAction, ErrorCode201.NOT_IMPLEMENTED),
    (UnsupportedAction, ErrorCode201.NOT_SUPPORTED),
    (DuplicateMessageId, ErrorCode201.PROTOCOL_ERROR),
    (TooManyCalls, ErrorCode201.PROTOCOL_ERROR),
    (InvalidInput, ErrorCode201.PROPERTY_CONSTRAINT_VIOLATION),
)

OWN_FAULT_CODES = frozenset({ErrorCode201.INTERNAL_ERROR, ErrorCode201.GENERIC_ERROR})


def code_for(exc: BaseException) -> ErrorCode201:
    """The 2.0.1 code of a CALL that failed with `exc`."""
    if isinstance(exc, CallErrorReceived):
        try:
            return ErrorCode201(exc.code.value)
        except ValueError:
            return ErrorCode201.GENERIC_ERROR
    if isinstance(exc, OcppProtocolError) and not isinstance(exc, RemoteProtocolError):
        return ErrorCode201.INTERNAL_ERROR  # our own frame broke OCPP-J: a bug
    for kind, code in _CODE_OF_ERROR:
        if isinstance(exc, kind):
            return code
    return ErrorCode201.INTERNAL_ERROR


def is_own_fault(exc: BaseException) -> bool:
    if isinstance(exc, RemoteProtocolError | CallErrorReceived):
        return False
    return code_for(exc) in OWN_FAULT_CODES
