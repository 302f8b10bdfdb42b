from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain.events import Event, Payload, build_event
from chargenet.ids import new_event_id
from chargenet.outbox.signal import note_published
from chargenet.store.models import EventStream, OutboxEvent
from chargenet.store.notify import OUTBOX, notify


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
        now = self._clock.now()
        event = build_event(event_id=self._new_id(), site_id=site_id, raised_at=now, payload=payload)
        seq = await _next_seq(session, site_id, event.eventType.value)
        await session.execute(
            _INSERT_EVENTS,
            {
                "event_id": event.eventId,
                "site_id": site_id,
                "event_type": event.eventType.value,
                "seq": seq,
                "body": json.dumps(event.to_json_dict(), separators=(",", ":"), ensure_ascii=False),
                "raised_at": now,
            },
        )
        _committed_wakes(session)
        return event

    async def publish_many(self, session: AsyncSession, items: Sequence[tuple[str, Payload]]) -> list[Event]:
        """`publish` for many (site id, payload) pairs in one go: one stream update per (site, event type) and
        one multi-row insert, so a batch of events costs a few statements instead of three per event. The
        events of one stream get consecutive sequence numbers in the order given."""
        now = self._clock.now()
        events = [build_event(event_id=self._new_id(), site_id=site, raised_at=now, payload=p) for site, p in items]
        counts: dict[tuple[str, str], int] = {}
        for event in events:
            key = (event.siteId, event.eventType.value)
            counts[key] = counts.get(key, 0) + 1
        next_seq: dict[tuple[str, str], int] = {}
        # Stream rows are locked in one global order, so two processes publishing batches cannot deadlock.
        for (site_id, event_type), count in sorted(counts.items()):
            last = await _next_seq(session, site_id, event_type, count)
            next_seq[(site_id, event_type)] = last - count + 1
        rows = []
        for event in events:
            key = (event.siteId, event.eventType.value)
            rows.append(
                {
                    "event_id": event.eventId,
                    "site_id": event.siteId,
                    "event_type": key[1],
                    "seq": next_seq[key],
                    "body": json.dumps(event.to_json_dict(), separators=(",", ":"), ensure_ascii=False),
                    "raised_at": now,
                }
            )
            next_seq[key] += 1
        if rows:
            await session.execute(_INSERT_EVENTS, rows)
            _committed_wakes(session)
        return events


# On the table rather than the ORM class: the ORM's bulk insert costs more than the statement, and nothing comes back.
_INSERT_EVENTS = insert(cast(Table, OutboxEvent.__table__))
_streams = cast(Table, EventStream.__table__)


def _bump_stream(dialect_insert: Callable[[Table], Any]) -> Any:
    """One statement that hands out a stream's next `count` sequence numbers and returns the last: it creates the
    stream at `count`, or adds `count` to it. Either way the row stays locked until the commit (on PostgreSQL a
    second publisher of the stream waits there, then adds to what the first committed), so sequence order is
    commit order. Built once per dialect: building the ORM's insert and update on each call cost more than running
    them (1.3 ms an event under cProfile, most of a single publish)."""
    statement = dialect_insert(_streams).values(
        site_id=bindparam("stream_site"), event_type=bindparam("stream_type"), last_seq=bindparam("count")
    )
    return statement.on_conflict_do_update(
        index_elements=[_streams.c.site_id, _streams.c.event_type],
        set_={"last_seq": _streams.c.last_seq + statement.excluded.last_seq},
    ).returning(_streams.c.last_seq)


_BUMP_STREAM = {"postgresql": _bump_stream(postgresql.insert), "sqlite": _bump_stream(sqlite.insert)}


def _committed_wakes(session: AsyncSession) -> None:
    """When `session` commits, wake the outbox's readers: this process's at once (`signal`), other processes'
    through PostgreSQL (one notification per transaction, however many events it publishes)."""
    note_published(session)
    notify(session, OUTBOX)


async def _next_seq(session: AsyncSession, site_id: str, event_type: str, count: int = 1) -> int:
    statement = _BUMP_STREAM[session.get_bind().dialect.name]
    result = await session.execute(statement, {"stream_site": site_id, "stream_type": event_type, "count": count})
    return int(result.scalar_one())
