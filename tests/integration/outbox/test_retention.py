"""Events are kept for the retention period and purged after it (decisions.md §4)."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.domain.events import AuthorizePayload
from chargenet.outbox import Outbox, OutboxConsumer
from chargenet.outbox.retention import EventRetention
from chargenet.store.db import Store
from chargenet.store.models import OutboxEvent


def authorize(tag: str) -> AuthorizePayload:
    return AuthorizePayload.model_validate({"stationId": "ST-1", "idTag": tag, "status": "Accepted"})


async def _stored(store: Store) -> list[tuple[int, str]]:
    async with store.transaction() as session:
        rows = await session.execute(select(OutboxEvent.seq, OutboxEvent.body).order_by(OutboxEvent.seq))
    return [(seq, json.loads(body)["payload"]["idTag"]) for seq, body in rows]


async def test_events_older_than_the_retention_period_are_purged_and_newer_ones_kept(
    store: Store, clock: ManualClock
) -> None:
    outbox = Outbox(clock)
    async with store.transaction() as session:
        await outbox.publish(session, site_id="site_1", payload=authorize("OLD"))
    clock.advance(timedelta(days=6, hours=23).total_seconds())
    async with store.transaction() as session:
        await outbox.publish(session, site_id="site_1", payload=authorize("NEW"))
    clock.advance(timedelta(hours=1, seconds=1).total_seconds())
    await EventRetention(store, clock, days=7).run_once()
    assert await _stored(store) == [(2, "NEW")]


async def test_more_old_events_than_a_purge_takes_at_once_are_purged_in_several_transactions(
    store: Store, clock: ManualClock
) -> None:
    outbox = Outbox(clock)
    async with store.transaction() as session:
        for n in range(5):
            await outbox.publish(session, site_id="site_1", payload=authorize(f"OLD-{n}"))
    clock.advance(timedelta(days=8).total_seconds())
    async with store.transaction() as session:
        await outbox.publish(session, site_id="site_1", payload=authorize("NEW"))
    units: list[float] = []
    store.time_units(transaction=units.append, read=lambda _: None)
    await EventRetention(store, clock, days=7, batch=2).run_once()
    assert len(units) == 3  # 2, 2 and 1 events
    assert await _stored(store) == [(6, "NEW")]


async def test_a_stream_emptied_by_retention_goes_on_with_the_next_sequence_number(
    store: Store, clock: ManualClock
) -> None:
    outbox = Outbox(clock)
    async with store.transaction() as session:
        await outbox.publish(session, site_id="site_1", payload=authorize("OLD"))
    clock.advance(timedelta(days=8).total_seconds())
    await EventRetention(store, clock, days=7).run_once()
    async with store.transaction() as session:
        await outbox.publish(session, site_id="site_1", payload=authorize("NEW"))
    assert await _stored(store) == [(2, "NEW")]


async def test_old_events_a_consumer_has_not_taken_yet_are_kept(store: Store, clock: ManualClock) -> None:
    outbox, consumer = Outbox(clock), OutboxConsumer("lanes")
    async with store.transaction() as session:
        await outbox.publish(session, site_id="site_1", payload=authorize("TAKEN"))
    async with store.transaction() as session:
        [stream] = await consumer.pending_streams(session)
        taken = await consumer.read(session, stream)
        await consumer.advance(session, stream.site_id, stream.event_type, taken[-1].seq)
    async with store.transaction() as session:
        await outbox.publish(session, site_id="site_1", payload=authorize("WAITING"))
    clock.advance(timedelta(days=30).total_seconds())
    await EventRetention(store, clock, days=7, consumers=["lanes"]).run_once()
    assert await _stored(store) == [(2, "WAITING")]
