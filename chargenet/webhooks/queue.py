"""The lanes in the store: enqueue, read the head, apply an effect of the lane core, leases, dead letters.

Every function runs in the caller's transaction. The lane core (`lane.py`) decides; these functions persist.
Leases: a lane is drained by the process named in `lease_owner` until `lease_expires_at`. A process takes a
free or expired lease with `SELECT ... FOR UPDATE SKIP LOCKED` on PostgreSQL (SQLite serializes writers with
`BEGIN IMMEDIATE`, so a plain update is enough there), renews it well before it runs out, and every write of a
lane's delivery state checks that the lease is still its own, so a process that lost its lane (paused too
long, or presumed dead) cannot acknowledge or retry on top of the new owner.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol, cast

from sqlalchemy import Integer, Table, bindparam, delete, func, insert, literal, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from chargenet.ports import SentRequest
from chargenet.store.commit_hooks import after_commit
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
FILLER_CONSUMER = "webhook-lanes"
"""The outbox consumer that fills the lanes: its cursor says which events of a stream the lanes have taken."""


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


class LaneRow(Protocol):
    """What enqueueing needs of a lane: a `WebhookLane`, or the filler's plain row of one."""

    id: int
    webhook_id: str
    event_type: str
    size: int


@dataclass(slots=True)
class FillableLane:
    """A lane as the filler reads it (plain columns, no ORM object); `size` follows what it enqueues."""

    id: int
    webhook_id: str
    event_type: str
    size: int


async def enqueue(
    session: AsyncSession, lane: WebhookLane, *, event_id: str, body: str, now: datetime
) -> DeadLetter | None:
    """Put an event at the tail of `lane`, or into the dead letters when the lane is full (Rule 2)."""
    letters = await enqueue_many(session, lane, [_Event(event_id, body)], now=now)
    return letters[0] if letters else None


async def enqueue_many(
    session: AsyncSession, lane: LaneRow, events: Sequence[QueuedEvent], *, now: datetime
) -> list[DeadLetter]:
    """Put `events` at the tail of `lane` in their order, in one multi-row insert; those that find the lane full
    go to the dead letters instead (Rule 2). Returns their dead letters."""
    admitted, refused = events[: room(lane.size)], events[room(lane.size) :]
    if admitted:
        # Rows inserted in list order take ascending ids, the lane order. Prebuilt Core statements: the filler runs
        # them for each lane of each round.
        await session.execute(
            _ENQUEUE,
            [{"lane_id": lane.id, "event_id": e.event_id, "body": e.body, "enqueued_at": now} for e in admitted],
        )
        await session.execute(_GROW, {"lane": lane.id, "added": len(admitted)})
        size = lane.size + len(admitted)
        if isinstance(lane, WebhookLane):
            set_committed_value(lane, "size", size)  # written just now: the ORM must not write it again
        else:
            lane.size = size
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
# transaction has committed (`store.commit_hooks`), counts them all and never one that was rolled back.
_watchers: weakref.WeakSet[DeadLetterWatcher] = weakref.WeakSet()


def watch_dead_letters(watcher: DeadLetterWatcher) -> None:
    """Tell `watcher` of each dead letter stored by a transaction of this process, once that has committed."""
    _watchers.add(watcher)


def _tell_watchers(webhook_id: str, event_type: str, reason: str) -> None:
    for watcher in list(_watchers):
        watcher.dead_lettered(webhook_id, event_type, reason)


async def store_dead_letter(
    session: AsyncSession, webhook_id: str, event_type: str, letter: DeadLetter, body: str, now: datetime
) -> None:
    after_commit(session, functools.partial(_tell_watchers, webhook_id, event_type, letter.reason.value))
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
    """One attempt of a lane as the delivery log keeps it (decisions.md "Delivery log"): which attempt at which
    event, and what became of its request."""

    event_id: str
    attempt: int
    sent: SentRequest


# The statements of a busy lane's every few deliveries, built once: Core statements on the tables, their values
# bound per execution, skip what building an ORM statement, its cache key and the ORM's bulk paths cost each
# time (most of a delivery's CPU before).
_lanes = cast(Table, WebhookLane.__table__)
_entries = cast(Table, WebhookLaneEntry.__table__)
_deliveries = cast(Table, WebhookDelivery.__table__)
_webhooks = cast(Table, Webhook.__table__)

