from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from chargenet.edge.ocpp16.errors import (
    CallErrorReceived,
    CallTimedOut,
    DuplicateMessageId,
    ErrorCode,
    LocalProtocolError,
)
from chargenet.edge.ocpp16.frames import Call, CallError, CallResult
from chargenet.edge.ocpp16.session import CallQueueFull, RpcSession, SessionLimits

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def counting_ids() -> RpcSession:
    counter = itertools.count(1)
    return RpcSession(lambda: f"id-{next(counter)}")


def test_submitted_call_is_sent_when_the_slot_is_free() -> None:
    session = counting_ids()
    unique_id = session.submit("Reset", {"type": "Soft"})
    assert session.next_to_send() == Call(unique_id, "Reset", {"type": "Soft"})


def test_second_call_waits_until_the_first_is_answered() -> None:
    session = counting_ids()
    first = session.submit("Reset", {"type": "Soft"})
    session.submit("ClearCache", {})
    session.next_to_send()
    assert session.next_to_send() is None
    session.receive_answer(CallResult(first, {"status": "Accepted"}))
    sent = session.next_to_send()
    assert sent is not None and sent.action == "ClearCache"


def test_result_completes_the_outstanding_call() -> None:
    session = counting_ids()
    unique_id = session.submit("Reset", {"type": "Soft"})
    session.next_to_send()
    outcome = session.receive_answer(CallResult(unique_id, {"status": "Accepted"}))
    assert outcome is not None and outcome.result == {"status": "Accepted"} and outcome.error is None


def test_call_error_completes_the_call_with_the_error_data() -> None:
    session = counting_ids()
    unique_id = session.submit("Reset", {"type": "Soft"})
    session.next_to_send()
    outcome = session.receive_answer(CallError(unique_id, ErrorCode.NOT_SUPPORTED, "no", {"a": 1}))
    assert outcome is not None and isinstance(outcome.error, CallErrorReceived)
    assert (outcome.error.code, outcome.error.description, outcome.error.details) == (
        ErrorCode.NOT_SUPPORTED,
        "no",
        {"a": 1},
    )


def test_waiting_call_times_out_without_being_sent() -> None:
    session = counting_ids()
    first = session.submit("Reset", {"type": "Soft"})
    session.next_to_send()
    second = session.submit("ClearCache", {})
    outcomes = [session.expire_call(first), session.expire_call(second)]
    assert [o.action for o in outcomes if o is not None] == ["Reset", "ClearCache"]
    assert session.next_to_send() is None


def test_expiring_a_call_by_its_id_frees_the_slot_whatever_the_time() -> None:
    session = counting_ids()
    first = session.submit("Reset", {"type": "Soft"})
    session.submit("ClearCache", {})
    session.next_to_send()
    outcome = session.expire_call(first)
    assert outcome is not None and isinstance(outcome.error, CallTimedOut) and outcome.unique_id == first
    sent = session.next_to_send()
    assert sent is not None and sent.action == "ClearCache"


def test_expiring_a_waiting_call_by_its_id_leaves_the_outstanding_one() -> None:
    session = counting_ids()
    first = session.submit("Reset", {"type": "Soft"})
    second = session.submit("ClearCache", {})
    session.next_to_send()
    outcome = session.expire_call(second)
    assert outcome is not None and outcome.action == "ClearCache"
    assert session.outstanding is not None and session.outstanding.unique_id == first


def test_expiring_a_call_that_already_ended_is_nothing() -> None:
    session = counting_ids()
    first = session.submit("Reset", {"type": "Soft"})
    session.next_to_send()
    session.receive_answer(CallResult(first, {"status": "Accepted"}))
    assert session.expire_call(first) is None


def test_late_answer_to_a_timed_out_call_is_dropped_and_counted() -> None:
    session = counting_ids()
    first = session.submit("Reset", {"type": "Soft"})
    session.next_to_send()
    session.expire_call(first)
    second = session.submit("ClearCache", {})
    session.next_to_send()
    assert session.receive_answer(CallResult(first, {"status": "Accepted"})) is None
    assert session.late_answers == 1
    assert session.outstanding is not None and session.outstanding.unique_id == second


