from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from chargenet.clock import ManualClock
from chargenet.domain.events import AuthorizePayload, parse_event_json
from chargenet.outbox import Outbox, OutboxConsumer, outbox_committed
from chargenet.services import companies
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import Company, OutboxEvent, Site


def authorize(tag: str = "TAG-1") -> AuthorizePayload:
    return AuthorizePayload.model_validate({"stationId": "ST-1", "idTag": tag, "status": "Accepted"})


async def count_events(store: Store) -> int:
    async with store.transaction() as session:
        return int(await session.scalar(select(func.count()).select_from(OutboxEvent)) or 0)


async def test_published_event_is_stored_with_the_state_change(store: Store, clock: ManualClock) -> None:
    outbox = Outbox(clock)
    async with store.transaction() as session:
        session.add(Company(id="co_1", name="Acme", created_at=clock.now()))
        event = await outbox.publish(session, site_id="site_1", payload=authorize())
    async with store.transaction() as session:
        stored = await session.scalar(select(OutboxEvent))
        assert stored is not None and await session.get(Company, "co_1") is not None
    assert parse_event_json(stored.body) == event
    assert stored.seq == 1


async def test_a_rolled_back_state_change_leaves_no_event(store: Store, clock: ManualClock) -> None:
    outbox = Outbox(clock)
    with pytest.raises(RuntimeError):
        async with store.transaction() as session:
            session.add(Company(id="co_1", name="Acme", created_at=clock.now()))
            await outbox.publish(session, site_id="site_1", payload=authorize())
            raise RuntimeError("crash before commit")
    assert await count_events(store) == 0
    async with store.transaction() as session:
        assert await session.get(Company, "co_1") is None


async def test_the_readers_of_this_process_wake_at_the_commit_of_a_publishing_savepoint_not_at_its_release(
    store: Store, clock: ManualClock
) -> None:
    outbox = Outbox(clock)
    committed = outbox_committed()
    async with store.transaction() as session:
        async with session.begin_nested():  # as the edge's group commit runs a station message's unit
            await outbox.publish(session, site_id="site_1", payload=authorize())
        assert not committed.is_set()  # released, not yet committed: a reader would find nothing
    assert committed.is_set()
    committed.clear()
    async with store.transaction() as session:
        with pytest.raises(RuntimeError):
            async with session.begin_nested():
                await outbox.publish(session, site_id="site_1", payload=authorize("TAG-2"))
                raise RuntimeError("the unit fails")
    assert not committed.is_set()


async def test_each_site_and_event_type_is_its_own_gapless_stream(store: Store, clock: ManualClock) -> None:
    outbox = Outbox(clock)
    async with store.transaction() as session:
        for site in ("site_a", "site_b", "site_a"):
            await outbox.publish(session, site_id=site, payload=authorize())
    async with store.transaction() as session:
        rows = (
            await session.execute(select(OutboxEvent.site_id, OutboxEvent.seq).order_by(OutboxEvent.position))
        ).all()
    assert [tuple(r) for r in rows] == [("site_a", 1), ("site_b", 1), ("site_a", 2)]


async def test_envelope_timestamp_is_the_clock_in_brussels(store: Store, clock: ManualClock) -> None:
    async with store.transaction() as session:
        event = await Outbox(clock).publish(session, site_id="site_1", payload=authorize())
    assert event.timestamp == "2026-07-01T14:00:00.000+02:00"


async def test_consumer_reads_pending_streams_in_order_and_advances(store: Store, clock: ManualClock) -> None:
    outbox = Outbox(clock)
    consumer = OutboxConsumer("webhooks")
    async with store.transaction() as session:
        for tag in ("A", "B", "C"):
            await outbox.publish(session, site_id="site_1", payload=authorize(tag))
    async with store.transaction() as session:
        [stream] = await consumer.pending_streams(session)
        assert (stream.site_id, stream.event_type, stream.after_seq, stream.last_seq) == ("site_1", "Authorize", 0, 3)
        events = await consumer.read(session, stream, limit=2)
        assert [json.loads(e.body)["payload"]["idTag"] for e in events] == ["A", "B"]
        await consumer.advance(session, stream.site_id, stream.event_type, events[-1].seq)
    async with store.transaction() as session:
        [stream] = await consumer.pending_streams(session)
        assert [json.loads(e.body)["payload"]["idTag"] for e in await consumer.read(session, stream)] == ["C"]
        await consumer.advance(session, stream.site_id, stream.event_type, 3)
    async with store.transaction() as session:
        assert await consumer.pending_streams(session) == []
        # Another consumer has its own cursor.
        assert len(await OutboxConsumer("feed").pending_streams(session)) == 1