_LOG_ATTEMPTS = insert(_deliveries)
_ENQUEUE = insert(_entries)
_GROW = update(_lanes).where(_lanes.c.id == bindparam("lane")).values(size=_lanes.c.size + bindparam("added"))


async def record_attempts(session: AsyncSession, webhook_id: str, event_type: str, attempts: Sequence[Attempt]) -> None:
    """Add attempts to the delivery log, in the caller's transaction (the one that records their outcome), in one
    statement."""
    if not attempts:
        return
    await session.execute(
        _LOG_ATTEMPTS,
        [
            {
                "webhook_id": webhook_id,
                "event_type": event_type,
                "event_id": a.event_id,
                "attempt": a.attempt,
                "request_id": a.sent.request_id,
                "at": a.sent.started_at,
                "duration_ms": a.sent.duration_ms,
                "delivered": a.sent.error is None,
                "status": a.sent.status,
                "error": a.sent.error,
                "response": a.sent.response,
            }
            for a in attempts
        ],
    )


_SNAPSHOT = (
    select(
        _lanes.c.webhook_id,
        _lanes.c.event_type,
        _lanes.c.size,
        _lanes.c.head_attempts,
        _lanes.c.next_attempt_at,
        _lanes.c.last_error,
        _webhooks.c.enabled,
        _webhooks.c.updated_at,
        _entries.c.id,
        _entries.c.event_id,
        _entries.c.body,
    )
    .select_from(_lanes)
    .join(_webhooks, _webhooks.c.id == _lanes.c.webhook_id)
    .outerjoin(_entries, _entries.c.lane_id == _lanes.c.id)
    .where(_lanes.c.id == bindparam("lane_id"), _lanes.c.lease_owner == bindparam("owner"))
    .order_by(_entries.c.id)
    .limit(bindparam("window", type_=Integer))
)


