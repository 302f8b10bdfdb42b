"""The lanes in the store: enqueue, read the head, apply an effect of the lane core, leases, dead letters.

Every function runs in the caller's transaction. The lane core (`lane.py`) decides; these functions persist.
Leases: a lane is drained by the process named in `lease_owner` until `lease_expires_at`. A process takes a
free or expired lease with `SELECT ... FOR UPDATE SKIP LOCKED` on PostgreSQL (SQLite serializes writers with
`BEGIN IMMEDIATE`, so a plain update is enough there), renews it well before it runs out, and every write of a
lane's delivery state checks that the lease is still its own, so a process that lost its lane (paused too
long, or presumed dead) cannot acknowledge or retry on top of the new owner.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy import event as orm_event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from chargenet.store.models import Webhook, WebhookDeadLetter, WebhookDelivery, WebhookLane, WebhookLaneEntry
from chargenet.webhooks.lane import (
    Acknowledge,
    DeadLetter,
    Effect,
    Head,
    LaneView,
    ScheduleRetry,
    refused_at_full_lane,
    room,
)

LEASE_DURATION = timedelta(seconds=10)


@dataclass(frozen=True, slots=True)
class LaneSnapshot:
    lane_id: int
    webhook_id: str
    webhook_version: datetime
    """The webhook's `updated_at`: settings cached under an older version are stale."""
    event_type: str
    view: LaneView
    body: str | None
    """The head's body (None when the lane is empty)."""
    following: tuple[QueuedEntry, ...] = ()
    """Up to `window - 1` entries behind the head, in lane order, for a lane that sends on without re-reading."""


class QueuedEvent(Protocol):
    @property
    def event_id(self) -> str: ...
    @property
    def body(self) -> str: ...


@dataclass(frozen=True, slots=True)
class QueuedEntry:
    entry_id: int
    event_id: str
    body: str


@dataclass(frozen=True, slots=True)
class _Event:
    event_id: str
    body: str


async def enqueue(
    session: AsyncSession, lane: WebhookLane, *, event_id: str, body: str, now: datetime
) -> DeadLetter | None:
    """Put an event at the tail of `lane`, or into the dead letters when the lane is full (Rule 2)."""
    letters = await enqueue_many(session, lane, [_Event(event_id, body)], now=now)
    return letters[0] if letters else None


async def enqueue_many(
    session: AsyncSession, lane: WebhookLane, events: Sequence[QueuedEvent], *, now: datetime
) -> list[DeadLetter]:
    """Put `events` at the tail of `lane` in their order, in one multi-row insert; those that find the lane full
    go to the dead letters instead (Rule 2). Returns their dead letters."""
    admitted, refused = events[: room(lane.size)], events[room(lane.size) :]
    if admitted:
        # One statement whose rows take ascending ids in list order, the lane order.
        await session.execute(
            insert(WebhookLaneEntry),
            [{"lane_id": lane.id, "event_id": e.event_id, "body": e.body, "enqueued_at": now} for e in admitted],
        )
        lane.size += len(admitted)
    letters = []
    for event in refused:
        letter = refused_at_full_lane(event.event_id)
        await store_dead_letter(session, lane.webhook_id, lane.event_type, letter, event.body, now)
        letters.append(letter)
    await session.flush()
    return letters


class DeadLetterWatcher(Protocol):
    def dead_lettered(self, webhook_id: str, event_type: str, reason: str) -> None: ...


# Every dead letter goes through `store_dead_letter`, whichever path made it (retries used up in a lane worker,
# a full lane in the filler, an unsubscribed lane in the configuration service), so counting there, once its
# transaction has committed, counts them all and never one that was rolled back.
_watchers: weakref.WeakSet[DeadLetterWatcher] = weakref.WeakSet()
_PENDING_DEAD_LETTERS = "chargenet.dead_letters"


def watch_dead_letters(watcher: DeadLetterWatcher) -> None:
    """Tell `watcher` of each dead letter stored by a transaction of this process, once that has committed."""
    _watchers.add(watcher)


@orm_event.listens_for(Session, "after_commit")
def _tell_watchers(session: Session) -> None:
    for webhook_id, event_type, reason in session.info.pop(_PENDING_DEAD_LETTERS, ()):
        for watcher in list(_watchers):
            watcher.dead_lettered(webhook_id, event_type, reason)


@orm_event.listens_for(Session, "after_rollback")
def _forget_dead_letters(session: Session) -> None:
    session.info.pop(_PENDING_DEAD_LETTERS, None)


