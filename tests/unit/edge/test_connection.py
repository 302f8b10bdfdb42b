"""The RPC connection shell driven in memory, with a manual clock: what goes out, what comes back, and when."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chargenet.clock import ManualClock
from chargenet.edge.connection import AnswerLate, ConnectionLost, RpcConnection
from chargenet.edge.ocpp16.errors import CallErrorReceived, CallTimedOut, PayloadViolation
from chargenet.edge.ocpp16.frames import Call, Payload
from chargenet.errors import InvalidInput, StoreUnreachable

HEARTBEAT_ANSWER = {"currentTime": "2026-07-01T12:00:00Z"}


class Wire:
    """The far end: collects what the connection sends."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.arrived = asyncio.Event()

    async def send(self, text: str) -> None:
        self.sent.append(json.loads(text))
        self.arrived.set()

    async def next(self) -> Any:
        while not self.sent:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 2)
        return self.sent.pop(0)


async def within_turns(condition: Callable[[], bool], turns: int = 100) -> bool:
    """Whether `condition` holds within so many turns of the event loop: all in memory, nothing to wait for."""
    for _ in range(turns):
        if condition():
            return True
        await asyncio.sleep(0)
    return condition()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 7, 1, 12, 0, tzinfo=UTC))


@pytest.fixture
def wire() -> Wire:
    return Wire()


@pytest.fixture
async def connection(wire: Wire, clock: ManualClock) -> AsyncIterator[RpcConnection]:
    async def handler(call: Call) -> Payload | None:
        if call.action == "Heartbeat":
            return HEARTBEAT_ANSWER
        if call.action == "Authorize":
            return {"idTagInfo": {"status": "Nonsense"}}
        raise RuntimeError("handler broke")

    rpc = RpcConnection("test", wire.send, clock, handler)
    yield rpc
    await rpc.close()


async def past_its_timeout(connection: RpcConnection, wire: Wire, clock: ManualClock) -> tuple[str, AnswerLate]:
    """A ClearCache whose answer is listened for (5 minutes), past its 30 s timeout: its unique id, and the
    AnswerLate the call raised."""
    call = asyncio.create_task(connection.call("ClearCache", {}, late_within=timedelta(minutes=5)))
    unique_id = (await wire.next())[1]
    await asyncio.sleep(0)
    clock.advance(30)
    with pytest.raises(AnswerLate) as caught:
        await call
    return unique_id, caught.value


async def test_call_returns_the_answer(connection: RpcConnection, wire: Wire) -> None:
    task = asyncio.create_task(connection.call("ClearCache", {}))
    sent = await wire.next()
    assert sent[0] == 2 and sent[2:] == ["ClearCache", {}]
    await connection.feed(json.dumps([3, sent[1], {"status": "Accepted"}]))
    assert await task == {"status": "Accepted"}


async def test_call_error_answer_raises_with_its_code(connection: RpcConnection, wire: Wire) -> None:
    task = asyncio.create_task(connection.call("ClearCache", {}))
    sent = await wire.next()
    await connection.feed(json.dumps([4, sent[1], "NotSupported", "no", {}]))
    with pytest.raises(CallErrorReceived) as caught:
        await task
    assert caught.value.code == "NotSupported"


async def test_only_one_call_is_outstanding_at_a_time(connection: RpcConnection, wire: Wire) -> None:
    first = asyncio.create_task(connection.call("ClearCache", {}))
    second = asyncio.create_task(connection.call("Reset", {"type": "Soft"}))
    sent = await wire.next()
    await asyncio.sleep(0.01)
    assert wire.sent == []
    await connection.feed(json.dumps([3, sent[1], {"status": "Accepted"}]))
    assert (await wire.next())[2] == "Reset"
    assert await first == {"status": "Accepted"}
    second.cancel()


