"""Store notifications: news announced in a transaction wakes waiters when it commits, in this process on both
backends and in other processes on PostgreSQL; a rolled-back transaction announces nothing."""

from __future__ import annotations

import asyncio
import time

import pytest

from chargenet.store.db import Store

CHANNEL = "chargenet_test_news"


async def announce(store: Store, *, commit: bool = True) -> None:
    class Undo(Exception):
        pass

    try:
        async with store.transaction() as session:
            await store.notifications.notify(session, CHANNEL)
            if not commit:
                raise Undo()
    except Undo:
        pass


async def test_news_committed_wakes_a_waiter_of_the_same_process(store: Store) -> None:
    mark = store.notifications.mark(CHANNEL)
    waiting = asyncio.create_task(store.notifications.wait(CHANNEL, 30, since=mark))
    await announce(store)
    assert await asyncio.wait_for(waiting, 5) == mark + 1


async def test_news_from_before_the_wait_but_after_the_mark_is_not_missed(store: Store) -> None:
    mark = store.notifications.mark(CHANNEL)
    await announce(store)
    started = time.monotonic()
    assert await store.notifications.wait(CHANNEL, 30, since=mark) == mark + 1
    assert time.monotonic() - started < 5


async def listening(store: Store) -> int:
    """The channel's mark once the store listens (PostgreSQL): the listening connection's start wakes every
    waiter once, for what it could not hear before."""
    mark = store.notifications.mark(CHANNEL)
    for _ in range(100):
        mark = await store.notifications.wait(CHANNEL, 0.05, since=mark)
        if store.dialect != "postgresql" or store.notifications.live:
            return store.notifications.mark(CHANNEL)
    raise AssertionError("the store never listened")


async def test_a_rolled_back_transaction_announces_nothing(store: Store) -> None:
    mark = await listening(store)
    await announce(store, commit=False)
    assert await store.notifications.wait(CHANNEL, 0.2, since=mark) == mark


async def test_news_reaches_another_process_sharing_postgresql(store: Store, database_url: str) -> None:
    if store.dialect != "postgresql":
        pytest.skip("SQLite cannot signal another process; its waiters keep their own short interval")
    other = Store(database_url)  # another process's view of the same database
    try:
        mark = await listening(other)
        waiting = asyncio.create_task(other.notifications.wait(CHANNEL, 30, since=mark))
        await asyncio.sleep(0.1)
        await announce(store)
        assert await asyncio.wait_for(waiting, 5) > mark
    finally:
        await other.dispose()