async def store_dead_letter(
    session: AsyncSession, webhook_id: str, event_type: str, letter: DeadLetter, body: str, now: datetime
) -> None:
    session.info.setdefault(_PENDING_DEAD_LETTERS, []).append((webhook_id, event_type, letter.reason.value))
    session.add(
        WebhookDeadLetter(
            webhook_id=webhook_id,
            event_type=event_type,
            event_id=letter.event_id,
            body=body,
            reason=letter.reason.value,
            error=letter.error,
            attempts=letter.attempts,
            dead_at=now,
        )
    )
    await session.flush()


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt as the delivery log keeps it (decisions.md "Delivery log")."""

    event_id: str
    attempt: int
    request_id: str
    started_at: datetime
    duration_ms: float
    status: int | None
    error: str | None
    """None when delivered."""
    response: str | None


async def record_attempts(session: AsyncSession, webhook_id: str, event_type: str, attempts: Sequence[Attempt]) -> None:
    """Add attempts to the delivery log, in the caller's transaction (the one that records their outcome), in one
    multi-row insert."""
    if not attempts:
        return
    await session.execute(
        insert(WebhookDelivery),
        [
            {
                "webhook_id": webhook_id,
                "event_type": event_type,
                "event_id": a.event_id,
                "attempt": a.attempt,
                "request_id": a.request_id,
                "at": a.started_at,
                "duration_ms": a.duration_ms,
                "delivered": a.error is None,
                "status": a.status,
                "error": a.error,
                "response": a.response,
            }
            for a in attempts
        ],
    )


async def snapshot(session: AsyncSession, lane_id: int, owner: str, window: int = 1) -> LaneSnapshot | None:
    """The lane as the core sees it, with its first `window` entries, in one query of plain columns, if `owner`
    still holds its lease."""
    result = await session.execute(
        select(
            WebhookLane.webhook_id,
            WebhookLane.event_type,
            WebhookLane.size,
            WebhookLane.head_attempts,
            WebhookLane.next_attempt_at,
            WebhookLane.last_error,
            Webhook.enabled,
            Webhook.updated_at,
            WebhookLaneEntry.id,
            WebhookLaneEntry.event_id,
            WebhookLaneEntry.body,
        )
        .join(Webhook, Webhook.id == WebhookLane.webhook_id)
        .outerjoin(WebhookLaneEntry, WebhookLaneEntry.lane_id == WebhookLane.id)
        .where(WebhookLane.id == lane_id, WebhookLane.lease_owner == owner)
        .order_by(WebhookLaneEntry.id)
        .limit(window)
    )
    rows = result.all()
    if not rows:
        return None
    webhook_id, event_type, size, attempts, next_at, last_error, enabled, version, entry_id, event_id, body = rows[0]
    head = Head(int(entry_id), str(event_id), attempts, next_at, last_error) if entry_id is not None else None
    following = tuple(QueuedEntry(int(row[8]), str(row[9]), str(row[10])) for row in rows[1:])
    view = LaneView(bool(enabled), size, head)
    return LaneSnapshot(lane_id, webhook_id, version, event_type, view, body, following)


async def apply_effect(
    session: AsyncSession,
    lane: LaneSnapshot,
    owner: str,
    effect: Effect,
    *,
    now: datetime,
    body: str,
    request_ms: float | None,
) -> bool:
    """Persist the effect of one attempt; False (and nothing written) when `owner` lost the lease.

    The lease check is the first statement, a conditional UPDATE of the lane's row, which (on PostgreSQL) also
    locks that row until the commit, so no other process can take the lane while the rest is written.
    """
    values: dict[str, object] = {}
    if request_ms is not None:
        values |= {"last_request_at": now, "last_request_ms": request_ms}
    if isinstance(effect, ScheduleRetry):
        values |= {
            "head_attempts": effect.head.attempts,
            "next_attempt_at": effect.head.next_attempt_at,
            "last_error": effect.head.last_error,
        }
    if isinstance(effect, ScheduleRetry | DeadLetter):
        values["consecutive_failures"] = WebhookLane.consecutive_failures + 1
    elif isinstance(effect, Acknowledge):
        values["consecutive_failures"] = 0
    if not await _hold(session, lane.lane_id, owner, values):
        return False
    if isinstance(effect, Acknowledge | DeadLetter):
        assert effect.entry_id is not None
        if await _remove_heads(session, lane.lane_id, [effect.entry_id], now) and isinstance(effect, DeadLetter):
            await store_dead_letter(session, lane.webhook_id, lane.event_type, effect, body, now)
    return True


async def acknowledge(
    session: AsyncSession,
    lane: LaneSnapshot,
    owner: str,
    entry_ids: Sequence[int],
    *,
    now: datetime,
    request_ms: float,
) -> bool:
    """Persist consecutive acknowledgements of a lane's heads at once; False (and nothing written) when `owner`
    lost the lease. The same writes as `apply_effect` with `Acknowledge`, once for all of them."""
    values = {"last_request_at": now, "last_request_ms": request_ms, "consecutive_failures": 0}
    if not await _hold(session, lane.lane_id, owner, values):
        return False
    await _remove_heads(session, lane.lane_id, entry_ids, now)
    return True


async def _hold(session: AsyncSession, lane_id: int, owner: str, values: dict[str, object]) -> bool:
    """Whether `owner` holds the lane's lease, checked by an UPDATE of its row (with `values`, if any)."""
    result = await session.execute(
        update(WebhookLane)
        .where(WebhookLane.id == lane_id, WebhookLane.lease_owner == owner)
        .values(**(values or {"lease_owner": owner}))
        .execution_options(synchronize_session=False)
    )
    return getattr(result, "rowcount", 0) == 1


