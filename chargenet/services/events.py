"""The events feed (decisions.md §3: `GET {base_url}/events?siteId=..&eventType=..&cursor=..`) for partners who poll.

The same envelopes the webhooks carry, from the outbox's retention window, oldest first. The cursor holds, per
event type, the last stream sequence returned; stream sequences are handed out in commit order, so an event
committed after a page was read can never appear below that page's cursor. Unlike other lists, `next` is
always set: it is where to poll from next time, even when this page reached the end.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any

from pydantic import Field
from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.events import EventType
from chargenet.domain.scopes import Scope
from chargenet.errors import InvalidInput
from chargenet.services.callers import Caller
from chargenet.services.pages import UnknownCursor
from chargenet.services.reach import reachable_site
from chargenet.services.views import View
from chargenet.store.models import OutboxEvent

MAX_PAGE = 500


class EventPage(View):
    """A page of the feed. Its items are the envelopes exactly as published and signed for webhooks, described by
    the event schemas (docs/schemas/); `next` is always set."""

    items: list[dict[str, Any]] = Field(description="event envelopes, one schema per event type in docs/schemas/")
    next: str


def encode_cursor(positions: dict[str, int]) -> str:
    text = json.dumps(positions, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


def decode_cursor(cursor: str | None) -> dict[str, int]:
    if not cursor:
        return {}
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        raise UnknownCursor(cursor) from None
    if not isinstance(data, dict) or not all(
        k in set(EventType) and type(v) is int and 0 <= v < 2**63 for k, v in data.items()
    ):
        raise UnknownCursor(cursor)
    return {str(k): int(v) for k, v in data.items()}


async def list_events(
    session: AsyncSession,
    caller: Caller,
    *,
    site_id: str,
    event_types: Sequence[EventType] | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> EventPage:
    """The site's events after `cursor`; a site the caller's `events:read` does not reach is `NotFound`."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"must be 1 to {MAX_PAGE}", field="limit")
    await reachable_site(session, caller, Scope.EVENTS_READ, site_id)
    after = decode_cursor(cursor)
    types = list(event_types) if event_types else list(EventType)
    streams = [and_(OutboxEvent.event_type == t.value, OutboxEvent.seq > after.get(t.value, 0)) for t in types]
    rows = list(
        await session.scalars(
            select(OutboxEvent)
            .where(OutboxEvent.site_id == site_id, or_(*streams))
            .order_by(OutboxEvent.position)
            .limit(limit)
        )
    )
    positions = dict(after)
    for row in rows:
        positions[row.event_type] = max(positions.get(row.event_type, 0), row.seq)
    return EventPage(items=[json.loads(row.body) for row in rows], next=encode_cursor(positions))
