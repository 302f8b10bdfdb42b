"""Dead letters: the events a webhook could not deliver (`retries_exhausted`), had no room for (`queue_full`), or
no longer subscribes to (`unsubscribed`), kept 30 days; and their replay at the tail of their lanes, audited,
which wakes this process's lanes once it commits (`webhooks.changes`).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, PlainSerializer
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.errors import Conflict, NotFound
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_webhook
from chargenet.services.views import Instant, View
from chargenet.services.webhook_lanes import lanes_of
from chargenet.services.webhooks import audit_change
from chargenet.store.models import WebhookDeadLetter
from chargenet.webhooks.changes import webhook_changed
from chargenet.webhooks.lane import LANE_CAPACITY
from chargenet.webhooks.queue import enqueue


class DeadLetterView(View):
    id: Annotated[int, PlainSerializer(str, return_type=str)]
    webhook_id: str
    event_type: str
    event_id: str
    reason: str
    error: str
    attempts: int
    dead_at: Instant
    replayed_at: Instant | None
    event: dict[str, Any] = Field(description="the envelope as it was published (docs/schemas/)")


class Replayed(View):
    replayed: list[str] = Field(description="the event ids sent again")


def _dead_view(row: WebhookDeadLetter) -> DeadLetterView:
    return DeadLetterView(
        id=row.id,
        webhook_id=row.webhook_id,
        event_type=row.event_type,
        event_id=row.event_id,
        reason=row.reason,
        error=row.error,
        attempts=row.attempts,
        dead_at=row.dead_at,
        replayed_at=row.replayed_at,
        event=json.loads(row.body),
    )


async def count_dead_letters(session: AsyncSession, caller: Caller, webhook_id: str) -> int:
    """How many dead letters of the webhook wait for a replay."""
    await reachable_webhook(session, caller, Scope.WEBHOOKS_READ, webhook_id)
    count = await session.scalar(
        select(func.count())
        .select_from(WebhookDeadLetter)
        .where(WebhookDeadLetter.webhook_id == webhook_id, WebhookDeadLetter.replayed_at.is_(None))
    )
    return int(count or 0)


async def list_dead_letters(
    session: AsyncSession,
    caller: Caller,
    webhook_id: str,
    page: PageRequest | None = None,
    *,
    include_replayed: bool = False,
) -> Page[DeadLetterView]:
    """Events the webhook could not deliver (`retries_exhausted`) or had no room for (`queue_full`), oldest first."""
    page = page or PageRequest()
    await reachable_webhook(session, caller, Scope.WEBHOOKS_READ, webhook_id)
    after = page.after_number()
    query = (
        select(WebhookDeadLetter)
        .where(WebhookDeadLetter.webhook_id == webhook_id)
        .order_by(WebhookDeadLetter.id)
        .limit(page.fetch)
    )
    if after is not None:
        query = query.where(WebhookDeadLetter.id > after)
    if not include_replayed:
        query = query.where(WebhookDeadLetter.replayed_at.is_(None))
    return page.page([_dead_view(row) for row in await session.scalars(query)], lambda view: str(view.id))


async def replay_dead_letters(
    session: AsyncSession, caller: Caller, webhook_id: str, *, now: datetime, event_id: str | None = None
) -> list[DeadLetterView]:
    """Put the webhook's dead letters (or those of one event) back at the tail of their lanes, oldest first,
    and mark them replayed.

    Raises NotFound for an unknown webhook, or an event with no dead letter waiting; Conflict when the event
    type is no longer subscribed or the lane is full (then nothing of this call is replayed).
    """
    webhook = await reachable_webhook(
        session, caller, Scope.WEBHOOKS_WRITE, webhook_id, change="replaying dead letters"
    )
    query = select(WebhookDeadLetter).where(
        WebhookDeadLetter.webhook_id == webhook_id, WebhookDeadLetter.replayed_at.is_(None)
    )
    if event_id is not None:
        query = query.where(WebhookDeadLetter.event_id == event_id)
    letters = list(await session.scalars(query.order_by(WebhookDeadLetter.id)))
    if event_id is not None and not letters:
        raise NotFound("dead letter of event", event_id)
    lanes = {lane.event_type: lane for lane in await session.scalars(lanes_of(webhook.id).with_for_update())}
    for letter in letters:
        lane = lanes.get(letter.event_type)
        if lane is None:
            raise Conflict(f"webhook {webhook_id} no longer subscribes to {letter.event_type}")
        if lane.size >= LANE_CAPACITY:
            raise Conflict(f"the {letter.event_type} lane of webhook {webhook_id} is full ({LANE_CAPACITY} events)")
        refused = await enqueue(session, lane, event_id=letter.event_id, body=letter.body, now=now)
        assert refused is None
        letter.replayed_at = now
    await session.flush()
    if letters:
        detail = {"events": str(len(letters)), "event": event_id or "all waiting"}
        await audit_change(session, caller, webhook, "webhook.replay", now, detail)
        webhook_changed(session)
    return [_dead_view(letter) for letter in letters]
