"""Notifications between processes sharing one PostgreSQL store: sent at the commit of the sender's transaction,
received by the listener of another `Store` (its own engine and connections: another process), and again after
the listening connection is killed. On SQLite `notify` does nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import event, text

from chargenet.clock import ManualClock
from chargenet.store import notify as notifications
from chargenet.store.db import Store
from chargenet.store.notify import notify, reconnect_delay
from tests.support.processes import WITHIN, eventually, two_stores

CHANNEL = "chargenet_test"


@pytest.fixture
async def stores(clock: ManualClock) -> AsyncIterator[tuple[Store, Store]]:
    """Two processes' stores on one database; the second one's listener runs."""
    async with two_stores(clock) as (sender, receiver):
        stopping = asyncio.Event()
        task = asyncio.create_task(receiver.listener.run(stopping))
        try:
            yield sender, receiver
        finally:
            stopping.set()
            await task


async def listening(store: Store, channel: str) -> None:
    await eventually(lambda: store.listener.listening(channel))


async def woken(event: asyncio.Event) -> None:
    async with asyncio.timeout(WITHIN):
        await event.wait()


async def test_a_notification_committed_through_one_store_wakes_a_subscriber_of_another(
    stores: tuple[Store, Store],
) -> None:
    sender, receiver = stores
    subscribed = receiver.listener.subscribe(CHANNEL)
    await listening(receiver, CHANNEL)
    subscribed.clear()  # the wake-up of the LISTEN taking effect
    async with sender.transaction() as session:
        notify(session, CHANNEL, "ST-1")
    await woken(subscribed)


async def test_a_subscriber_of_one_payload_is_woken_by_that_payload_only(stores: tuple[Store, Store]) -> None:
    sender, receiver = stores
    mine = receiver.listener.subscribe(CHANNEL, "cmd-1")
    other = receiver.listener.subscribe(CHANNEL, "cmd-2")
    await listening(receiver, CHANNEL)
    mine.clear()
    other.clear()
    async with sender.transaction() as session:
        notify(session, CHANNEL, "cmd-1")
    await woken(mine)
    assert not other.is_set()


async def test_a_rolled_back_transaction_wakes_nobody(stores: tuple[Store, Store]) -> None:
    sender, receiver = stores
    rolled_back = receiver.listener.subscribe(CHANNEL, "rolled back")
    marker = receiver.listener.subscribe(CHANNEL, "marker")
    await listening(receiver, CHANNEL)
    rolled_back.clear()
    marker.clear()
    with pytest.raises(RuntimeError):
        async with sender.transaction() as session:
            notify(session, CHANNEL, "rolled back")
            await session.execute(text("SELECT 1"))
            raise RuntimeError("the unit of work fails")
    async with sender.transaction() as session:
        notify(session, CHANNEL, "marker")
    # Notifications arrive in commit order: had the first been sent, it would be here before the marker.
    await woken(marker)
    assert not rolled_back.is_set()


async def test_a_transaction_sends_one_notification_per_channel_and_payload_after_its_savepoints(
    stores: tuple[Store, Store],
) -> None:
    sender, receiver = stores
    subscribed = receiver.listener.subscribe(CHANNEL)
    await listening(receiver, CHANNEL)
    subscribed.clear()
    sent: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "pg_notify" in statement:
            sent.append(statement)

    event.listen(sender.engine.sync_engine, "before_cursor_execute", count)
    async with sender.transaction() as session:
        # As the edge's group committer runs its units: each in a savepoint, one of them rolled back.
        for unit in range(3):
            nested = await session.begin_nested()
            notify(session, CHANNEL)
            if unit == 1:
                await nested.rollback()
            else:
                await nested.commit()
    await woken(subscribed)
    assert len(sent) == 1


async def test_the_listener_reconnects_after_its_connection_is_killed_and_wakes_its_subscribers(
    stores: tuple[Store, Store],
) -> None:
    sender, receiver = stores
    subscribed = receiver.listener.subscribe(CHANNEL)
    await listening(receiver, CHANNEL)
    assert receiver.listener.connections == 1
    subscribed.clear()
    async with sender.transaction() as session:
        killed = await session.scalar(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name = :listener"
            ),
            {"listener": notifications.APPLICATION_NAME},
        )
    assert killed == 1
    await woken(subscribed)  # once reconnected: what was sent meanwhile was missed
    assert receiver.listener.connections == 2
    await listening(receiver, CHANNEL)
    subscribed.clear()
    async with sender.transaction() as session:
        notify(session, CHANNEL)
    await woken(subscribed)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_notify_does_nothing_on_sqlite(store: Store) -> None:
    async with store.transaction() as session:
        notify(session, CHANNEL, "ignored")
    assert not store.listener.enabled
    assert not store.listener.listening(CHANNEL)


def test_a_dropped_connection_is_opened_again_at_once_then_after_growing_waits() -> None:
    delays = [reconnect_delay(failures) for failures in range(8)]
    assert delays[:4] == [0.0, notifications.RECONNECT_FIRST, 2 * notifications.RECONNECT_FIRST, 0.4]
    assert delays == sorted(delays)
    assert delays[-1] == notifications.RECONNECT_MAX
