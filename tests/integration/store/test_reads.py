"""`Store.read()`: a unit of work that only reads, on both backends; on SQLite it neither waits for a writer nor
can write. And `Store.write_statement`, one statement committed by itself."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import asyncpg
import pytest
from sqlalchemy import Connection, insert, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from chargenet.store.db import Store
from chargenet.store.models import StoreSetting


async def keys(store: Store) -> list[str]:
    async with store.read() as session:
        return sorted(await session.scalars(select(StoreSetting.key).where(StoreSetting.key.like("r-%"))))


async def test_a_read_sees_what_was_committed(store: Store) -> None:
    async with store.transaction() as session:
        await session.execute(insert(StoreSetting).values(key="r-1", value="v"))
    assert await keys(store) == ["r-1"]


async def test_a_read_does_not_wait_for_an_open_write_and_does_not_see_it(store: Store) -> None:
    async with store.transaction() as session:
        await session.execute(insert(StoreSetting).values(key="r-uncommitted", value="v"))
        # Bounded only so that a read that waited for the writer fails here instead of hanging the suite.
        assert await asyncio.wait_for(keys(store), timeout=5) == []
    assert await keys(store) == ["r-uncommitted"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_write_inside_a_read_is_refused_on_sqlite(store: Store) -> None:
    with pytest.raises(OperationalError, match="readonly"):
        async with store.read() as session:
            await session.execute(insert(StoreSetting).values(key="r-written", value="v"))
    assert await keys(store) == []


@pytest.mark.parametrize("unit", ["read", "transaction"])
async def test_a_case_blind_search_folds_every_letter_not_only_ascii(store: Store, unit: str) -> None:
    async with store.transaction() as session:
        await session.execute(insert(StoreSetting).values(key="r-Über-Ärger", value="v"))
    async with getattr(store, unit)() as session:
        found = await session.scalars(
            select(StoreSetting.key).where(StoreSetting.key.like("r-%"), StoreSetting.key.ilike("%über-är%"))
        )
        assert list(found) == ["r-Über-Ärger"]


def _keys_now(connection: Connection) -> list[str]:
    return sorted(connection.scalars(select(StoreSetting.key).where(StoreSetting.key.like("r-%"))))


async def test_a_read_at_once_sees_what_was_committed(store: Store) -> None:
    async with store.transaction() as session:
        await session.execute(insert(StoreSetting).values(key="r-once", value="v"))
    assert await store.read_at_once(_keys_now) == ["r-once"]


async def test_a_read_at_once_does_not_wait_for_an_open_write_and_does_not_see_it(store: Store) -> None:
    async with store.transaction() as session:
        await session.execute(insert(StoreSetting).values(key="r-open", value="v"))
        # On SQLite it runs on this very thread: had it waited for the writer, it would wait out the busy timeout
        # and fail, since the writer cannot go on meanwhile.
        assert await asyncio.wait_for(store.read_at_once(_keys_now), timeout=5) == []
    assert await store.read_at_once(_keys_now) == ["r-open"]


def _commit_elsewhere(store: Store, key: str) -> None:
    """Commit a row through a connection of its own, blocking: called from inside a unit's statements."""
    url = make_url(store.url)
    if url.get_backend_name() == "sqlite":
        assert url.database
        with contextlib.closing(sqlite3.connect(url.database, isolation_level=None)) as writer:
            writer.execute("INSERT INTO store_settings (key, value) VALUES (?, 'v')", (key,))
        return

    async def write() -> None:
        writer = await asyncpg.connect(url.set(drivername="postgresql").render_as_string(hide_password=False))
        try:
            await writer.execute("INSERT INTO store_settings (key, value) VALUES ($1, 'v')", key)
        finally:
            await writer.close()

    # This thread's loop is busy running the unit: the writer gets a loop of its own.
    with ThreadPoolExecutor(1) as other:
        other.submit(asyncio.run, write()).result()


async def test_a_read_at_once_sees_one_snapshot_across_its_statements(store: Store) -> None:
    def twice(connection: Connection) -> tuple[list[str], list[str]]:
        first = _keys_now(connection)
        _commit_elsewhere(store, "r-between")  # between the two statements of the unit
        return first, _keys_now(connection)

    assert await store.read_at_once(twice) == ([], [])
    assert await store.read_at_once(_keys_now) == ["r-between"]


async def test_a_read_statement_sees_what_was_committed(store: Store) -> None:
    async with store.transaction() as session:
        await session.execute(insert(StoreSetting).values(key="r-statement", value="v"))
    assert await store.read_statement(_keys_now) == ["r-statement"]


async def test_a_read_statement_does_not_wait_for_an_open_write_and_does_not_see_it(store: Store) -> None:
    async with store.transaction() as session:
        await session.execute(insert(StoreSetting).values(key="r-open-statement", value="v"))
        assert await asyncio.wait_for(store.read_statement(_keys_now), timeout=5) == []
    assert await store.read_statement(_keys_now) == ["r-open-statement"]


async def test_a_write_statement_is_committed_by_itself_and_answers_its_rows(store: Store) -> None:
    def write(connection: Connection) -> int:
        return connection.execute(insert(StoreSetting).values(key="r-written", value="v")).rowcount

    assert await store.write_statement(write) == 1
    assert await store.read_statement(_keys_now) == ["r-written"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_write_inside_a_read_at_once_is_refused_on_sqlite(store: Store) -> None:

    def write(connection: Connection) -> None:
        connection.execute(insert(StoreSetting).values(key="r-written-once", value="v"))

    with pytest.raises(OperationalError, match="readonly"):
        await store.read_at_once(write)
    assert await keys(store) == []
