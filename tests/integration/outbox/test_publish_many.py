from __future__ import annotations

from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.domain.events import parse_event_json
from chargenet.outbox import Outbox
from chargenet.store.db import Store
from chargenet.store.models import OutboxEvent
from tests.integration.outbox.test_outbox import authorize


async def test_publish_many_gives_each_stream_consecutive_sequences_in_order(store: Store, clock: ManualClock) -> None:
    outbox = Outbox(clock)
    async with store.transaction() as session:
        await outbox.publish(session, site_id="site_1", payload=authorize("FIRST"))
        items = [("site_1", authorize("A")), ("site_2", authorize("B")), ("site_1", authorize("C"))]
        events = await outbox.publish_many(session, items)
    async with store.transaction() as session:
        rows = list(await session.scalars(select(OutboxEvent).order_by(OutboxEvent.site_id, OutboxEvent.seq)))
    assert [(r.site_id, r.seq, parse_event_json(r.body).payload.idTag) for r in rows] == [  # type: ignore[union-attr]
        ("site_1", 1, "FIRST"),
        ("site_1", 2, "A"),
        ("site_1", 3, "C"),
        ("site_2", 1, "B"),
    ]
    assert [e.siteId for e in events] == ["site_1", "site_2", "site_1"]


async def test_publish_many_of_nothing_writes_nothing(store: Store, clock: ManualClock) -> None:
    async with store.transaction() as session:
        assert await Outbox(clock).publish_many(session, []) == []
        assert await session.scalar(select(OutboxEvent)) is None