async def _remove_heads(session: AsyncSession, lane_id: int, entry_ids: Sequence[int], now: datetime) -> int:
    """Delete entries that left the lane and count them out of its size; returns how many were still there.

    Entries already gone (an acknowledgement recorded twice: a step that failed left its acknowledgements to
    commit after the lane was read again and the events sent again) change nothing, so the size stays exact.
    """
    deleted = await session.execute(
        delete(WebhookLaneEntry)
        .where(WebhookLaneEntry.lane_id == lane_id, WebhookLaneEntry.id.in_(entry_ids))
        .execution_options(synchronize_session=False)
    )
    count = int(getattr(deleted, "rowcount", 0) or 0)
    if count:
        await session.execute(
            update(WebhookLane)
            .where(WebhookLane.id == lane_id)
            .values(
                size=WebhookLane.size - count,
                head_attempts=0,
                next_attempt_at=None,
                last_error=None,
                last_consumed_at=now,
            )
            .execution_options(synchronize_session=False)
        )
    return count


async def acquire_leases(session: AsyncSession, owner: str, now: datetime, limit: int = 100) -> list[int]:
    """Take up to `limit` lanes of enabled webhooks whose lease is free or expired."""
    query = (
        select(WebhookLane.id)
        .join(Webhook, Webhook.id == WebhookLane.webhook_id)
        .where(
            Webhook.enabled.is_(True),
            or_(WebhookLane.lease_owner.is_(None), WebhookLane.lease_expires_at < now),
        )
        .order_by(WebhookLane.id)
        .limit(limit)
    )
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(of=WebhookLane, skip_locked=True)
    lane_ids = list(await session.scalars(query))
    if lane_ids:
        await session.execute(
            update(WebhookLane)
            .where(WebhookLane.id.in_(lane_ids))
            .values(lease_owner=owner, lease_expires_at=now + LEASE_DURATION)
        )
    return lane_ids


async def renew_leases(session: AsyncSession, owner: str, now: datetime) -> set[int]:
    """Extend every lease `owner` still holds on an enabled webhook's lane; returns those lanes. Leases on
    lanes of disabled webhooks are given up, so their workers stop."""
    if session.get_bind().dialect.name == "postgresql":
        # Lock in id order first, as the filler and the settling lanes do, so that none of them deadlock.
        await session.execute(
            select(WebhookLane.id).where(WebhookLane.lease_owner == owner).order_by(WebhookLane.id).with_for_update()
        )
    enabled = select(Webhook.id).where(Webhook.enabled.is_(True))
    await session.execute(
        update(WebhookLane)
        .where(WebhookLane.lease_owner == owner, WebhookLane.webhook_id.not_in(enabled))
        .values(lease_owner=None, lease_expires_at=None)
    )
    await session.execute(
        update(WebhookLane).where(WebhookLane.lease_owner == owner).values(lease_expires_at=now + LEASE_DURATION)
    )
    return set(await session.scalars(select(WebhookLane.id).where(WebhookLane.lease_owner == owner)))


async def release_leases(session: AsyncSession, owner: str, lane_ids: set[int] | None = None) -> None:
    query = update(WebhookLane).where(WebhookLane.lease_owner == owner)
    if lane_ids is not None:
        query = query.where(WebhookLane.id.in_(lane_ids))
    await session.execute(query.values(lease_owner=None, lease_expires_at=None))


async def count_entries(session: AsyncSession, lane_id: int) -> int:
    return int(await session.scalar(select(func.count()).where(WebhookLaneEntry.lane_id == lane_id)) or 0)
