"""What an OCPP-J connection asks of the 1.6 face: how a peer's CALL is checked, ours built, and errors worded
(`connection.RpcDialect`)."""

from __future__ import annotations

from chargenet.edge.ocpp16 import frames
from chargenet.edge.ocpp16.errors import UnreadableFrame
from chargenet.edge.ocpp16.frames import Call, CallResult, FrameLimits, Payload


class Ocpp16Dialect:
    subprotocol = "ocpp1.6"

    def __init__(self, limits: FrameLimits = frames.DEFAULT_LIMITS) -> None:
        self.limits = limits

    def check_call(self, call: Call) -> None:
        frames.check_call(call)

    def build_call(self, unique_id: str, action: str, payload: Payload) -> Call:
        return frames.build_call(unique_id, action, payload)

    def build_result(self, action: str, unique_id: str, payload: Payload) -> CallResult:
        return frames.build_result(action, unique_id, payload)

    def check_result(self, action: str, result: CallResult) -> None:
        frames.check_result(action, result)

    def call_error(self, exc: BaseException, unique_id: str) -> tuple[str, str]:
        """The CALLERROR for a CALL that failed with `exc`: its code and its text."""
        error = frames.call_error_for(exc, unique_id)
        return error.code.value, frames.serialize_frame(error, self.limits)

    def unreadable_answer(self, exc: UnreadableFrame) -> str | None:
        """The answer to a frame that could not be read, or None (frames Rule 1)."""
        if exc.answer_id is None:
            return None
        return frames.serialize_frame(frames.call_error_for(exc, exc.answer_id), self.limits)

    def is_own_fault(self, exc: BaseException) -> bool:
        return frames.is_own_fault(exc)
