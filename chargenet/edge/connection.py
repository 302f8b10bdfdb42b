"""The I/O shell around `ocpp16.session.RpcSession`: one OCPP-J connection, whoever is at the other end.

Both the station side and the upstream side use it. Text comes in through `feed`, goes out through the
`send` callable the transport gives; the peer's CALLs are handled one at a time, in order, by a worker task,
so that answers to our own CALLs are read while a peer CALL is being handled (the two directions never wait
on each other).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from chargenet.clock import Clock
from chargenet.edge.ocpp16 import frames
from chargenet.edge.ocpp16.dialect import Ocpp16Dialect
from chargenet.edge.ocpp16.errors import (
    CallErrorReceived,
    CallTimedOut,
    PayloadViolation,
    RemoteProtocolError,
    TooManyCalls,
    UnreadableFrame,
)
from chargenet.edge.ocpp16.frames import Call, CallError, CallResult, FrameLimits, Payload
from chargenet.edge.ocpp16.session import CallOutcome, RpcSession, SessionLimits
from chargenet.errors import ChargenetError

log = logging.getLogger(__name__)

MAX_WAITING_PEER_CALLS = 8


class ConnectionLost(ChargenetError):
    """The connection closed while a call on it was waiting for its answer."""


class AnswerLate(ChargenetError):
    """Our CALL timed out after it was sent, and its caller keeps listening for the answer (session Rule 3).

    `answer` ends with the peer's answer when it comes in time, or raises what `RpcConnection.call` raises:
    `CallTimedOut` when listening ends, `ConnectionLost`, `CallErrorReceived`, `PayloadViolation`."""

    def __init__(self, action: str, answer: asyncio.Task[Payload]) -> None:
        super().__init__(f"{action} was not answered in time; its answer is still listened for")
        self.action = action
        self.answer = answer


# A peer-call handler returns the answer payload, or None to leave the call unanswered (see proxy Rule 5).
CallHandler = Callable[[Call], Awaitable[Payload | None]]
# A peer CALL answered at once, with no wait (a Heartbeat the edge answers itself): the answer payload, or None
# when the call needs the `CallHandler` after all. It may raise as the handler does.
QuickAnswer = Callable[[Call], Payload | None]
FrameLogger = Callable[[str, str], None]  # (direction "in" | "out", frame text)
OwnFaultCounter = Callable[[str, str], None]  # (CALLERROR code, action) of a call that failed through our fault
CallTimer = Callable[[str, float], None]  # (action, seconds) of a peer CALL, from its arrival until its answer is ready


class RpcDialect(Protocol):
    """What the connection asks of a protocol generation's face (`ocpp16.dialect`, `ocpp201.dialect`): the framing
    is OCPP-J's in both, the actions, schemas and CALLERROR words are the generation's."""

    subprotocol: str

    def check_call(self, call: Call) -> None: ...

    def build_call(self, unique_id: str, action: str, payload: Payload) -> Call: ...

    def build_result(self, action: str, unique_id: str, payload: Payload) -> CallResult: ...

    def check_result(self, action: str, result: CallResult) -> None: ...

    def call_error(self, exc: BaseException, unique_id: str) -> tuple[str, str]: ...

    def unreadable_answer(self, exc: UnreadableFrame) -> str | None: ...

    def is_own_fault(self, exc: BaseException) -> bool: ...


@dataclass(frozen=True, slots=True)
class Closing:
    """`feed` asks the transport to close with this code."""

    code: int
    reason: str


class OwnFaults:
    """How many peer CALLs were answered `InternalError` or `GenericError` through chargenet's own fault, by
    (code, action): the `OwnFaultCounter` every connection of an edge shares, read by `/metrics`."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def __call__(self, code: str, action: str) -> None:
        self.counts[(code, action)] += 1


def new_message_id() -> str:
    return str(uuid.uuid4())


async def _closed_handler(call: Call) -> Payload:
    raise ConnectionLost(f"{call.action} arrived on a closed connection")