def test_call_listened_for_after_its_timeout_frees_the_slot_and_still_gets_its_answer() -> None:
    session = counting_ids()
    first = session.submit("StartTransaction", {}, late_within=timedelta(minutes=5))
    session.next_to_send()
    timed_out = session.expire_call(first)
    assert timed_out is not None and isinstance(timed_out.error, CallTimedOut) and timed_out.listening
    second = session.submit("Heartbeat", {})
    assert session.next_to_send() == Call(second, "Heartbeat", {})
    late = session.receive_answer(CallResult(first, {"transactionId": 7}))
    assert late is not None and (late.unique_id, late.result) == (first, {"transactionId": 7})
    assert session.outstanding is not None and session.outstanding.unique_id == second


def test_late_answer_after_listening_ended_is_dropped() -> None:
    session = counting_ids()
    first = session.submit("StartTransaction", {}, late_within=timedelta(minutes=5))
    session.next_to_send()
    session.expire_call(first)
    ended = session.expire_call(first)  # the listening timer fired
    assert ended is not None and isinstance(ended.error, CallTimedOut) and not ended.listening
    assert session.receive_answer(CallResult(first, {})) is None
    assert session.late_answers == 1


def test_call_never_sent_is_not_listened_for() -> None:
    session = counting_ids()
    session.submit("Reset", {"type": "Soft"})
    session.next_to_send()
    waiting = session.submit("StartTransaction", {}, late_within=timedelta(minutes=5))
    outcome = session.expire_call(waiting)
    assert outcome is not None and (outcome.action, outcome.listening) == ("StartTransaction", False)
    assert session.expire_call(waiting) is None


def test_answer_nobody_asked_for_is_dropped_and_counted() -> None:
    session = counting_ids()
    assert session.receive_answer(CallResult("never", {})) is None
    assert session.unexpected_answers == 1


def test_waiting_queue_is_bounded() -> None:
    counter = itertools.count()
    session = RpcSession(lambda: str(next(counter)), SessionLimits(max_waiting_calls=2))
    session.submit("ClearCache", {})
    session.submit("ClearCache", {})
    with pytest.raises(CallQueueFull):
        session.submit("ClearCache", {})


def test_reused_own_id_is_a_local_error() -> None:
    session = RpcSession(lambda: "same")
    session.submit("ClearCache", {})
    with pytest.raises(LocalProtocolError):
        session.submit("ClearCache", {})


def test_cancel_all_returns_every_unfinished_call() -> None:
    session = counting_ids()
    session.submit("Reset", {"type": "Soft"})
    session.next_to_send()
    session.submit("ClearCache", {})
    assert [c.action for c in session.cancel_all()] == ["Reset", "ClearCache"]
    assert session.next_to_send() is None


def test_cancel_all_returns_calls_still_listened_for() -> None:
    session = counting_ids()
    listened = session.submit("StartTransaction", {}, late_within=timedelta(minutes=5))
    session.next_to_send()
    session.expire_call(listened)
    assert [c.action for c in session.cancel_all()] == ["StartTransaction"]


def test_peer_call_with_a_reused_id_is_a_duplicate() -> None:
    session = counting_ids()
    session.receive_call(Call("p1", "Heartbeat", {}))
    session.answered("p1")
    with pytest.raises(DuplicateMessageId) as caught:
        session.receive_call(Call("p1", "Heartbeat", {}))
    assert caught.value.unique_id == "p1"


def test_peer_ids_are_forgotten_beyond_the_limit() -> None:
    session = RpcSession(lambda: "x", SessionLimits(remembered_ids=2))
    for unique_id in ("a", "b", "c"):
        session.receive_call(Call(unique_id, "Heartbeat", {}))
    session.receive_call(Call("a", "Heartbeat", {}))


def test_peer_calls_do_not_wait_for_ours() -> None:
    session = counting_ids()
    session.submit("Reset", {"type": "Soft"})
    session.next_to_send()
    session.receive_call(Call("p1", "Heartbeat", {}))
    assert session.peer_calls_in_progress == 1
    assert session.answered("p1") == "Heartbeat"


def test_answering_a_peer_call_twice_is_a_local_error() -> None:
    session = counting_ids()
    session.receive_call(Call("p1", "Heartbeat", {}))
    session.answered("p1")
    with pytest.raises(LocalProtocolError):
        session.answered("p1")


def test_expiring_a_sent_call_listened_for_keeps_listening_until_expired_again() -> None:
    session = counting_ids()
    first = session.submit("StartTransaction", {}, late_within=timedelta(minutes=2))
    session.next_to_send()
    outcome = session.expire_call(first)
    assert outcome is not None and outcome.listening and session.outstanding is None
    late = session.expire_call(first)
    assert late is not None and not late.listening and session.expire_call(first) is None
