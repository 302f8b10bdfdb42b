"""The lane filler: takes events from the outbox in commit order and puts them into the lanes that want them.

One transaction per round: read each pending (site, event type) stream after the cursor, insert each event
into every lane of that site's webhooks subscribed to that type whose station and charge point filter takes it
(`domain.webhook_filters`; or dead-letter it as `queue_full`), advance
the cursor; a stream no lane takes has its cursor advanced past what the round listed, unread. A crash keeps all
of it or none of it, so an event is neither lost nor enqueued twice. Only one filler works at a time: on
PostgreSQL a transaction-scoped advisory lock (a second process skips the round), on SQLite the `BEGIN IMMEDIATE`
every transaction starts with.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import cast

from sqlalchemy import Table, select, text, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain.webhook_filters import EventFilter, loaded, subject_of
from chargenet.outbox import OutboxConsumer
from chargenet.store.db import Store
from chargenet.store.models import Webhook, WebhookLane
from chargenet.store.notify import WEBHOOK_LANES, notify
from chargenet.webhooks.queue import FILLER_CONSUMER, FillableLane, enqueue_many

log = logging.getLogger(__name__)

CONSUMER = FILLER_CONSUMER
# An arbitrary constant that names the filler's advisory lock in PostgreSQL's shared lock space.
FILLER_LOCK_KEY = 0x63_68_67_77_68_6B
BATCH = 500
_lanes = cast(Table, WebhookLane.__table__)
_webhooks = cast(Table, Webhook.__table__)


@dataclass
class FillReport:
    enqueued: int = 0
    refused: int = 0
    filled_lanes: set[int] = field(default_factory=set)


async def fill_once(store: Store, clock: Clock, *, batch: int = BATCH) -> FillReport:
    report = FillReport()
    async with store.transaction() as session:
        if not await _take_filler_lock(session):
            return report
        consumer = OutboxConsumer(CONSUMER)
        streams = await consumer.pending_streams(session)
        if not streams:
            return report
        # Every lane this round may touch is locked up front, in id order: lane workers settling several lanes
        # in one transaction lock them in id order too, so the two never wait for each other in a cycle.
        rows = await session.execute(
            select(
                _lanes.c.id,
                _lanes.c.webhook_id,
                _lanes.c.event_type,
                _lanes.c.size,
                _webhooks.c.site_id,
                _webhooks.c.station_filter,
                _webhooks.c.charge_point_filter,
            )
            .join(_webhooks, _webhooks.c.id == _lanes.c.webhook_id)
            .where(tuple_(_webhooks.c.site_id, _lanes.c.event_type).in_([(s.site_id, s.event_type) for s in streams]))
            .order_by(_lanes.c.id)
            .with_for_update(of=_lanes)
        )
        lanes_of: dict[tuple[str, str], list[tuple[FillableLane, EventFilter]]] = {}
        for lane_id, webhook_id, event_type, size, site_id, stations, charge_points in rows:
            lane = FillableLane(lane_id, webhook_id, event_type, size)
            lanes_of.setdefault((site_id, event_type), []).append(
                (lane, EventFilter(loaded(stations), loaded(charge_points)))
            )
        for stream in streams:
            lanes = lanes_of.get((stream.site_id, stream.event_type), [])
            if not lanes:
                # No webhook takes them: the cursor passes over every event the listing saw without reading one (under
                # a flood of statuses with no webhook, the reads were 2 % of the edge's time).
                await consumer.advance(session, stream.site_id, stream.event_type, stream.last_seq)
                continue
            events = await consumer.read(session, stream, limit=batch)
            if not events:
                continue
            now = clock.now()
            # Each event is read once for the lanes with a filter, and not at all when none has one.
            subjects = [subject_of(e.body) for e in events] if any(not w.takes_all for _, w in lanes) else []
            for lane, wanted in lanes:
                # Events the webhook's filter leaves out never enter its lane, so they can never hold it back.
                if wanted.takes_all:
                    taken = events
                else:
                    taken = [e for e, about in zip(events, subjects, strict=True) if wanted.takes(*about)]
                if not taken:
                    continue
                letters = await enqueue_many(session, lane, taken, now=now)
                report.enqueued += len(taken) - len(letters)
                report.refused += len(letters)
                if len(letters) < len(taken):
                    report.filled_lanes.add(lane.id)
                for letter in letters:
                    log.warning(
                        "webhook lane full: event dead-lettered",
                        extra={
                            "fields": {
                                "webhookId": lane.webhook_id,
                                "eventType": lane.event_type,
                                "eventId": letter.event_id,
                                "reason": letter.reason.value,
                            }
                        },
                    )
            await consumer.advance(session, stream.site_id, stream.event_type, events[-1].seq)
        if report.filled_lanes:
            # The lanes another process holds sleep until it hears of their entries: at its next lease round,
            # or at once by this (PostgreSQL; one notification a fill, whichever lanes it filled).
            notify(session, WEBHOOK_LANES)
    return report


async def _take_filler_lock(session: AsyncSession) -> bool:
    if session.get_bind().dialect.name != "postgresql":
        return True
    taken = await session.scalar(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": FILLER_LOCK_KEY})
    return bool(taken)
