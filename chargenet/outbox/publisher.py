from __future__ import annotations

import json
from collections.abc import Callable

from sqlalchemy import insert, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain.events import Event, Payload, build_event
from chargenet.ids import new_event_id
from chargenet.store.models import EventStream, OutboxEvent


class Outbox:
    """Publishes events into the store, inside the transaction the caller already holds."""

    def __init__(self, clock: Clock, new_id: Callable[[], str] = new_event_id) -> None:
        self._clock = clock
        self._new_id = new_id

    async def publish(self, session: AsyncSession, *, site_id: str, payload: Payload) -> Event:
        """Store the event for `payload`; it becomes visible to consumers when `session` commits.

        The stream row is incremented first: that row lock makes concurrent publishers of the same
        (site, event type) wait for each other's commit, so sequence order is commit order.
        """
        event = build_event(event_id=self._new_id(), site_id=site_id, raised_at=self._clock.now(), payload=payload)
        seq = await _next_seq(session, site_id, event.eventType.value)
        await session.execute(
            insert(OutboxEvent).values(
                event_id=event.eventId,
                site_id=site_id,
                event_type=event.eventType.value,
                seq=seq,
                body=json.dumps(event.to_json_dict(), separators=(",", ":"), ensure_ascii=False),
                raised_at=self._clock.now(),
            )
        )
        return event


async def _next_seq(session: AsyncSession, site_id: str, event_type: str) -> int:
    dialect = session.get_bind().dialect.name
    insert_stream = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(EventStream)
    await session.execute(
        insert_stream.values(site_id=site_id, event_type=event_type, last_seq=0).on_conflict_do_nothing()
    )
    result = await session.execute(
        update(EventStream)
        .where(EventStream.site_id == site_id, EventStream.event_type == event_type)
        .values(last_seq=EventStream.last_seq + 1)
        .returning(EventStream.last_seq)
    )
    return int(result.scalar_one())
