"""Recovering a time window of a webhook's events: sending them again, with their original `eventId` and body
(decisions.md §5, the one operator-requested exception to "nothing sent twice").

For each lane of the webhook (in id order, locked as the filler and the lane workers lock them), the events of its
site and event type raised in the window (and not before the webhook existed) that the filler has already taken,
that the webhook's station and charge point filter takes, and that are not waiting in the lane now, join the tail
of the lane in their original order (outbox commit order, the lane order): behind what is pending, as new entries of
the same events. Whether they were delivered, dead-lettered or replayed before does not matter; their dead letters
stay as they are.

The lane's bound holds: when the window's events do not all fit in a lane's room (`LANE_CAPACITY` minus what
waits), nothing is recovered (`Conflict`), so that an operator never gets a window with holes; a shorter window,
or one recovered once the lane has drained, fits. One unit of work, in the caller's session (it touches only the
store); audited; the lanes of this process wake once it commits.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import Field
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.domain.webhook_filters import EventFilter, loaded
from chargenet.domain.webhook_recovery import check_window
from chargenet.errors import Conflict
from chargenet.outbox.consumer import StoredEvent
from chargenet.services.callers import Caller
from chargenet.services.reach import reachable_webhook
from chargenet.services.views import Instant, View
from chargenet.services.webhook_lanes import lanes_of
from chargenet.services.webhooks import audit_change
from chargenet.store.models import OutboxCursor, OutboxEvent, WebhookLaneEntry
from chargenet.webhooks.changes import webhook_changed
from chargenet.webhooks.lane import room
from chargenet.webhooks.queue import FILLER_CONSUMER, enqueue_many

READ_BATCH = 1000


class Recovered(View):
    webhook_id: str
    since: Instant
    until: Instant
    events: int = Field(description="how many events joined the webhook's lanes")
    event_types: dict[str, int] = Field(description="how many of each event type")


async def recover_window(
    session: AsyncSession,
    caller: Caller,
    webhook_id: str,
    *,
    since: datetime,
    until: datetime,
    now: datetime,
    retention: timedelta,
) -> Recovered:
    """Enqueue the window's events again (see the module). Raises InvalidInput naming `since` or `until` for a
    window in the future or past the retention, NotFound for a webhook the caller does not reach, Conflict when a
    lane has no room for its part of the window; nothing is stored then."""
    window = check_window(since, until, now=now, retention=retention)
    webhook = await reachable_webhook(session, caller, Scope.WEBHOOKS_WRITE, webhook_id, change="recovering events")
    wanted = EventFilter(loaded(webhook.station_filter), loaded(webhook.charge_point_filter))
    start = max(window.since, webhook.created_at)
    lanes = list(await session.scalars(lanes_of(webhook.id).with_for_update()))
    plan = []
    for lane in lanes:
        taken = (
            select(func.coalesce(func.max(OutboxCursor.last_seq), 0))
            .where(
                OutboxCursor.consumer == FILLER_CONSUMER,
                OutboxCursor.site_id == webhook.site_id,
                OutboxCursor.event_type == lane.event_type,
            )
            .scalar_subquery()
        )
        waiting = select(WebhookLaneEntry.event_id).where(WebhookLaneEntry.lane_id == lane.id)
        window_events = (
            select(
                OutboxEvent.event_id,
                OutboxEvent.site_id,
                OutboxEvent.event_type,
                OutboxEvent.seq,
                OutboxEvent.body,
                OutboxEvent.raised_at,
            )
            .where(
                OutboxEvent.site_id == webhook.site_id,
                OutboxEvent.event_type == lane.event_type,
                OutboxEvent.raised_at >= start,
                OutboxEvent.raised_at < window.until,
                OutboxEvent.seq <= taken,
                OutboxEvent.event_id.not_in(waiting),
            )
            .order_by(OutboxEvent.seq)
            .limit(READ_BATCH)
        )
        # Read in batches, and no further than the lane's room: a window far too large for the lane is refused
        # after reading a lane's worth of it, not all of it.
        events: list[StoredEvent] = []
        after = 0
        while len(events) <= room(lane.size):
            batch = [StoredEvent(*row) for row in await session.execute(window_events.where(OutboxEvent.seq > after))]
            events += [event for event in batch if wanted.takes_envelope(event.body)]
            if len(batch) < READ_BATCH:
                break
            after = batch[-1].seq
        if len(events) > room(lane.size):
            raise Conflict(
                f"the {lane.event_type} lane of webhook {webhook.id} has room for {room(lane.size)} events and the"
                " window holds more: recover a shorter window, or wait for the lane to drain"
            )
        plan.append((lane, events))
    counts: dict[str, int] = {}
    for lane, events in plan:
        if events:
            refused = await enqueue_many(session, lane, events, now=now)
            assert not refused
            counts[lane.event_type] = len(events)
    total = sum(counts.values())
    detail = {"since": window.since.isoformat(), "until": window.until.isoformat(), "events": str(total)}
    await audit_change(session, caller, webhook, "webhook.recover", now, detail)
    if total:
        webhook_changed(session)
    return Recovered(webhook_id=webhook.id, since=window.since, until=window.until, events=total, event_types=counts)
