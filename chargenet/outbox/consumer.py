from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.store.db import LONG
from chargenet.store.models import EventStream, OutboxCursor, OutboxEvent


@dataclass(frozen=True, slots=True)
class StoredEvent:
    event_id: str
    site_id: str
    event_type: str
    seq: int
    body: str
    raised_at: datetime


@dataclass(frozen=True, slots=True)
class PendingStream:
    site_id: str
    event_type: str
    after_seq: int
    last_seq: int


class OutboxConsumer:
    """A named reader of the outbox that remembers, per stream, the last event it took.

    Take events and advance the cursor in the same transaction as whatever the consumer does with them
    (for the webhook engine: inserting them into lanes), so a crash either keeps both or neither.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    async def pending_streams(self, session: AsyncSession) -> list[PendingStream]:
        cursor = func.coalesce(OutboxCursor.last_seq, 0)
        rows = await session.execute(
            select(EventStream.site_id, EventStream.event_type, cursor, EventStream.last_seq)
            .outerjoin(
                OutboxCursor,
                and_(
                    OutboxCursor.consumer == self.name,
                    OutboxCursor.site_id == EventStream.site_id,
                    OutboxCursor.event_type == EventStream.event_type,
                ),
            )
            .where(EventStream.last_seq > cursor)
            .order_by(EventStream.site_id, EventStream.event_type)
        )
        return [PendingStream(site, kind, int(after), int(last)) for site, kind, after, last in rows]

    async def read(self, session: AsyncSession, stream: PendingStream, limit: int = 100) -> list[StoredEvent]:
        """The stream's next events after the cursor and up to its `last_seq` as `pending_streams` saw it,
        oldest first. Only committed events are visible, and stream sequences are handed out in commit order,
        so nothing can appear later below what was read.

        The upper bound matters on PostgreSQL, where each statement sees what was committed when it began: a
        consumer acts on what it saw when it listed the streams (the webhook filler locks the lanes of those
        streams), and an event committed since, perhaps for a webhook it has not locked, waits for its next round.
        """
        rows = await session.execute(
            select(OutboxEvent)
            .where(
                OutboxEvent.site_id == stream.site_id,
                OutboxEvent.event_type == stream.event_type,
                OutboxEvent.seq > stream.after_seq,
                OutboxEvent.seq <= stream.last_seq,
            )
            .order_by(OutboxEvent.seq)
            .limit(limit)
        )
        return [StoredEvent(e.event_id, e.site_id, e.event_type, e.seq, e.body, e.raised_at) for e in rows.scalars()]

    async def advance(self, session: AsyncSession, site_id: str, event_type: str, seq: int) -> None:
        dialect = session.get_bind().dialect.name
        upsert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(OutboxCursor).values(
            consumer=self.name, site_id=site_id, event_type=event_type, last_seq=seq
        )
        await session.execute(
            upsert.on_conflict_do_update(index_elements=["consumer", "site_id", "event_type"], set_={"last_seq": seq})
        )


async def purge_events_before(
    session: AsyncSession, cutoff: datetime, consumers: Sequence[str] = (), limit: int | None = None
) -> int:
    """Retention: drop events raised before `cutoff` that every one of `consumers` has already taken (stream
    counters stay, so sequences never repeat), at most `limit` of them. An event a consumer has not taken yet is
    kept however old it is: a consumer that was stopped for longer than the retention period loses nothing."""
    old = select(OutboxEvent.position).where(OutboxEvent.raised_at < cutoff)
    for name in consumers:
        taken = (
            select(OutboxCursor.last_seq)
            .where(
                OutboxCursor.consumer == name,
                OutboxCursor.site_id == OutboxEvent.site_id,
                OutboxCursor.event_type == OutboxEvent.event_type,
                OutboxCursor.last_seq >= OutboxEvent.seq,
            )
            .exists()
        )
        old = old.where(taken)
    if limit is not None:
        old = old.order_by(OutboxEvent.position).limit(limit)
    query = delete(OutboxEvent).where(OutboxEvent.position.in_(old)).execution_options(**LONG)
    result = await session.execute(query.execution_options(synchronize_session=False))
    return int(getattr(result, "rowcount", 0) or 0)
