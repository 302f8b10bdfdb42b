"""The lanes in the store: enqueue, read the head, apply an effect of the lane core, leases, dead letters.

Every function runs in the caller's transaction. The lane core (`lane.py`) decides; these functions persist.
Leases: a lane is drained by the process named in `lease_owner` until `lease_expires_at`. A process takes a
free or expired lease with `SELECT ... FOR UPDATE SKIP LOCKED` on PostgreSQL (SQLite serializes writers with
`BEGIN IMMEDIATE`, so a plain update is enough there), renews it well before it runs out, and every write of a
lane's delivery state checks that the lease is still its own, so a process that lost its lane (paused too
long, or presumed dead) cannot acknowledge or retry on top of the new owner.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.store.models import Webhook, WebhookDeadLetter, WebhookLane, WebhookLaneEntry
from chargenet.webhooks.lane import (
    Acknowledge,
    Admission,
    DeadLetter,
    Effect,
    Head,
    KeepHead,
    LaneView,
    ScheduleRetry,
    admit,
    refused_at_full_lane,
)

LEASE_DURATION = timedelta(seconds=10)


@dataclass(frozen=True, slots=True)
class LaneSnapshot:
    lane_id: int
    webhook: Webhook
    event_type: str
    view: LaneView
    body: str | None
    """The head's body (None when the lane is empty)."""


async def enqueue(
    session: AsyncSession, lane: WebhookLane, *, event_id: str, body: str, now: datetime
) -> DeadLetter | None:
    """Put an event at the tail of `lane`, or into the dead letters when the lane is full (Rule 2)."""
    if admit(lane.size) is Admission.QUEUE_FULL:
        letter = refused_at_full_lane(event_id)
        await store_dead_letter(session, lane.webhook_id, lane.event_type, letter, body, now)
        return letter
    session.add(WebhookLaneEntry(lane_id=lane.id, event_id=event_id, body=body, enqueued_at=now))
    lane.size += 1
    await session.flush()
    return None


async def store_dead_letter(
    session: AsyncSession, webhook_id: str, event_type: str, letter: DeadLetter, body: str, now: datetime
) -> None:
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


async def snapshot(session: AsyncSession, lane_id: int, owner: str) -> LaneSnapshot | None:
    """The lane as the core sees it, if `owner` still holds its lease."""
    row = await session.execute(
        select(WebhookLane, Webhook)
        .join(Webhook, Webhook.id == WebhookLane.webhook_id)
        .where(WebhookLane.id == lane_id, WebhookLane.lease_owner == owner)
    )
    found = row.first()
    if found is None:
        return None
    lane, webhook = found
    entry = await session.scalar(
        select(WebhookLaneEntry).where(WebhookLaneEntry.lane_id == lane_id).order_by(WebhookLaneEntry.id).limit(1)
    )
    head = None
    if entry is not None:
        head = Head(entry.id, entry.event_id, lane.head_attempts, lane.next_attempt_at, lane.last_error)
    return LaneSnapshot(
        lane.id,
        webhook,
        lane.event_type,
        LaneView(bool(webhook.enabled), lane.size, head),
        entry.body if entry is not None else None,
    )


async def apply_effect(
    session: AsyncSession,
    lane_id: int,
    owner: str,
    effect: Effect,
    *,
    now: datetime,
    body: str,
    request_ms: float | None,
) -> bool:
    """Persist the effect of one attempt; False (and nothing written) when `owner` lost the lease."""
    health = {"last_request_at": now, "last_request_ms": request_ms} if request_ms is not None else {}
    lane = await session.scalar(
        select(WebhookLane).where(WebhookLane.id == lane_id, WebhookLane.lease_owner == owner).with_for_update()
    )
    if lane is None:
        return False
    for name, value in health.items():
        setattr(lane, name, value)
    if isinstance(effect, KeepHead):
        return True
    if isinstance(effect, ScheduleRetry):
        lane.head_attempts = effect.head.attempts
        lane.next_attempt_at = effect.head.next_attempt_at
        lane.last_error = effect.head.last_error
        return True
    if isinstance(effect, DeadLetter):
        await store_dead_letter(session, lane.webhook_id, lane.event_type, effect, body, now)
    entry_id = effect.entry_id
    assert isinstance(effect, Acknowledge | DeadLetter) and entry_id is not None
    await session.execute(delete(WebhookLaneEntry).where(WebhookLaneEntry.id == entry_id))
    lane.size -= 1
    lane.head_attempts = 0
    lane.next_attempt_at = None
    lane.last_error = None
    lane.last_consumed_at = now
    return True


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
