"""A webhook's lanes as operators see them (service.md §8): each one's depth against its capacity, last
consumption, last request and its duration, consecutive failures, and the alert level of each against the
thresholds (decisions.md "Health"); and the same levels in SQL, for the lists narrowed to lanes in alert.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field
from sqlalchemy import ColumnElement, or_, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.services.callers import Caller
from chargenet.services.reach import reachable_webhook
from chargenet.services.views import Instant, View
from chargenet.store.models import WebhookLane
from chargenet.webhooks import health
from chargenet.webhooks.lane import LANE_CAPACITY

# The thresholds of a lane's health metrics (service.md §8), as the console shows them beside each value.
THRESHOLDS = {
    "queue_alert": health.QUEUE_SIZE_ALERT,
    "queue_critical": health.QUEUE_SIZE_CRITICAL,
    "duration_alert_ms": health.REQUEST_DURATION_ALERT_MS,
    "duration_critical_ms": health.REQUEST_DURATION_CRITICAL_MS,
}


class LaneView(View):
    """A lane's state and health (service.md §8): depth against capacity, last consumption, last request and its
    duration, consecutive failures, and the alert level of each (decisions.md "Health")."""

    event_type: str
    size: int
    capacity: int = LANE_CAPACITY
    head_attempts: int
    next_attempt_at: Instant | None
    last_error: str | None
    last_consumed_at: Instant | None = None
    last_request_at: Instant | None = None
    last_request_ms: float | None = None
    consecutive_failures: int = Field(
        default=0, description="failed attempts since the lane last delivered, whichever events they were at"
    )
    queue_level: str = health.Level.OK.value
    duration_level: str = health.Level.OK.value
    level: str = Field(
        default=health.Level.OK.value,
        description="the worst of the queue and duration levels; at least alert while attempts fail",
    )


def lane_at(level: health.Level) -> ColumnElement[bool]:
    """Lanes at `level` or worse, in SQL, as `_lanes` judges each one: the worse of the queue-size and
    request-duration levels, and at least `alert` while attempts fail."""
    critical = or_(
        WebhookLane.size > health.QUEUE_SIZE_CRITICAL,
        WebhookLane.last_request_ms > health.REQUEST_DURATION_CRITICAL_MS,
    )
    if level is health.Level.CRITICAL:
        return critical
    if level is health.Level.ALERT:
        return or_(
            critical,
            WebhookLane.size > health.QUEUE_SIZE_ALERT,
            WebhookLane.last_request_ms > health.REQUEST_DURATION_ALERT_MS,
            WebhookLane.consecutive_failures > 0,
            WebhookLane.head_attempts > 0,
        )
    return true()


async def health_levels(session: AsyncSession, webhook_ids: Sequence[str]) -> dict[str, str]:
    """The worst queue or duration level of each webhook's lanes, or `alert` while a head is failing, by webhook
    (for a list; ids the caller was already shown)."""
    if not webhook_ids:
        return {}
    rows = await session.execute(
        select(
            WebhookLane.webhook_id, WebhookLane.size, WebhookLane.last_request_ms, WebhookLane.consecutive_failures
        ).where(WebhookLane.webhook_id.in_(list(webhook_ids)))
    )
    levels: dict[str, health.Level] = {}
    for webhook_id, size, duration, failures in rows:
        failing = health.Level.ALERT if failures > 0 else health.Level.OK
        level = health.worst(health.queue_size_level(size), health.request_duration_level(duration), failing)
        levels[webhook_id] = health.worst(levels.get(webhook_id, health.Level.OK), level)
    return {webhook_id: level.value for webhook_id, level in levels.items()}


async def get_lanes(session: AsyncSession, caller: Caller, webhook_id: str) -> list[LaneView]:
    await reachable_webhook(session, caller, Scope.WEBHOOKS_READ, webhook_id)
    return await lane_views(session, webhook_id)


async def lane_views(session: AsyncSession, webhook_id: str) -> list[LaneView]:
    views = []
    for lane in await session.scalars(lanes_of(webhook_id)):
        failures = max(lane.head_attempts, lane.consecutive_failures)
        queue_level = health.queue_size_level(lane.size)
        duration_level = health.request_duration_level(lane.last_request_ms)
        failing = health.Level.ALERT if failures > 0 else health.Level.OK
        views.append(
            LaneView(
                event_type=lane.event_type,
                size=lane.size,
                head_attempts=lane.head_attempts,
                next_attempt_at=lane.next_attempt_at,
                last_error=lane.last_error,
                last_consumed_at=lane.last_consumed_at,
                last_request_at=lane.last_request_at,
                last_request_ms=lane.last_request_ms,
                consecutive_failures=failures,
                queue_level=queue_level.value,
                duration_level=duration_level.value,
                level=health.worst(queue_level, duration_level, failing).value,
            )
        )
    return views


def lanes_of(webhook_id: str) -> Any:
    return select(WebhookLane).where(WebhookLane.webhook_id == webhook_id).order_by(WebhookLane.id)