async def snapshot(session: AsyncSession, lane_id: int, owner: str, window: int = 1) -> LaneSnapshot | None:
    """The lane as the core sees it, with its first `window` entries, in one query of plain columns, if `owner`
    still holds its lease."""
    result = await session.execute(_SNAPSHOT, {"lane_id": lane_id, "owner": owner, "window": window})
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
    locks that row until the commit, so no other process can take the lane while the rest is written. An
    acknowledgement is written as `acknowledge` writes it.
    """
    if isinstance(effect, Acknowledge) and request_ms is not None:
        return await acknowledge(session, lane, owner, [effect.entry_id], now=now, request_ms=request_ms)
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
        removed = await _remove_heads(session, lane.lane_id, owner, [effect.entry_id])
        if removed:
            await _execute(session, _HEADS_LEFT, {"lane": lane.lane_id, "owner": owner, "removed": removed, "now": now})
            if isinstance(effect, DeadLetter):
                await store_dead_letter(session, lane.webhook_id, lane.event_type, effect, body, now)
    return True


# The lane's row while `owner` holds its lease, locked on PostgreSQL as an UPDATE of it locks it (FOR NO KEY UPDATE,
# which lets the filler insert entries meanwhile, as before), so that nobody takes the lane before the commit.
_LEASE_HELD = (
    select(literal(1))
    .select_from(_lanes)
    .where(_lanes.c.id == bindparam("lane"), _lanes.c.lease_owner == bindparam("owner"))
    .with_for_update(key_share=True)
    .exists()
)
# Deletes nothing unless the lease is `owner`'s: the lease check of this write and the lock of the lane row.
_REMOVE_HEADS = delete(_entries).where(
    _entries.c.lane_id == bindparam("lane"),
    _entries.c.id.in_(bindparam("entry_ids", expanding=True)),
    _LEASE_HELD,
)
_LANE_HELD = (_lanes.c.id == bindparam("lane")) & (_lanes.c.lease_owner == bindparam("owner"))
_HEADS_LEFT_VALUES = {
    "size": _lanes.c.size - bindparam("removed", type_=Integer),
    "head_attempts": 0,
    "next_attempt_at": None,
    "last_error": None,
    "last_consumed_at": bindparam("now", type_=_lanes.c.last_consumed_at.type),
}
_REQUEST_VALUES = {
    "last_request_at": bindparam("request_at", type_=_lanes.c.last_request_at.type),
    "last_request_ms": bindparam("request_ms", type_=_lanes.c.last_request_ms.type),
    "consecutive_failures": 0,
}
_HEADS_LEFT = update(_lanes).where(_LANE_HELD).values(_HEADS_LEFT_VALUES)
_ACKNOWLEDGED = update(_lanes).where(_LANE_HELD).values({**_HEADS_LEFT_VALUES, **_REQUEST_VALUES})
_ACKNOWLEDGED_AGAIN = update(_lanes).where(_LANE_HELD).values(_REQUEST_VALUES)


async def acknowledge(
    session: AsyncSession,
    lane: LaneSnapshot,
    owner: str,
    entry_ids: Sequence[int],
    *,
    now: datetime,
    request_ms: float,
    attempts: Sequence[Attempt] = (),
) -> bool:
    """Persist consecutive acknowledgements of a lane's heads at once, and `attempts` in the delivery log (as
    `record_attempts` would); False (and nothing written) when `owner` lost the lease. The same writes as
    `apply_effect` with `Acknowledge`, once for all of them.

    Two statements and the log's insert, each checking the lease: the delete of the entries (which deletes nothing
    when the lease is lost, and on PostgreSQL locks the lane row first) and one update of the lane (its size and head
    state, the last request, the failure count), whose row count says whether the lease held. On PostgreSQL, with
    attempts to log, the three are one statement (`_ACKNOWLEDGE_AND_LOG_PG`).
    """
    if attempts and session.get_bind().dialect.name == "postgresql":
        return await _acknowledge_and_log(session, lane, owner, entry_ids, attempts, now=now, request_ms=request_ms)
    removed = await _remove_heads(session, lane.lane_id, owner, entry_ids)
    parameters = {"lane": lane.lane_id, "owner": owner, "request_at": now, "request_ms": request_ms}
    if removed:
        held = await _execute(session, _ACKNOWLEDGED, {**parameters, "removed": removed, "now": now})
    else:
        held = await _execute(session, _ACKNOWLEDGED_AGAIN, parameters)
    if held != 1 and removed:
        # Cannot be: the delete found the lease ours and holds the lane's row (SQLite: the write lock) until commit.
        raise RuntimeError(f"webhook lane {lane.lane_id}: the lease changed within a transaction that holds it")
    if held == 1:
        await record_attempts(session, lane.webhook_id, lane.event_type, attempts)
    return held == 1


# `acknowledge` and `record_attempts` of the same acknowledgements as one statement on PostgreSQL, a data-modifying
# CTE: one round trip where they were three (the delete of the entries 0.44 ms, the delivery log's insert 0.24 ms,
# the lane's update 0.18 ms, each a round trip to a server on the same cores). `held` checks the lease and locks the
# lane's row as `_LEASE_HELD` does; nothing is deleted, updated or logged when the lease is not `owner`'s.
_ACKNOWLEDGE_AND_LOG_PG = text(
    """
    WITH held AS (
        SELECT id FROM webhook_lanes WHERE id = :lane AND lease_owner = :owner FOR NO KEY UPDATE
    ), removed AS (
        DELETE FROM webhook_lane_entries
        WHERE lane_id = (SELECT id FROM held) AND id = ANY(CAST(:entry_ids AS bigint[]))
        RETURNING id
    ), counted AS (
        SELECT count(*) AS n FROM removed
    ), lane AS (
        UPDATE webhook_lanes SET
            size = size - (SELECT n FROM counted),
            head_attempts = CASE WHEN (SELECT n FROM counted) > 0 THEN 0 ELSE head_attempts END,
            next_attempt_at = CASE WHEN (SELECT n FROM counted) > 0 THEN NULL ELSE next_attempt_at END,
            last_error = CASE WHEN (SELECT n FROM counted) > 0 THEN NULL ELSE last_error END,
            last_consumed_at = CASE
                WHEN (SELECT n FROM counted) > 0 THEN CAST(:now AS timestamptz) ELSE last_consumed_at
            END,
            last_request_at = CAST(:request_at AS timestamptz),
            last_request_ms = CAST(:request_ms AS double precision),
            consecutive_failures = 0
        WHERE id = (SELECT id FROM held)
        RETURNING id
    ), logged AS (
        INSERT INTO webhook_deliveries
            (webhook_id, event_type, event_id, attempt, request_id, at, duration_ms, delivered, status, error, response)
        SELECT CAST(:webhook_id AS varchar), CAST(:event_type AS varchar), attempt.*
        FROM unnest(
            CAST(:event_ids AS varchar[]), CAST(:attempts AS integer[]), CAST(:request_ids AS varchar[]),
            CAST(:ats AS timestamptz[]), CAST(:durations AS double precision[]), CAST(:delivered AS boolean[]),
            CAST(:statuses AS integer[]), CAST(:errors AS text[]), CAST(:responses AS text[])
        ) AS attempt
        WHERE EXISTS (SELECT 1 FROM held)
    )
    SELECT (SELECT count(*) FROM lane)
    """
)


async def _acknowledge_and_log(
    session: AsyncSession,
    lane: LaneSnapshot,
    owner: str,
    entry_ids: Sequence[int],
    attempts: Sequence[Attempt],
    *,
    now: datetime,
    request_ms: float,
) -> bool:
    held = await session.scalar(
        _ACKNOWLEDGE_AND_LOG_PG,
        {
            "lane": lane.lane_id,
            "owner": owner,
            "entry_ids": list(entry_ids),
            "now": now,
            "request_at": now,
            "request_ms": request_ms,
            "webhook_id": lane.webhook_id,
            "event_type": lane.event_type,
            "event_ids": [a.event_id for a in attempts],
            "attempts": [a.attempt for a in attempts],
            "request_ids": [a.sent.request_id for a in attempts],
            "ats": [a.sent.started_at for a in attempts],
            "durations": [a.sent.duration_ms for a in attempts],
            "delivered": [a.sent.error is None for a in attempts],
            "statuses": [a.sent.status for a in attempts],
            "errors": [a.sent.error for a in attempts],
            "responses": [a.sent.response for a in attempts],
        },
    )
    return bool(held == 1)


async def _execute(session: AsyncSession, statement: Any, parameters: dict[str, Any]) -> int:
    """Run a prebuilt Core statement; the number of rows it changed."""
    result = await session.execute(statement, parameters)
    return int(getattr(result, "rowcount", 0) or 0)


async def _hold(session: AsyncSession, lane_id: int, owner: str, values: dict[str, object]) -> bool:
    """Whether `owner` holds the lane's lease, checked by an UPDATE of its row (with `values`, if any)."""
    result = await session.execute(
        update(WebhookLane)
        .where(WebhookLane.id == lane_id, WebhookLane.lease_owner == owner)
        .values(**(values or {"lease_owner": owner}))
        .execution_options(synchronize_session=False)
    )
    return getattr(result, "rowcount", 0) == 1


