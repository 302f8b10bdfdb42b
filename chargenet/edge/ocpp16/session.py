"""One side of one OCPP-J connection: our outgoing CALLs and the peer's incoming ones.

Theory of operation. The shell feeds in what happens (a call to make, a frame received, a call's timer firing)
and takes out what to do (a CALL to send, a call's outcome). The session never sleeps and never reads a clock:
the shell keeps one timer per call, on its injectable clock, and says when it fired (`expire_call`).

Rules (OCPP-J 1.6 §4.1):
- Rule 1: we have at most one CALL outstanding (§4.1.1). Further calls wait in a bounded FIFO and are sent,
  in order, as the slot frees. The peer's CALLs are independent of ours: the two directions never wait on
  each other.
- Rule 2: each call has a timer started when it was submitted; when it fires the call fails with
  `CallTimedOut`, whether it was sent or still waiting, and the slot is freed. The call is expired by its id
  (`expire_call`), whatever the wall clock reads then: a clock stepped back (NTP, a resumed VM) must not keep
  a call, and its slot, alive past its timer.
- Rule 3: a CALLRESULT or CALLERROR completes only the outstanding call with the same id. A late answer to a
  timed-out call, or an answer nobody asked for, is dropped and counted; it is never handed to another call.
  Except: a call submitted with `late_within` that times out after it was sent is still listened for that
  much longer (its outcome says `listening`); its answer, when it comes in that time, completes it a second
  time, late, and only it, until the shell's listening timer expires it again. The slot is freed at the
  timeout all the same (Rule 2).
- Rule 4: our CALL ids are unique on this connection (the id factory's job; checked here).
- Rule 5: a peer CALL that reuses an id the peer already used for a CALL on this connection gets
  `DuplicateMessageId`. The ids are remembered up to `SessionLimits.remembered_ids`, oldest forgotten first.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from chargenet.edge.ocpp16.errors import CallErrorReceived, CallTimedOut, DuplicateMessageId, LocalProtocolError
from chargenet.edge.ocpp16.frames import Call, CallError, CallResult, Payload
from chargenet.errors import ChargenetError


@dataclass(frozen=True, slots=True)
class SessionLimits:
    call_timeout: timedelta = timedelta(seconds=30)
    max_waiting_calls: int = 100
    remembered_ids: int = 4096


class CallQueueFull(ChargenetError):
    """More calls are waiting for this connection than `SessionLimits.max_waiting_calls`."""


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """How one of our calls ended: exactly one of `result` and `error` is set."""

    unique_id: str
    action: str
    result: Payload | None = None
    error: CallErrorReceived | CallTimedOut | None = None
    listening: bool = False  # timed out, and its late answer is still listened for (Rule 3)


@dataclass(slots=True)
class _Pending:
    call: Call
    late_within: timedelta | None = None


class RpcSession:
    def __init__(self, id_factory: Callable[[], str], limits: SessionLimits | None = None) -> None:
        self._new_id = id_factory
        self._limits = limits or SessionLimits()
        self._waiting: deque[_Pending] = deque()
        self._outstanding: _Pending | None = None
        self._listening: dict[str, _Pending] = {}  # timed out after being sent, its answer still awaited
        self._our_ids: OrderedDict[str, None] = OrderedDict()
        self._peer_ids: OrderedDict[str, None] = OrderedDict()
        self._peer_in_progress: dict[str, str] = {}
        self.late_answers = 0
        self.unexpected_answers = 0

    # Our calls -------------------------------------------------------------------------------------------

    def submit(self, call_action: str, payload: Payload, *, late_within: timedelta | None = None) -> str:
        """Queue a CALL; returns its id. Raises `CallQueueFull` (Rule 1) or `LocalProtocolError` (Rule 4).
        `late_within`: how long to keep listening for the answer after a timeout (Rule 3)."""
        if len(self._waiting) >= self._limits.max_waiting_calls:
            raise CallQueueFull(f"{len(self._waiting)} calls already wait for this connection")
        unique_id = self._new_id()
        if unique_id in self._our_ids:
            raise LocalProtocolError(f"CALL id {unique_id!r} was already used on this connection")
        _remember(self._our_ids, unique_id, self._limits.remembered_ids)
        self._waiting.append(_Pending(Call(unique_id, call_action, payload), late_within))
        return unique_id

    def next_to_send(self) -> Call | None:
        """The next CALL to put on the wire, when the slot is free (Rule 1); the shell sends it at once."""
        if self._outstanding is not None or not self._waiting:
            return None
        self._outstanding = self._waiting.popleft()
        return self._outstanding.call

    @property
    def outstanding(self) -> Call | None:
        return self._outstanding.call if self._outstanding else None

    def receive_answer(self, frame: CallResult | CallError) -> CallOutcome | None:
        """Match an answer to the outstanding call, or to a timed-out one still listened for (Rule 3); None when
        it matches nothing."""
        pending = self._outstanding
        if pending is not None and pending.call.unique_id == frame.unique_id:
            self._outstanding = None
        else:
            pending = self._listening.pop(frame.unique_id, None)
        if pending is None:
            if frame.unique_id in self._our_ids:
                self.late_answers += 1
            else:
                self.unexpected_answers += 1
            return None
        call = pending.call
        if isinstance(frame, CallResult):
            return CallOutcome(call.unique_id, call.action, result=frame.payload)
        error = CallErrorReceived(call.action, frame.code, frame.description, frame.details)
        return CallOutcome(call.unique_id, call.action, error=error)

    def expire_call(self, unique_id: str) -> CallOutcome | None:
        """Fail the call `unique_id` now, sent, waiting or listened for (Rules 2 and 3); None when it has already
        ended. A sent call submitted with `late_within` is listened for from now on (`listening` set)."""
        listened = self._listening.pop(unique_id, None)
        if listened is not None:
            return _timed_out(listened)
        expired: _Pending | None
        if self._outstanding is not None and self._outstanding.call.unique_id == unique_id:
            expired, self._outstanding = self._outstanding, None
            if expired.late_within is not None:
                self._listening[unique_id] = expired
                return _timed_out(expired, listening=True)
        else:
            expired = next((p for p in self._waiting if p.call.unique_id == unique_id), None)
            if expired is None:
                return None
            self._waiting.remove(expired)
        return _timed_out(expired)

    def cancel_all(self) -> list[Call]:
        """The connection is gone: forget every call, returning them so the shell can fail their callers."""
        calls = [p.call for p in self._listening.values()]
        calls += ([self._outstanding.call] if self._outstanding else []) + [p.call for p in self._waiting]
        self._listening.clear()
        self._outstanding = None
        self._waiting.clear()
        return calls

    # The peer's calls ------------------------------------------------------------------------------------

    def receive_call(self, call: Call) -> None:
        """Register the peer's CALL before handling it. Raises `DuplicateMessageId` (Rule 5)."""
        if call.unique_id in self._peer_ids:
            raise DuplicateMessageId(
                f"message id {call.unique_id!r} was already used for a CALL on this connection",
                unique_id=call.unique_id,
            )
        _remember(self._peer_ids, call.unique_id, self._limits.remembered_ids)
        self._peer_in_progress[call.unique_id] = call.action

    def answered(self, unique_id: str) -> str:
        """Mark the peer's CALL answered, returning its action. Answering twice is our bug."""
        action = self._peer_in_progress.pop(unique_id, None)
        if action is None:
            raise LocalProtocolError(f"no CALL {unique_id!r} of the peer is waiting for an answer")
        return action

    @property
    def peer_calls_in_progress(self) -> int:
        return len(self._peer_in_progress)


def _timed_out(pending: _Pending, *, listening: bool = False) -> CallOutcome:
    call = pending.call
    return CallOutcome(
        call.unique_id, call.action, error=CallTimedOut(call.action, call.unique_id), listening=listening
    )


def _remember(ids: OrderedDict[str, None], unique_id: str, limit: int) -> None:
    ids[unique_id] = None
    while len(ids) > limit:
        ids.popitem(last=False)
