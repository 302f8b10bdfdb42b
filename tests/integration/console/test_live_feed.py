"""The process's live feed against a real store, on both backends: what wakes it, and what it finds by polling."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import ManualClock
from chargenet.console.live import LiveFeed
from chargenet.domain.live import LiveRow, Subscription
from chargenet.outbox import signal
from chargenet.services import connector_status
from chargenet.store.db import Store
from chargenet.store.models import StationPresence
from tests.support.processes import results_of
from tests.support.tenants import Tenant


@dataclass
class Running(Tenant):
    feed: LiveFeed


@pytest.fixture
async def running(store: Store, clock: ManualClock, tmp_path: Path) -> AsyncIterator[Running]:
    tenant = await Tenant.create(store, clock, tmp_path / "keys")
    feed = LiveFeed(store.read, clock, poll_every=3600)  # a poll only when a test moves the clock an hour
    running = Running(**vars(tenant), feed=feed)
    await running.station("ST-1")
    # A browser of another company already watches, as on a console in use: the feed follows every commit.
    feed.subscribe("another-company")
    stopping = asyncio.Event()
    task = asyncio.create_task(feed.run(stopping))
    await feed.started.wait()
    try:
        yield running
    finally:
        stopping.set()
        await task


async def rows_for(feed: LiveFeed, subscription: Subscription, within: float = 5.0) -> list[LiveRow]:
    """The next rows sent to `subscription` (a quiet spell of an hour on the clock is never reached)."""
    async with asyncio.timeout(within):
        while True:
            got = await feed.next(subscription, 3600)
            assert isinstance(got, list)
            if got:
                return got


@asynccontextmanager
async def feed_running(
    read: Callable[[], AbstractAsyncContextManager[AsyncSession]], clock: ManualClock, *, poll_every: float
) -> AsyncIterator[tuple[LiveFeed, list[object]]]:
    """A feed whose reader runs, once its first read is in; and the results of its reads so far."""
    feed = LiveFeed(read, clock, poll_every=poll_every)
    reads = results_of(feed, "run_once")
    stopping = asyncio.Event()
    task = asyncio.create_task(feed.run(stopping))
    try:
        await feed.started.wait()
        yield feed, reads
    finally:
        stopping.set()
        await task


async def test_a_status_committed_in_this_process_wakes_the_feed_without_a_poll(running: Running) -> None:
    subscription = running.feed.subscribe(running.company_id)
    await running.status("Available")
    [row] = await rows_for(running.feed, subscription)
    assert (row.key, row.connector.status) == (("ST-1", 1), "Available")


async def test_a_new_error_code_under_the_same_status_is_found_by_the_poll(running: Running) -> None:
    subscription = running.feed.subscribe(running.company_id)
    await running.status("Faulted")
    await rows_for(running.feed, subscription)
    running.clock.advance(1)
    await running.status("Faulted", "GroundFailure")  # no event: the status did not change
    running.clock.advance(3600)
    [row] = await rows_for(running.feed, subscription)
    assert row.connector.error_code == "GroundFailure"


async def test_a_station_created_after_the_feed_started_follows_its_link(running: Running) -> None:
    await running.station("ST-NEW")
    subscription = running.feed.subscribe(running.company_id)
    async with running.store.transaction() as session:
        session.add(StationPresence(station_id="ST-NEW", connected=True, connected_at=running.clock.now()))
    running.clock.advance(3600)
    rows = await rows_for(running.feed, subscription)
    assert sorted(row.key for row in rows) == [("ST-NEW", 1), ("ST-NEW", 2)]
    assert all(row.online for row in rows)


async def test_a_heartbeat_changes_the_rows_of_its_station(running: Running) -> None:
    async with running.store.transaction() as session:
        session.add(StationPresence(station_id="ST-1", connected=True, connected_at=running.clock.now()))
    running.clock.advance(3600)
    subscription = running.feed.subscribe(running.company_id)
    await rows_for(running.feed, subscription)  # the connection
    running.clock.advance(60)
    beat = running.clock.now()
    async with running.store.transaction() as session:
        await session.execute(
            update(StationPresence).where(StationPresence.station_id == "ST-1").values(last_heartbeat_at=beat)
        )
    running.clock.advance(3600)
    rows = await rows_for(running.feed, subscription)
    assert sorted(row.key for row in rows) == [("ST-1", 1), ("ST-1", 2)]
    assert all(row.link is not None and row.link.last_heartbeat_at == beat for row in rows)


async def test_rows_stamped_behind_the_newest_are_read_again_only_for_the_overlap(running: Running) -> None:
    async with running.store.transaction() as session:
        session.add(StationPresence(station_id="ST-1", connected=True, connected_at=running.clock.now()))
    await running.status("Available")
    overlap = timedelta(seconds=2)
    now = running.clock.now()
    async with running.store.read() as session:
        first = await connector_status.read_everything(session, now=now)
        within = await connector_status.read_changes(
            session, first.marks, now=now + timedelta(seconds=1), overlap=overlap
        )
        settled = await connector_status.read_changes(session, within.marks, now=now + overlap, overlap=overlap)
    assert [c.key for c in within.connectors] == [("ST-1", 1)]  # a row stamped earlier may still have committed late
    assert [link.station_id for link in within.links] == ["ST-1"]
    assert settled.connectors == [] and settled.links == []  # a quiet store is not read again and again


async def test_with_no_browser_watching_a_commit_does_not_wake_the_feed(store: Store, clock: ManualClock) -> None:
    async with feed_running(store.read, clock, poll_every=3600) as (feed, reads):
        for _ in range(3):
            publisher_signal_commit()
            await asyncio.sleep(0.05)
        assert len(reads) == 1  # the first read only: nobody watches, so only the poll (an hour away) reads
        feed.subscribe("acme")
        async with asyncio.timeout(5):
            while len(reads) < 2:
                await asyncio.sleep(0.01)  # the first browser wakes it at once
        publisher_signal_commit()
        async with asyncio.timeout(5):
            while len(reads) < 3:
                await asyncio.sleep(0.01)  # and from then on every commit does


async def test_with_no_browser_watching_the_feed_does_not_poll_and_the_first_browser_catches_up(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    tenant = await Tenant.create(store, clock, tmp_path / "keys")
    await tenant.station("ST-1")
    async with feed_running(store.read, clock, poll_every=1) as (feed, reads):
        mark = feed.mark()  # where a page read from the store now resumes
        await tenant.status("Charging")
        for _ in range(3):
            clock.advance(3600)  # many polls' worth of time
            await asyncio.sleep(0.05)
        assert len(reads) == 1  # the first read only
        subscription = feed.subscribe(tenant.company_id, since=mark)
        [row] = await rows_for(feed, subscription)
        assert (row.key, row.connector.status) == (("ST-1", 1), "Charging")


async def test_the_catch_up_after_an_unwatched_spell_reads_the_fleet_not_the_events_raised_meanwhile(
    store: Store, clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = await Tenant.create(store, clock, tmp_path / "keys")
    await tenant.station("ST-1")
    async with feed_running(store.read, clock, poll_every=1) as (feed, _reads):
        for status in ("Preparing", "Charging", "Finishing", "Available", "Charging"):
            await tenant.status(status)  # a busy spell, nobody watching
        changes, wholes = counted(monkeypatch, "read_changes"), counted(monkeypatch, "read_everything")
        subscription = feed.subscribe(tenant.company_id, since=feed.mark())
        [row] = await rows_for(feed, subscription)
        assert row.connector.status == "Charging"
        assert (len(wholes), len(changes)) == (1, 0)
        await tenant.status("Finishing")  # watched now: followed by its changes again
        [row] = await rows_for(feed, subscription)
        assert row.connector.status == "Finishing"
        assert (len(wholes), len(changes)) == (1, 1)


async def test_time_that_passes_while_the_feed_reads_counts_towards_its_next_poll(
    store: Store, clock: ManualClock
) -> None:
    gate, held = asyncio.Event(), asyncio.Event()
    gate.set()

    @asynccontextmanager
    async def read() -> AsyncIterator[AsyncSession]:
        if not gate.is_set():
            held.set()
        await gate.wait()
        async with store.read() as session:
            yield session

    async with feed_running(read, clock, poll_every=3600) as (feed, reads):
        try:
            gate.clear()
            feed.subscribe("acme")  # the first browser: the feed reads at once, and that read is held
            await asyncio.wait_for(held.wait(), 5)
            clock.advance(3600)  # the poll falls due while the feed reads
            gate.set()
            async with asyncio.timeout(5):
                while len(reads) < 3:
                    await asyncio.sleep(0.01)  # the poll that fell due is not put off for another hour
        finally:
            gate.set()  # a held read would keep the feed from stopping


def counted(monkeypatch: pytest.MonkeyPatch, read: str) -> list[None]:
    """Each call of `connector_status.<read>` from now on, for the rest of the test."""
    calls: list[None] = []
    original = getattr(connector_status, read)

    async def counting(*args: object, **kwargs: object) -> object:
        calls.append(None)
        return await original(*args, **kwargs)

    monkeypatch.setattr(connector_status, read, counting)
    return calls


def publisher_signal_commit() -> None:
    """What a commit of this process that published events does to the signal's subscribers."""
    for waiter in list(signal._subscribers):
        waiter.set()