async def test_a_call_whose_caller_gave_up_leaves_no_unread_failure_when_the_link_closes(
    wire: Wire, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    rpc = RpcConnection("test", wire.send, clock, lambda call: asyncio.sleep(0, None))
    abandoned = asyncio.create_task(rpc.call("ClearCache", {}))
    await wire.next()
    abandoned.cancel()
    await asyncio.wait([abandoned])
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        await rpc.close()
        del abandoned  # with the frames its cancellation holds, the last reference to the call's future
        gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


async def test_a_queued_call_whose_caller_gave_up_is_never_sent(
    connection: RpcConnection, wire: Wire, clock: ManualClock
) -> None:
    first = asyncio.create_task(connection.call("ClearCache", {}))
    sent = await wire.next()
    abandoned = asyncio.create_task(connection.call("Reset", {"type": "Soft"}))
    assert await within_turns(lambda: clock.sleepers == 2)  # both calls wait for their answers
    abandoned.cancel()
    await asyncio.wait([abandoned])
    third = asyncio.create_task(connection.call("GetConfiguration", {}))
    await connection.feed(json.dumps([3, sent[1], {"status": "Accepted"}]))
    assert (await wire.next())[2] == "GetConfiguration"
    assert await first == {"status": "Accepted"}
    third.cancel()


async def test_a_sent_call_whose_caller_gave_up_keeps_the_slot_until_its_timeout(
    connection: RpcConnection, wire: Wire, clock: ManualClock
) -> None:
    abandoned = asyncio.create_task(connection.call("ClearCache", {}))
    await wire.next()
    abandoned.cancel()
    await asyncio.wait([abandoned])
    assert await within_turns(lambda: clock.sleepers == 1)  # the abandoned call's own timeout
    clock.advance(10)
    following = asyncio.create_task(connection.call("Reset", {"type": "Soft"}))
    assert await within_turns(lambda: clock.sleepers == 2)
    assert wire.sent == []  # the station has not answered, nor has the first call timed out
    clock.advance(20)
    assert (await wire.next())[2] == "Reset"
    following.cancel()


async def test_call_times_out_on_the_clock_and_a_late_answer_goes_to_nobody(
    connection: RpcConnection, wire: Wire, clock: ManualClock
) -> None:
    first = asyncio.create_task(connection.call("ClearCache", {}))
    late_id = (await wire.next())[1]
    await asyncio.sleep(0)
    clock.advance(30)
    with pytest.raises(CallTimedOut):
        await first
    second = asyncio.create_task(connection.call("ClearCache", {}))
    second_id = (await wire.next())[1]
    await connection.feed(json.dumps([3, late_id, {"status": "Rejected"}]))
    assert not second.done()
    await connection.feed(json.dumps([3, second_id, {"status": "Accepted"}]))
    assert await second == {"status": "Accepted"}
    assert connection.session.late_answers == 1


async def test_call_listened_for_hands_its_late_answer_to_its_caller_alone(
    connection: RpcConnection, wire: Wire, clock: ManualClock
) -> None:
    late_id, late = await past_its_timeout(connection, wire, clock)
    second = asyncio.create_task(connection.call("ClearCache", {}))
    second_id = (await wire.next())[1]  # the slot was freed at the timeout
    await connection.feed(json.dumps([3, late_id, {"status": "Rejected"}]))
    assert await late.answer == {"status": "Rejected"}
    assert not second.done()
    await connection.feed(json.dumps([3, second_id, {"status": "Accepted"}]))
    assert await second == {"status": "Accepted"}


async def test_listening_for_a_late_answer_ends_in_a_timeout(
    connection: RpcConnection, wire: Wire, clock: ManualClock
) -> None:
    _, late = await past_its_timeout(connection, wire, clock)
    await asyncio.sleep(0)
    clock.advance(300)
    with pytest.raises(CallTimedOut):
        await late.answer


async def test_listening_for_a_late_answer_ends_when_the_connection_closes(
    connection: RpcConnection, wire: Wire, clock: ManualClock
) -> None:
    _, late = await past_its_timeout(connection, wire, clock)
    await connection.close()
    with pytest.raises(ConnectionLost):
        await late.answer


async def test_call_times_out_when_its_timer_fires_even_if_the_clock_stepped_back(
    connection: RpcConnection, wire: Wire, clock: ManualClock
) -> None:
    first = asyncio.create_task(connection.call("ClearCache", {}))
    await wire.next()
    while clock.sleepers == 0:
        await asyncio.sleep(0)
    clock.advance(30)  # the call's timer fires ...
    clock.set(clock.now() - timedelta(seconds=5))  # ... and the wall clock steps back before the call wakes up
    with pytest.raises(CallTimedOut):
        await first
    assert connection.session.outstanding is None
    second = asyncio.create_task(connection.call("Reset", {"type": "Soft"}))
    assert (await wire.next())[2] == "Reset"
    second.cancel()


async def test_peer_call_is_answered_while_our_call_is_outstanding(connection: RpcConnection, wire: Wire) -> None:
    ours = asyncio.create_task(connection.call("ClearCache", {}))
    await wire.next()
    await connection.feed(json.dumps([2, "p1", "Heartbeat", {}]))
    assert await wire.next() == [3, "p1", HEARTBEAT_ANSWER]
    ours.cancel()


@pytest.mark.expected_traceback("RuntimeError: handler broke")
async def test_handler_failure_is_answered_with_internal_error(connection: RpcConnection, wire: Wire) -> None:
    await connection.feed(json.dumps([2, "p1", "DataTransfer", {"vendorId": "x"}]))
    assert await wire.next() == [4, "p1", "InternalError", "An internal error occurred.", {}]


@pytest.mark.expected_traceback("'Nonsense' is not one of")
async def test_invalid_answer_built_by_a_handler_is_internal_error(connection: RpcConnection, wire: Wire) -> None:
    await connection.feed(json.dumps([2, "p1", "Authorize", {"idTag": "T"}]))
    assert (await wire.next())[2] == "InternalError"


async def test_answer_that_breaks_its_schema_raises_a_payload_violation(connection: RpcConnection, wire: Wire) -> None:
    task = asyncio.create_task(connection.call("ClearCache", {}))
    sent = await wire.next()
    await connection.feed(json.dumps([3, sent[1], {"status": "Maybe"}]))
    with pytest.raises(PayloadViolation):
        await task


async def test_close_fails_waiting_calls(connection: RpcConnection, wire: Wire) -> None:
    task = asyncio.create_task(connection.call("ClearCache", {}))
    await wire.next()
    await connection.close()
    with pytest.raises(ConnectionLost):
        await task


async def test_fifth_unreadable_frame_asks_to_close_with_1002(connection: RpcConnection) -> None:
    results = [await connection.feed("nonsense") for _ in range(5)]
    assert results[:4] == [None] * 4
    assert results[4] is not None and results[4].code == 1002


async def test_frame_that_is_not_json_is_answered_with_formation_violation_under_id_minus_one(
    connection: RpcConnection, wire: Wire
) -> None:
    assert await connection.feed("nonsense") is None
    answer = await wire.next()
    assert answer[:3] == [4, "-1", "FormationViolation"] and answer[4] == {}


async def test_call_that_is_not_json_is_answered_under_the_id_it_shows(connection: RpcConnection, wire: Wire) -> None:
    await connection.feed('[2,"m7","Heartbeat",{')
    assert (await wire.next())[:3] == [4, "m7", "FormationViolation"]


async def test_answered_unreadable_frames_still_close_after_five_in_a_row(
    connection: RpcConnection, wire: Wire
) -> None:
    results = [await connection.feed("nonsense") for _ in range(5)]
    assert results[4] is not None and results[4].code == 1002
    assert [frame[1] for frame in wire.sent] == ["-1"] * 5


async def test_unknown_message_type_is_counted_without_an_answer(connection: RpcConnection, wire: Wire) -> None:
    await connection.feed('[9,"a",{}]')
    await connection.feed(json.dumps([2, "p1", "Heartbeat", {}]))
    assert await wire.next() == [3, "p1", HEARTBEAT_ANSWER]


async def test_calls_beyond_the_waiting_limit_get_protocol_error(wire: Wire, clock: ManualClock) -> None:
    release = asyncio.Event()

    async def slow(_: Call) -> Payload | None:
        await release.wait()
        return HEARTBEAT_ANSWER

    rpc = RpcConnection("test", wire.send, clock, slow)
    for n in range(10):
        await rpc.feed(json.dumps([2, f"f{n}", "Heartbeat", {}]))
    refused = await wire.next()
    assert refused[2] == "ProtocolError"
    release.set()
    await rpc.close()


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(
            ZeroDivisionError("our bug"), marks=pytest.mark.expected_traceback("ZeroDivisionError: our bug"), id="bug"
        ),
        pytest.param(
            StoreUnreachable("database down"),
            marks=pytest.mark.expected_traceback("StoreUnreachable: database down"),
            id="unmapped-chargenet-error",
        ),
    ],
)
async def test_own_fault_is_logged_once_with_its_cause_and_counted(
    wire: Wire, clock: ManualClock, caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    """A handler's bug, or a chargenet error no OCPP code stands for (the store down): InternalError to the
    station, one log record with the cause, one fault counted."""
    faults: list[tuple[str, str]] = []

    async def broken(call: Call) -> Payload | None:
        raise error

    rpc = RpcConnection(
        "test", wire.send, clock, broken, on_own_fault=lambda code, action: faults.append((code, action))
    )
    with caplog.at_level(logging.ERROR):
        await rpc.feed(json.dumps([2, "p1", "Heartbeat", {}]))
        assert (await wire.next())[2] == "InternalError"
    assert faults == [("InternalError", "Heartbeat")]
    records = [r for r in caplog.records if r.exc_info and r.name.startswith("chargenet")]
    assert len(records) == 1 and records[0].exc_info[1] is error  # type: ignore[index]
    await rpc.close()


async def test_station_fault_is_not_counted_as_ours(wire: Wire, clock: ManualClock) -> None:
    faults: list[tuple[str, str]] = []

    async def refusing(call: Call) -> Payload | None:
        raise InvalidInput("no connector 9", field="connectorId")

    rpc = RpcConnection(
        "test", wire.send, clock, refusing, on_own_fault=lambda code, action: faults.append((code, action))
    )
    await rpc.feed(json.dumps([2, "p1", "Heartbeat", {}]))
    assert (await wire.next())[2] == "PropertyConstraintViolation"
    assert faults == []
    await rpc.close()


async def test_a_call_made_after_the_answer_reaches_the_peer_after_that_answer(wire: Wire, clock: ManualClock) -> None:
    rpc: RpcConnection

    async def handler(call: Call) -> Payload | None:
        async def follow_up() -> None:
            await rpc.call("CertificateSigned", {"certificateChain": "PEM"})

        rpc.after_answer(follow_up)
        await asyncio.sleep(0)  # the follow-up waits for the answer, however long the handler takes
        return {"status": "Accepted"}

    rpc = RpcConnection("test", wire.send, clock, handler)
    try:
        await rpc.feed(json.dumps([2, "m-1", "SignCertificate", {"csr": "CSR"}]))
        assert await wire.next() == [3, "m-1", {"status": "Accepted"}]
        follow_up = await wire.next()
        assert follow_up[0] == 2 and follow_up[2:] == ["CertificateSigned", {"certificateChain": "PEM"}]
    finally:
        await rpc.close()


async def test_a_call_answered_at_once_is_answered_before_feed_returns_without_the_handler(
    wire: Wire, clock: ManualClock
) -> None:
    handled: list[str] = []

    async def handler(call: Call) -> Payload | None:
        handled.append(call.action)
        return {}

    def quick(call: Call) -> Payload | None:
        return HEARTBEAT_ANSWER if call.action == "Heartbeat" else None

    rpc = RpcConnection("test", wire.send, clock, handler, quick=quick)
    await rpc.feed(json.dumps([2, "h1", "Heartbeat", {}]))

    assert wire.sent == [[3, "h1", HEARTBEAT_ANSWER]]
    assert handled == []
    await rpc.close()


async def test_a_call_that_could_be_answered_at_once_waits_for_the_calls_before_it(
    wire: Wire, clock: ManualClock
) -> None:
    release = asyncio.Event()

    async def handler(call: Call) -> Payload | None:
        await release.wait()
        return HEARTBEAT_ANSWER if call.action == "Heartbeat" else {"idTagInfo": {"status": "Accepted"}}

    def quick(call: Call) -> Payload | None:
        return HEARTBEAT_ANSWER if call.action == "Heartbeat" else None

    rpc = RpcConnection("test", wire.send, clock, handler, quick=quick)
    await rpc.feed(json.dumps([2, "a1", "Authorize", {"idTag": "TAG"}]))
    await rpc.feed(json.dumps([2, "h1", "Heartbeat", {}]))
    assert wire.sent == []
    release.set()

    assert [(await wire.next())[1], (await wire.next())[1]] == ["a1", "h1"]
    await rpc.close()
