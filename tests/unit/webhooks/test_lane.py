from __future__ import annotations

from datetime import UTC, datetime, timedelta

from chargenet.webhooks.lane import (
    LANE_CAPACITY,
    Acknowledge,
    Admission,
    Cancelled,
    DeadLetter,
    DeadLetterReason,
    Delivered,
    Failed,
    Head,
    Idle,
    KeepHead,
    LaneView,
    Paused,
    ScheduleRetry,
    SendHead,
    WaitUntil,
    admit,
    due,
    on_result,
    outcome_of_status,
    refused_at_full_lane,
    room,
    unsubscribed,
)
from chargenet.webhooks.retry import RetryPolicy

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
HEAD = Head(entry_id=7, event_id="e-7")


def test_empty_lane_is_idle() -> None:
    assert due(LaneView(enabled=True, size=0, head=None), NOW) == Idle()


def test_new_head_is_due_at_once_as_first_attempt() -> None:
    assert due(LaneView(enabled=True, size=1, head=HEAD), NOW) == SendHead(HEAD, 1)


def test_disabled_lane_sends_nothing() -> None:
    assert due(LaneView(enabled=False, size=1, head=HEAD), NOW) == Paused()


def test_head_waiting_for_retry_is_not_due_before_its_time() -> None:
    head = Head(7, "e-7", attempts=1, next_attempt_at=NOW + timedelta(seconds=10))
    assert due(LaneView(True, 1, head), NOW + timedelta(seconds=9)) == WaitUntil(NOW + timedelta(seconds=10))


def test_head_waiting_for_retry_is_due_at_its_time_as_next_attempt() -> None:
    head = Head(7, "e-7", attempts=1, next_attempt_at=NOW + timedelta(seconds=10))
    assert due(LaneView(True, 1, head), NOW + timedelta(seconds=10)) == SendHead(head, 2)


def test_success_acknowledges_the_head() -> None:
    assert on_result(HEAD, Delivered(204), NOW) == Acknowledge(7, "e-7", attempts=1)


def test_failure_schedules_a_retry_ten_seconds_after_the_attempt_ended() -> None:
    effect = on_result(HEAD, Failed("HTTP 500"), NOW)
    assert effect == ScheduleRetry(Head(7, "e-7", 1, NOW + timedelta(seconds=10), "HTTP 500"))


def test_failure_of_the_last_retry_dead_letters_with_the_last_error() -> None:
    head = Head(7, "e-7", attempts=360, next_attempt_at=NOW, last_error="HTTP 500")
    effect = on_result(head, Failed("timeout after 10 s"), NOW)
    assert effect == DeadLetter(7, "e-7", DeadLetterReason.RETRIES_EXHAUSTED, "timeout after 10 s", 361)


def test_dead_letter_is_logged_as_webhook_sendhttp() -> None:
    head = Head(7, "e-7", attempts=360)
    effect = on_result(head, Failed("HTTP 500"), NOW)
    assert isinstance(effect, DeadLetter)
    assert effect.exception_type == "Webhook_SendHttp"


def test_cancelled_attempt_keeps_the_head_unchanged() -> None:
    head = Head(7, "e-7", attempts=3, next_attempt_at=NOW, last_error="HTTP 500")
    assert on_result(head, Cancelled(), NOW) == KeepHead(head)


def test_shorter_policy_dead_letters_sooner() -> None:
    effect = on_result(Head(1, "e-1", attempts=1), Failed("HTTP 503"), NOW, RetryPolicy(max_retries=1))
    assert isinstance(effect, DeadLetter)


def test_lane_below_capacity_admits_the_event() -> None:
    assert admit(LANE_CAPACITY - 1) is Admission.ENQUEUED


def test_full_lane_refuses_the_thousand_and_first_event() -> None:
    assert admit(LANE_CAPACITY) is Admission.QUEUE_FULL


def test_events_arriving_together_fill_the_lane_up_to_its_capacity() -> None:
    assert [room(size) for size in (0, LANE_CAPACITY - 3, LANE_CAPACITY, LANE_CAPACITY + 5)] == [1000, 3, 0, 0]


def test_refused_event_goes_to_dead_letters_as_queue_full() -> None:
    letter = refused_at_full_lane("e-1001")
    assert (letter.reason, letter.entry_id, letter.attempts) == (DeadLetterReason.QUEUE_FULL, None, 0)


def test_any_2xx_is_delivered() -> None:
    assert [outcome_of_status(s) for s in (200, 202, 299)] == [Delivered(200), Delivered(202), Delivered(299)]


def test_redirect_is_a_failure_and_is_not_followed() -> None:
    assert outcome_of_status(302) == Failed("redirect not followed (HTTP 302)")


def test_client_and_server_errors_are_failures() -> None:
    assert (outcome_of_status(401), outcome_of_status(500)) == (Failed("HTTP 401"), Failed("HTTP 500"))


def test_receiver_down_fifty_nine_minutes_gets_the_event() -> None:
    head, now = HEAD, NOW
    back_up = NOW + timedelta(minutes=59)
    while True:
        action = due(LaneView(True, 1, head), now)
        assert isinstance(action, SendHead)
        effect = on_result(head, Delivered(200) if now >= back_up else Failed("connection refused"), now)
        if not isinstance(effect, ScheduleRetry):
            break
        head, now = effect.head, effect.head.next_attempt_at or now
    assert isinstance(effect, Acknowledge)


def test_receiver_down_sixty_one_minutes_dead_letters_the_event() -> None:
    head, now = HEAD, NOW
    back_up = NOW + timedelta(minutes=61)
    while True:
        effect = on_result(head, Delivered(200) if now >= back_up else Failed("connection refused"), now)
        if not isinstance(effect, ScheduleRetry):
            break
        head, now = effect.head, effect.head.next_attempt_at or now
    assert isinstance(effect, DeadLetter)
    assert effect.attempts == 361


def test_event_left_in_a_dropped_lane_is_dead_lettered_as_unsubscribed() -> None:
    letter = unsubscribed("e-9", "StopTransaction")
    assert (letter.reason, letter.error) == (
        DeadLetterReason.UNSUBSCRIBED,
        "the webhook no longer subscribes to StopTransaction",
    )
