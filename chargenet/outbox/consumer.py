from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Integer, Table, and_, bindparam, delete, func, select
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
        rows = await session.execute(_PENDING_STREAMS, {"consumer": self.name})
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
            _READ,
            {
                "site_id": stream.site_id,
                "event_type": stream.event_type,
                "after_seq": stream.after_seq,
                "last_seq": stream.last_seq,
                "limit": limit,
            },
        )
        return [StoredEvent(*row) for row in rows]

    async def advance(self, session: AsyncSession, site_id: str, event_type: str, seq: int) -> None:
        statement = _ADVANCE[session.get_bind().dialect.name]
        await session.execute(
            statement, {"consumer": self.name, "cursor_site": site_id, "cursor_type": event_type, "seq": seq}
        )


# A fill round runs these several times a second under load: built once, every value bound, plain columns (no ORM
# objects), rather than built and loaded through the ORM on each call.
_events = cast(Table, OutboxEvent.__table__)
_streams = cast(Table, EventStream.__table__)
_cursors = cast(Table, OutboxCursor.__table__)
_cursor_seq = func.coalesce(_cursors.c.last_seq, 0)
_PENDING_STREAMS = (
    select(_streams.c.site_id, _streams.c.event_type, _cursor_seq, _streams.c.last_seq)
    .select_from(
        _streams.outerjoin(
            _cursors,
            and_(
                _cursors.c.consumer == bindparam("consumer"),
                _cursors.c.site_id == _streams.c.site_id,
                _cursors.c.event_type == _streams.c.event_type,
            ),
        )
    )
    .where(_streams.c.last_seq > _cursor_seq)
    .order_by(_streams.c.site_id, _streams.c.event_type)
)
_READ = (
    select(
        _events.c.event_id,
        _events.c.site_id,
        _events.c.event_type,
        _events.c.seq,
        _events.c.body,
        _events.c.raised_at,
    )
    .where(
        _events.c.site_id == bindparam("site_id"),
        _events.c.event_type == bindparam("event_type"),
        _events.c.seq > bindparam("after_seq"),
        _events.c.seq <= bindparam("last_seq"),
    )
    .order_by(_events.c.seq)
    .limit(bindparam("limit", type_=Integer))
)


def _advance(dialect_insert: Callable[[Table], Any]) -> Any:
    statement = dialect_insert(_cursors).values(
        consumer=bindparam("consumer"),
        site_id=bindparam("cursor_site"),
        event_type=bindparam("cursor_type"),
        last_seq=bindparam("seq"),
    )
    return statement.on_conflict_do_update(
        index_elements=[_cursors.c.consumer, _cursors.c.site_id, _cursors.c.event_type],
        set_={"last_seq": statement.excluded.last_seq},
    )


_ADVANCE = {"postgresql": _advance(postgresql.insert), "sqlite": _advance(sqlite.insert)}


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