class RpcConnection:
    def __init__(
        self,
        name: str,
        send: Callable[[str], Awaitable[None]],
        clock: Clock,
        handler: CallHandler,
        *,
        limits: FrameLimits = frames.DEFAULT_LIMITS,
        session_limits: SessionLimits | None = None,
        log_frame: FrameLogger | None = None,
        on_own_fault: OwnFaultCounter | None = None,
        time_call: CallTimer | None = None,
        dialect: RpcDialect | None = None,
        quick: QuickAnswer | None = None,
    ) -> None:
        self.name = name
        self.dialect: RpcDialect = dialect or Ocpp16Dialect(limits)
        self._send_text = send
        self._clock = clock
        self._handler = handler
        self._quick = quick
        self._limits = limits
        self._session_limits = session_limits or SessionLimits()
        self.session = RpcSession(new_message_id, self._session_limits)
        self._unreadable = frames.UnreadableRun(limits)
        self._futures: dict[str, asyncio.Future[CallOutcome]] = {}
        self._listening: dict[str, asyncio.Future[CallOutcome]] = {}  # late answers, until `call` takes them
        self._actions: dict[str, str] = {}
        # The peer's CALLs wait here for the one task that answers them in order. That task exists only while
        # there is work: an idle connection (most of them, most of the time) costs no task.
        self._incoming: deque[tuple[Call, float]] = deque()
        self._worker: asyncio.Task[None] | None = None
        self._log_frame = log_frame
        self._on_own_fault = on_own_fault
        self._time_call = time_call
        self._closed = False
        self._send_lock = asyncio.Lock()
        # Work that waits for the answer to the peer's CALL being handled (`after_answer`), and its running tasks.
        self._after_answer: list[Callable[[], Awaitable[None]]] = []
        self._follow_ups: set[asyncio.Task[None]] = set()

    async def _send(self, text: str) -> None:
        if self._log_frame is not None:
            self._log_frame("out", text)
        async with self._send_lock:
            await self._send_text(text)

    # Incoming --------------------------------------------------------------------------------------------

    async def feed(self, data: str | bytes) -> Closing | None:
        """One WebSocket message from the peer. Returns `Closing` when the connection must now close."""
        if self._log_frame is not None:
            self._log_frame("in", data if isinstance(data, str) else repr(data[:200]))
        try:
            if isinstance(data, bytes):
                raise UnreadableFrame("binary frames carry no OCPP-J messages")
            frame = frames.parse_frame(data, self._limits)
        except UnreadableFrame as exc:
            log.warning("unreadable frame", extra={"fields": {"peer": self.name, "reason": exc.message}})
            answer = self.dialect.unreadable_answer(exc)
            if answer is not None and not self._closed:
                await self._send(answer)
            if self._unreadable.unreadable():
                return Closing(self._limits.close_code, f"{self._limits.max_unreadable_in_row} unreadable frames")
            return None
        except RemoteProtocolError as exc:
            self._unreadable.readable()
            assert exc.unique_id is not None
            await self._send(self.dialect.call_error(exc, exc.unique_id)[1])
            return None
        self._unreadable.readable()
        if isinstance(frame, Call):
            await self._receive_call(frame)
        else:
            self._receive_answer(frame)
        return None

    def _answered_in(self, action: str, arrived: float) -> None:
        if self._time_call is not None:
            self._time_call(action, time.perf_counter() - arrived)

    async def _receive_call(self, call: Call) -> None:
        arrived = time.perf_counter()
        try:
            self.session.receive_call(call)
        except RemoteProtocolError as exc:
            self._answered_in(call.action, arrived)
            await self._send(self.dialect.call_error(exc, call.unique_id)[1])
            return
        try:
            self.dialect.check_call(call)
        except RemoteProtocolError as exc:
            self.session.answered(call.unique_id)
            self._answered_in(call.action, arrived)
            await self._send(self.dialect.call_error(exc, call.unique_id)[1])
            return
        if len(self._incoming) >= MAX_WAITING_PEER_CALLS:
            # OCPP-J §4.1.1: a peer sends one CALL at a time. One that floods gets refused, not queued forever.
            self.session.answered(call.unique_id)
            self._answered_in(call.action, arrived)
            error = TooManyCalls("too many calls waiting; send one at a time", unique_id=call.unique_id)
            await self._send(self.dialect.call_error(error, call.unique_id)[1])
            return
        if self._quick is not None and not self._incoming and (self._worker is None or self._worker.done()):
            # Nothing of the peer's waits to be answered first, so answering here keeps the order; a call answered
            # at once costs no task and no turn of the event loop (a tenth of a Heartbeat's CPU).
            try:
                payload = self._quick(call)
                answer = None if payload is None else self._result(call, payload)
            except Exception as exc:
                answer = self._failed(call, exc)
            if answer is not None:
                await self._answered(call, arrived, answer)
                return
        self._incoming.append((call, arrived))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._work(), name=f"rpc-{self.name}")

    async def _work(self) -> None:
        while self._incoming:
            call, arrived = self._incoming.popleft()
            try:
                answer: str | None = await self._answer(call)
            except Exception as exc:  # the worker must outlive any one call
                answer = self._failed(call, exc)
            await self._answered(call, arrived, answer)

    async def _answered(self, call: Call, arrived: float, answer: str | None) -> None:
        self.session.answered(call.unique_id)
        self._answered_in(call.action, arrived)
        if answer is not None and not self._closed:
            try:
                await self._send(answer)
            except Exception:
                log.info("answer not sent: connection gone", extra={"fields": {"peer": self.name}})
        self._start_follow_ups()

    def after_answer(self, work: Callable[[], Awaitable[None]]) -> None:
        """Start `work` once the peer's CALL being handled is answered: a CALL of ours that the peer must see after
        that answer (CertificateSigned after SignCertificate's). It runs in a task of its own, so the peer's next
        CALLs are not kept waiting; a failure is logged."""
        self._after_answer.append(work)

    def _start_follow_ups(self) -> None:
        works, self._after_answer = self._after_answer, []
        for work in works:
            if self._closed:
                return
            task = asyncio.get_running_loop().create_task(self._follow_up(work))
            self._follow_ups.add(task)
            task.add_done_callback(self._follow_ups.discard)

    async def _follow_up(self, work: Callable[[], Awaitable[None]]) -> None:
        try:
            await work()
        except Exception:
            log.warning("a follow-up of an answer failed", exc_info=True, extra={"fields": {"peer": self.name}})

    async def _answer(self, call: Call) -> str | None:
        payload = await self._handler(call)
        if payload is None:
            return None
        return self._result(call, payload)

    def _result(self, call: Call, payload: Payload) -> str:
        return frames.serialize_frame(self.dialect.build_result(call.action, call.unique_id, payload), self._limits)

    def _failed(self, call: Call, exc: Exception) -> str:
        """The answer to a CALL that failed with `exc`. The peer's faults get their code; ours (a bug, the store
        gone) get `InternalError`, and each of those is logged here, once, with its cause, and counted."""
        code, text = self.dialect.call_error(exc, call.unique_id)
        if self.dialect.is_own_fault(exc):
            log.error(
                "answering a call failed",
                exc_info=exc,
                extra={"fields": {"peer": self.name, "action": call.action, "code": code}},
            )
            if self._on_own_fault is not None:
                self._on_own_fault(code, call.action)
        return text

    def _receive_answer(self, frame: CallResult | CallError) -> None:
        outcome = self.session.receive_answer(frame)
        if outcome is None:
            log.info("answer matched no call", extra={"fields": {"peer": self.name, "id": frame.unique_id}})
            return
        future = self._futures.pop(outcome.unique_id, None)
        if future is not None and not future.done():
            future.set_result(outcome)
        asyncio.get_running_loop().create_task(self._pump())

    # Outgoing --------------------------------------------------------------------------------------------

    async def call(self, action: str, payload: Payload, *, late_within: timedelta | None = None) -> Payload:
        """Send a CALL and wait for its answer. Raises `CallErrorReceived`, `CallTimedOut`, `ConnectionLost`,
        or a `PayloadViolation` when the peer's answer does not fit its schema.

        With `late_within`, a call that times out after it was sent raises `AnswerLate` instead of
        `CallTimedOut`: the slot is free for the next call, and the answer is still listened for that long."""
        if self._closed:
            raise ConnectionLost(f"{self.name} is closed")
        self.dialect.build_call("check", action, payload)  # our own payload, so a violation is our bug
        unique_id = self.session.submit(action, payload, late_within=late_within)
        future: asyncio.Future[CallOutcome] = asyncio.get_running_loop().create_future()
        self._futures[unique_id] = future
        await self._pump()
        outcome = await self._outcome(future, self._session_limits.call_timeout, unique_id, action)
        if outcome.listening:
            assert late_within is not None
            late = self._listening.pop(unique_id)
            answer = asyncio.create_task(self._late_answer(action, unique_id, late, late_within))
            # Whoever holds the answer reads it; this only keeps asyncio from reporting a failure nobody read
            # when its holder is gone (the link closed).
            answer.add_done_callback(lambda task: task.cancelled() or task.exception())
            raise AnswerLate(action, answer)
        return self._payload(action, unique_id, outcome)

    async def _late_answer(
        self, action: str, unique_id: str, late: asyncio.Future[CallOutcome], late_within: timedelta
    ) -> Payload:
        outcome = await self._outcome(late, late_within, unique_id, action)
        if outcome.error is None:
            log.info("late answer heard", extra={"fields": {"peer": self.name, "action": action}})
        return self._payload(action, unique_id, outcome)

    async def _outcome(
        self, future: asyncio.Future[CallOutcome], within: timedelta, unique_id: str, action: str
    ) -> CallOutcome:
        sleeper = asyncio.ensure_future(self._clock.sleep(within.total_seconds()))
        try:
            waiting: list[asyncio.Future[Any]] = [future, sleeper]
            try:
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                # The caller is gone: a failure set on this future later (the link closing) would have no reader,
                # and asyncio would report it as never retrieved.
                future.cancel()
                self._abandon(unique_id, within)
                raise
            if not future.done():
                self._expire(unique_id, action)
        finally:
            sleeper.cancel()
        return future.result()

    def _abandon(self, unique_id: str, within: timedelta) -> None:
        """The call's caller is gone. Not sent yet, it is dropped; sent, it keeps the link's one slot until it is
        answered or `within` has passed (no CALL goes out while one is unanswered), and nobody listens after."""
        self._futures.pop(unique_id, None)
        outstanding = self.session.outstanding
        if outstanding is None or outstanding.unique_id != unique_id:
            self.session.expire_call(unique_id)
            return

        async def free_the_slot() -> None:
            await self._clock.sleep(within.total_seconds())
            if (ended := self.session.expire_call(unique_id)) is not None and ended.listening:
                self.session.expire_call(unique_id)
            await self._pump()

        task = asyncio.get_running_loop().create_task(free_the_slot())
        self._follow_ups.add(task)
        task.add_done_callback(self._follow_ups.discard)

    def _payload(self, action: str, unique_id: str, outcome: CallOutcome) -> Payload:
        if outcome.error is not None:
            raise outcome.error
        assert outcome.result is not None
        try:
            self.dialect.check_result(action, CallResult(unique_id, outcome.result))
        except PayloadViolation:
            log.warning("answer does not fit its schema", extra={"fields": {"peer": self.name, "action": action}})
            raise
        return outcome.result

    def _expire(self, unique_id: str, action: str) -> None:
        # This call's own timer fired, so this call ends, by its id: comparing deadlines with the clock's `now`
        # would keep it, and the slot, alive when the wall clock stepped back while it waited.
        outcome = self.session.expire_call(unique_id) or CallOutcome(
            unique_id, action, error=CallTimedOut(action, unique_id)
        )
        future = self._futures.pop(unique_id, None)
        if outcome.listening:
            # Registered before anything else runs, so an answer arriving at once already finds it.
            late: asyncio.Future[CallOutcome] = asyncio.get_running_loop().create_future()
            self._futures[unique_id] = self._listening[unique_id] = late
        if future is not None and not future.done():
            future.set_result(outcome)
        asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        while not self._closed and (call := self.session.next_to_send()) is not None:
            try:
                await self._send(frames.serialize_frame(call, self._limits))
            except Exception:
                self._fail_all()
                return

    # Closing ---------------------------------------------------------------------------------------------

    def _fail_all(self) -> None:
        self._listening.clear()
        for call in self.session.cancel_all():
            future = self._futures.pop(call.unique_id, None)
            if future is not None and not future.done():
                future.set_exception(ConnectionLost(f"{self.name} closed before {call.action} was answered"))

    async def close(self) -> None:
        self._closed = True
        # The handler is usually a method of the object that owns this connection: a reference cycle, which only
        # the garbage collector's full pass frees. After 10,000 stations dropped at once that pass held the event
        # loop for three seconds; dropped here, the connection is freed as soon as its owner lets go of it.
        self._handler = _closed_handler
        self._quick = None
        self._after_answer.clear()
        self._fail_all()
        for task in list(self._follow_ups):
            task.cancel()
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker


__all__ = [
    "AnswerLate",
    "CallErrorReceived",
    "CallHandler",
    "CallTimedOut",
    "CallTimer",
    "Closing",
    "ConnectionLost",
    "OwnFaults",
    "QuickAnswer",
    "RpcConnection",
]
