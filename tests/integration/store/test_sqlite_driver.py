"""The SQLite writer's connection (store/sqlite_driver.py): a unit's statements run on the event loop's thread; what
can wait (a BEGIN while another process holds the write lock, a COMMIT's sync to disk) waits on aiosqlite's thread,
so the event loop goes on meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import delete, insert, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.store.db import LONG, SQLITE_BUSY_TIMEOUT_MS, Store
from chargenet.store.models import StoreSetting
from chargenet.store.sqlite_driver import MANY_ROWS, LoopConnection, loop_connector

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

Traced = list[tuple[str, bool]]  # a statement, and whether it ran on the event loop's thread


def _trace_on(connection: LoopConnection, traced: Traced) -> None:
    """Note each statement `connection` runs from now on, and whether it runs on this (the event loop's) thread."""
    loop_thread = threading.get_ident()

    def note(sql: str) -> None:
        traced.append((sql.split()[0].upper(), threading.get_ident() == loop_thread))

    connection._conn.set_trace_callback(note)


async def _trace(session: AsyncSession, traced: Traced) -> None:
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    driver = raw.driver_connection
    assert isinstance(driver, LoopConnection)
    _trace_on(driver, traced)


def _database(store: Store) -> str:
    database = make_url(store.url).database
    assert database
    return database


@contextlib.contextmanager
def _write_lock_held(database: str) -> Iterator[sqlite3.Connection]:
    """Another process's writer, holding SQLite's write lock until the block ends."""
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield holder
    finally:
        holder.execute("COMMIT")
        holder.close()


async def test_a_units_statements_run_on_the_event_loops_thread_and_its_commit_on_another(store: Store) -> None:
    traced: Traced = []
    async with store.transaction() as session:
        await _trace(session, traced)
        await session.execute(insert(StoreSetting).values(key="d-1", value="v"))
        await session.scalar(select(StoreSetting.value).where(StoreSetting.key == "d-1"))
    assert ("INSERT", True) in traced
    assert ("SELECT", True) in traced
    assert ("COMMIT", False) in traced


async def test_a_begin_waits_off_the_event_loop_while_another_process_holds_the_write_lock(store: Store) -> None:
    async with store.transaction() as session:  # the writer's connection is open and pooled
        await session.execute(insert(StoreSetting).values(key="d-first", value="v"))

    async def write() -> int:
        async with store.transaction() as session:
            await session.execute(insert(StoreSetting).values(key="d-waited", value="v"))
            return int((await session.execute(text("PRAGMA busy_timeout"))).scalar_one())

    with _write_lock_held(_database(store)):
        writing = asyncio.create_task(write())
        await asyncio.sleep(0.05)  # returns while the unit waits for the lock: the loop was not held
        assert not writing.done()
    # The unit that waited has the busy timeout it was set up with, not the 0 of the attempt on the loop.
    assert await asyncio.wait_for(writing, timeout=5) == SQLITE_BUSY_TIMEOUT_MS
    async with store.read() as session:
        assert await session.scalar(select(StoreSetting.value).where(StoreSetting.key == "d-waited")) == "v"


async def test_a_call_made_while_a_cancelled_one_runs_in_the_thread_runs_there_after_it(store: Store) -> None:
    database = _database(store)
    connection = await loop_connector(database, busy_timeout_ms=5000)()
    traced: Traced = []
    _trace_on(connection, traced)
    try:
        with _write_lock_held(database):
            begin = asyncio.create_task(connection.execute("BEGIN IMMEDIATE"))
            await asyncio.sleep(0.05)  # the BEGIN waits for the lock in the thread
            begin.cancel()
            with pytest.raises(asyncio.CancelledError):
                await begin
            rollback = asyncio.create_task(connection.rollback())
            await asyncio.sleep(0.05)
            assert not rollback.done()  # behind the BEGIN, which still waits
        await asyncio.wait_for(rollback, timeout=5)
        await connection.execute("SELECT 1")
    finally:
        await connection.close()
    statements = [entry for entry in traced if entry[0] != "PRAGMA"]
    # Tried on the loop without waiting first, then waited for in the thread, where the rollback follows it.
    assert statements == [("BEGIN", True), ("BEGIN", False), ("ROLLBACK", False), ("SELECT", True)]


async def test_a_batch_of_many_rows_runs_in_the_thread_and_a_small_one_on_the_loop(store: Store) -> None:
    traced: Traced = []
    async with store.transaction() as session:
        await _trace(session, traced)
        await session.execute(insert(StoreSetting), [{"key": f"d-few-{n}", "value": "v"} for n in range(3)])
        await session.execute(insert(StoreSetting), [{"key": f"d-many-{n}", "value": "v"} for n in range(MANY_ROWS)])
    inserts = [on_loop for statement, on_loop in traced if statement == "INSERT"]
    assert inserts == [True] * 3 + [False] * MANY_ROWS


async def test_a_statement_that_may_run_long_runs_in_the_thread_and_the_next_on_the_loop(store: Store) -> None:
    traced: Traced = []
    async with store.transaction() as session:
        await _trace(session, traced)
        await session.execute(delete(StoreSetting).where(StoreSetting.key.like("d-%")).execution_options(**LONG))
        await session.execute(delete(StoreSetting).where(StoreSetting.key.like("e-%")))
    assert [entry for entry in traced if entry[0] == "DELETE"] == [("DELETE", False), ("DELETE", True)]


async def test_a_timeout_in_the_url_sets_the_writers_busy_timeout(store: Store) -> None:
    timed = Store(f"sqlite+aiosqlite:///{_database(store)}?timeout=2.5")
    try:
        async with timed.transaction() as session:
            assert (await session.execute(text("PRAGMA busy_timeout"))).scalar_one() == 2500
    finally:
        await timed.dispose()