async def _remove_heads(session: AsyncSession, lane_id: int, owner: str, entry_ids: Sequence[int]) -> int:
    """Delete entries that left the lane if `owner` still holds its lease; returns how many were still there (the
    caller counts them out of the lane's size).

    Entries already gone (an acknowledgement recorded twice: a step that failed left its acknowledgements to
    commit after the lane was read again and the events sent again) change nothing, so the size stays exact.
    """
    return await _execute(session, _REMOVE_HEADS, {"lane": lane_id, "owner": owner, "entry_ids": list(entry_ids)})


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


async def lanes_with_entries(session: AsyncSession, owner: str) -> set[int]:
    """The lanes `owner` holds that have entries queued (whichever process's filler added them)."""
    query = select(WebhookLane.id).where(WebhookLane.lease_owner == owner, WebhookLane.size > 0)
    return set(await session.scalars(query))


async def release_leases(session: AsyncSession, owner: str, lane_ids: set[int] | None = None) -> None:
    query = update(WebhookLane).where(WebhookLane.lease_owner == owner)
    if lane_ids is not None:
        query = query.where(WebhookLane.id.in_(lane_ids))
    await session.execute(query.values(lease_owner=None, lease_expires_at=None))


async def count_entries(session: AsyncSession, lane_id: int) -> int:
    return int(await session.scalar(select(func.count()).where(WebhookLaneEntry.lane_id == lane_id)) or 0)