async def test_consumer_reads_no_event_committed_after_the_stream_was_listed(store: Store, clock: ManualClock) -> None:
    outbox = Outbox(clock)
    consumer = OutboxConsumer("webhooks")
    async with store.transaction() as session:
        await outbox.publish(session, site_id="site_1", payload=authorize("A"))
    async with store.transaction() as session:
        [stream] = await consumer.pending_streams(session)
    async with store.transaction() as session:
        await outbox.publish(session, site_id="site_1", payload=authorize("B"))
    async with store.transaction() as session:
        events = await consumer.read(session, stream)
    assert [json.loads(e.body)["payload"]["idTag"] for e in events] == ["A"]


async def test_an_advance_rolled_back_is_read_again(store: Store, clock: ManualClock) -> None:
    consumer = OutboxConsumer("webhooks")
    async with store.transaction() as session:
        await Outbox(clock).publish(session, site_id="site_1", payload=authorize())
    with pytest.raises(RuntimeError):
        async with store.transaction() as session:
            [stream] = await consumer.pending_streams(session)
            await consumer.advance(session, stream.site_id, stream.event_type, stream.last_seq)
            raise RuntimeError("crash while handing events on")
    async with store.transaction() as session:
        assert len(await consumer.pending_streams(session)) == 1


async def test_concurrent_publishers_get_sequences_in_commit_order(database_url: str, clock: ManualClock) -> None:
    from chargenet.store import schema

    store = Store(database_url)
    await schema.prepare_schema(store)
    outbox = Outbox(clock)
    try:
        first_published = asyncio.Event()
        release_first = asyncio.Event()

        async def first() -> None:
            async with store.transaction() as session:
                await outbox.publish(session, site_id="site_1", payload=authorize("first"))
                first_published.set()
                await release_first.wait()

        async def second() -> None:
            await first_published.wait()
            async with store.transaction() as session:
                await outbox.publish(session, site_id="site_1", payload=authorize("second"))

        task_one = asyncio.create_task(first())
        task_two = asyncio.create_task(second())
        await first_published.wait()
        await asyncio.sleep(0.2)
        assert not task_two.done()  # the second publisher waits for the first one's commit
        release_first.set()
        await asyncio.gather(task_one, task_two)
        async with store.transaction() as session:
            rows = (await session.execute(select(OutboxEvent.seq, OutboxEvent.body).order_by(OutboxEvent.seq))).all()
        assert [json.loads(body)["payload"]["idTag"] for _, body in rows] == ["first", "second"]
    finally:
        await store.dispose()


@pytest.mark.parametrize(
    ("instant", "written"),
    [
        (datetime(2026, 7, 1, 12, 0, tzinfo=UTC), "2026-07-01T14:00:00.000+02:00"),
        (datetime(2026, 1, 15, 12, 0, tzinfo=UTC), "2026-01-15T13:00:00.000+01:00"),
    ],
)
async def test_events_of_a_company_in_another_time_zone_are_written_in_brussels(
    store: Store, clock: ManualClock, instant: datetime, written: str
) -> None:
    clock.set(instant)
    async with store.transaction() as session:
        company = await companies.create_company(
            session, OPERATOR, name="Nihon Charging", now=clock.now(), time_zone="Asia/Tokyo"
        )
        session.add(Site(id="site_tokyo", company_id=company.id, name="Shinjuku", created_at=clock.now()))
        await session.flush()
        event = await Outbox(clock).publish(session, site_id="site_tokyo", payload=authorize())
    async with store.transaction() as session:
        stored = await session.scalar(select(OutboxEvent))
    assert stored is not None and company.time_zone == "Asia/Tokyo"
    assert event.timestamp == written
    assert json.loads(stored.body)["timestamp"] == written
