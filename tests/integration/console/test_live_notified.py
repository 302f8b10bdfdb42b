"""On PostgreSQL the live feed of one process shows what another process wrote at once, woken by the writer's
notification: a status, and a station's connection. Two processes are two `Store`s on one database; the feed's
polls are an hour apart on a clock that does not move, and the in-process commit signal is silenced, so only the
notification can explain the row."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from chargenet.clock import ManualClock
from chargenet.console.live import LiveFeed
from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus
from chargenet.domain.live import LiveRow, Subscription
from chargenet.edge.messagelog import MessageLog
from chargenet.edge.statuses import record_status
from chargenet.keys import KeyStore
from chargenet.outbox import Outbox, publisher
from chargenet.store.db import Store
from chargenet.store.notify import CONNECTOR_STATUS
from tests.factories import Tenant, make_tenant
from tests.support.processes import WITHIN, eventually, results_of, two_stores

AN_HOUR = 3600.0


@dataclass
class Following:
    writing: Store
    feed: LiveFeed
    tenant: Tenant


@pytest.fixture
async def following(clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Following]:
    """The feed of the second store follows the first, once its LISTEN is in and the read it woke is done."""
    async with two_stores(clock) as (writing, reading):
        keys = KeyStore(tmp_path / "keys")
        keys.ensure()
        tenant = await make_tenant(writing, keys, clock.now(), station_id="ST-1", connectors=2)
        # Both "processes" share this Python process: its commit signal must not tell the feed.
        monkeypatch.setattr(publisher, "note_published", lambda _session: None)
        feed = LiveFeed(
            reading.read, clock, poll_every=AN_HOUR, poll_every_listening=AN_HOUR, listener=reading.listener
        )
        feed.subscribe("another-company")  # a browser watches: the feed follows notifications
        reads = results_of(feed, "run_once")
        stopping = asyncio.Event()
        tasks = [asyncio.create_task(reading.listener.run(stopping)), asyncio.create_task(feed.run(stopping))]
        try:
            await eventually(lambda: reading.listener.listening(CONNECTOR_STATUS) and len(reads) >= 2)
            yield Following(writing, feed, tenant)
        finally:
            stopping.set()
            await asyncio.gather(*tasks)


async def rows_for(feed: LiveFeed, subscription: Subscription) -> list[LiveRow]:
    async with asyncio.timeout(WITHIN):
        while True:
            got = await feed.next(subscription, AN_HOUR)
            assert isinstance(got, list)
            if got:
                return got


async def test_a_status_written_by_another_process_reaches_the_feed_without_a_poll(
    following: Following, clock: ManualClock
) -> None:
    subscription = following.feed.subscribe(following.tenant.company_id)
    async with following.writing.transaction() as session:
        await record_status(
            session, Outbox(clock), station_id="ST-1", ocpp_connector_id=1, status=ConnectorStatus.FAULTED,
            error_code=ChargePointErrorCode.GROUND_FAILURE, timestamp=clock.now(), now=clock.now(),
        )  # fmt: skip
    [row] = await rows_for(following.feed, subscription)
    assert (row.key, row.connector.status, row.connector.error_code) == (("ST-1", 1), "Faulted", "GroundFailure")


async def test_a_station_connected_to_another_process_reaches_the_feed_without_a_poll(
    following: Following, clock: ManualClock
) -> None:
    subscription = following.feed.subscribe(following.tenant.company_id)
    message_log = MessageLog(following.writing, clock)
    message_log.connection("ST-1", True, clock.now())
    await message_log.run_once()
    rows = await rows_for(following.feed, subscription)
    assert sorted(row.key for row in rows) == [("ST-1", 1), ("ST-1", 2)]
