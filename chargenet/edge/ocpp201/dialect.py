"""What an OCPP-J connection asks of the 2.0.1 face (`connection.RpcDialect`): 2.0.1's actions and schemas, and
its CALLERROR words (`ocpp201.errors`)."""

from __future__ import annotations

import logging

from chargenet.edge.ocpp16 import frames
from chargenet.edge.ocpp16.errors import RemoteProtocolError, UnknownAction, UnreadableFrame
from chargenet.edge.ocpp16.frames import Call, CallResult, FrameLimits, Payload
from chargenet.edge.ocpp201 import errors
from chargenet.edge.ocpp201 import frames as frames201

log = logging.getLogger(__name__)

# What a CALLERROR repeats of the offending input stays short: a violation message may quote the whole value.
MAX_DESCRIPTION = 255

_OCPP16_ONLY = frames.known_actions() - frames201.known_actions()


def _short(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 3] + "..."


def call_error_text(exc: BaseException, unique_id: str, limits: FrameLimits = frames.DEFAULT_LIMITS) -> tuple[str, str]:
    """The CALLERROR frame `[4, id, code, description, details]` answering the CALL `unique_id` that failed with
    `exc`, in 2.0.1's words; nothing internal is told to a station."""
    code = errors.code_for(exc)
    details: Payload = {}
    if isinstance(exc, RemoteProtocolError):
        description = _short(exc.message)
        details = {key: _short(value) if isinstance(value, str) else value for key, value in exc.details.items()}
    elif code is errors.ErrorCode201.PROPERTY_CONSTRAINT_VIOLATION:
        description = _short(str(exc))
        field = getattr(exc, "field", None)
        details = {"field": _short(field)} if field else {}
    else:
        description = "An internal error occurred."
    message = [frames.MessageTypeId.CALLERROR.value, unique_id, code.value, description, details]
    text = frames.dump_payload(message)
    if len(text.encode("utf-8")) > limits.max_frame_bytes:
        text = frames.dump_payload([4, unique_id, code.value, "", {}])
    return code.value, text


class Ocpp201Dialect:
    subprotocol = "ocpp2.0.1"

    def __init__(self, limits: FrameLimits = frames.DEFAULT_LIMITS) -> None:
        self.limits = limits

    def check_call(self, call: Call) -> None:
        try:
            frames201.check_call(call)
        except UnknownAction:
            if call.action in _OCPP16_ONLY:
                log.warning("an OCPP 1.6 action on an OCPP 2.0.1 connection", extra={"fields": {"action": call.action}})
            raise

    def build_call(self, unique_id: str, action: str, payload: Payload) -> Call:
        return frames201.build_call(unique_id, action, payload)

    def build_result(self, action: str, unique_id: str, payload: Payload) -> CallResult:
        return frames201.build_result(action, unique_id, payload)

    def check_result(self, action: str, result: CallResult) -> None:
        frames201.check_result(action, result)

    def call_error(self, exc: BaseException, unique_id: str) -> tuple[str, str]:
        return call_error_text(exc, unique_id, self.limits)

    def unreadable_answer(self, exc: UnreadableFrame) -> str | None:
        """2.0.1 answers a MessageTypeId it does not know under the frame's id (`MessageTypeNotSupported`); the
        rest as 1.6 does (`ocpp16.frames` Rule 1), in 2.0.1's words."""
        answer_id = exc.unique_id if errors.code_for(exc) is errors.ErrorCode201.MESSAGE_TYPE_NOT_SUPPORTED else None
        answer_id = answer_id or exc.answer_id
        if answer_id is None:
            return None
        return call_error_text(exc, answer_id, self.limits)[1]

    def is_own_fault(self, exc: BaseException) -> bool:
        return errors.is_own_fault(exc)
