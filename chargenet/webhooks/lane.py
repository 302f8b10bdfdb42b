"""The ordered, bounded webhook lane as a pure state machine (decisions.md §3, "Lanes").

Theory of operation. A lane belongs to one (webhook, event type). Its entries live in the store, ordered by
the order in which the lane filler took them from the outbox (commit order). This module never sees the store:
the worker hands it a `LaneView` (enabled flag, size, and the head with its retry state) and a `now`, and gets
back what to do. After an attempt it hands back the outcome and gets one effect to persist.

Rules (every transition of a lane follows from these):
- Rule 1: only the head is ever sent; the entry behind it waits until the head leaves (acknowledged or dead
  lettered). Order within a lane therefore equals the lane's storage order.
- Rule 2: a lane holds at most `LANE_CAPACITY` entries, enabled or not. An event arriving at a full lane does
  not enter it; it goes to the dead letters with reason `queue_full` (nothing is silently lost).
- Rule 3: a disabled lane sends nothing but keeps accepting entries (Rule 2 still applies).
- Rule 4: the head is due when it was never tried or its `next_attempt_at` has come.
- Rule 5: a 2xx acknowledges the head; it leaves the lane.
- Rule 6: any other outcome is a failed attempt. The retry policy says when to try again; when it says
  never, the head leaves the lane into the dead letters with its last error (reason `retries_exhausted`)
  and is logged with exception type `Webhook_SendHttp`.
- Rule 7: an attempt cancelled because the webhook was disabled does not count: the head keeps its state and
  is due again as soon as the webhook is enabled.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from chargenet.webhooks.retry import RetryPolicy

LANE_CAPACITY = 1000
SEND_FAILURE_EXCEPTION_TYPE = "Webhook_SendHttp"


class DeadLetterReason(StrEnum):
    RETRIES_EXHAUSTED = "retries_exhausted"
    QUEUE_FULL = "queue_full"
    UNSUBSCRIBED = "unsubscribed"
    """The webhook stopped subscribing to the event type while the event waited in its lane."""


class Admission(StrEnum):
    ENQUEUED = "enqueued"
    QUEUE_FULL = "queue_full"


def admit(size: int, capacity: int = LANE_CAPACITY) -> Admission:
    """Whether an event arriving at a lane of `size` entries enters it (Rules 2 and 3)."""
    return Admission.ENQUEUED if room(size, capacity) > 0 else Admission.QUEUE_FULL


def room(size: int, capacity: int = LANE_CAPACITY) -> int:
    """How many of the events arriving together at a lane of `size` entries enter it; the rest are refused."""
    return max(0, capacity - size)


@dataclass(frozen=True, slots=True)
class Head:
    entry_id: int
    event_id: str
    attempts: int = 0
    next_attempt_at: datetime | None = None
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class LaneView:
    enabled: bool
    size: int
    head: Head | None


# What is due at `now`.
@dataclass(frozen=True, slots=True)
class SendHead:
    head: Head
    attempt: int
    """1 for the first attempt, 2 for the first retry, and so on."""


@dataclass(frozen=True, slots=True)
class WaitUntil:
    at: datetime


@dataclass(frozen=True, slots=True)
class Idle:
    """The lane is empty."""


@dataclass(frozen=True, slots=True)
class Paused:
    """The webhook is disabled; its entries wait."""


Action = SendHead | WaitUntil | Idle | Paused


def due(lane: LaneView, now: datetime) -> Action:
    if not lane.enabled:
        return Paused()
    if lane.head is None:
        return Idle()
    head = lane.head
    if head.next_attempt_at is not None and head.next_attempt_at > now:
        return WaitUntil(head.next_attempt_at)
    return SendHead(head, head.attempts + 1)


# The outcome of one attempt.
@dataclass(frozen=True, slots=True)
class Delivered:
    status: int


@dataclass(frozen=True, slots=True)
class Failed:
    error: str
    """What went wrong, for the operator: `HTTP 500`, `redirect not followed (302)`, `timeout after 10 s`."""


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The attempt was interrupted because the webhook was disabled (Rule 7)."""


Outcome = Delivered | Failed | Cancelled


# What the worker persists after an attempt.
@dataclass(frozen=True, slots=True)
class Acknowledge:
    entry_id: int
    event_id: str
    attempts: int


@dataclass(frozen=True, slots=True)
class ScheduleRetry:
    head: Head


@dataclass(frozen=True, slots=True)
class DeadLetter:
    entry_id: int | None
    event_id: str
    reason: DeadLetterReason
    error: str
    attempts: int
    exception_type: str = SEND_FAILURE_EXCEPTION_TYPE


@dataclass(frozen=True, slots=True)
class KeepHead:
    head: Head


Effect = Acknowledge | ScheduleRetry | DeadLetter | KeepHead


def on_result(head: Head, outcome: Outcome, ended_at: datetime, policy: RetryPolicy | None = None) -> Effect:
    """The effect of one attempt at `head` that ended at `ended_at` (Rules 5, 6 and 7)."""
    policy = policy or RetryPolicy()
    if isinstance(outcome, Cancelled):
        return KeepHead(head)
    attempts = head.attempts + 1
    if isinstance(outcome, Delivered):
        return Acknowledge(head.entry_id, head.event_id, attempts)
    next_at = policy.next_attempt_at(attempts, ended_at)
    if next_at is None:
        return DeadLetter(
            entry_id=head.entry_id,
            event_id=head.event_id,
            reason=DeadLetterReason.RETRIES_EXHAUSTED,
            error=outcome.error,
            attempts=attempts,
        )
    return ScheduleRetry(replace(head, attempts=attempts, next_attempt_at=next_at, last_error=outcome.error))


def refused_at_full_lane(event_id: str, capacity: int = LANE_CAPACITY) -> DeadLetter:
    """The dead letter of an event that found its lane full (Rule 2)."""
    return DeadLetter(
        entry_id=None,
        event_id=event_id,
        reason=DeadLetterReason.QUEUE_FULL,
        error=f"lane full ({capacity} events waiting)",
        attempts=0,
    )


def unsubscribed(event_id: str, event_type: str) -> DeadLetter:
    """The dead letter of an event left in a lane whose event type the webhook no longer subscribes to."""
    return DeadLetter(
        entry_id=None,
        event_id=event_id,
        reason=DeadLetterReason.UNSUBSCRIBED,
        error=f"the webhook no longer subscribes to {event_type}",
        attempts=0,
    )


def outcome_of_status(status: int) -> Delivered | Failed:
    """Any 2xx is a delivery; redirects are not followed, so a 3xx is a failure like any other status."""
    if 200 <= status < 300:
        return Delivered(status)
    if 300 <= status < 400:
        return Failed(f"redirect not followed (HTTP {status})")
    return Failed(f"HTTP {status}")
