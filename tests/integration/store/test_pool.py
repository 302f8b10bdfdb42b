"""PostgreSQL's pooled connections: checked with a ping on checkout only after they rested (`PING_AFTER_IDLE`), and
never more of them than the pool's size."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeoutError
from sqlalchemy.ext.asyncio import AsyncConnection

from chargenet.clock import ManualClock
from chargenet.config import load_settings
from chargenet.context import open_store
from chargenet.store.db import PING_AFTER_IDLE, Store

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def pooled(database_url: str, clock: ManualClock) -> AsyncIterator[Store]:
    store = Store(database_url, clock=clock)
    try:
        yield store
    finally:
        await store.dispose()


def _backend(connection: Connection) -> int:
    return int(connection.execute(text("SELECT pg_backend_pid()")).scalar_one())


async def _end_backend(database_url: str, pid: int) -> None:
    other = Store(database_url)
    try:
        async with other.transaction() as session:
            await session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        await other.dispose()


async def test_a_connection_that_rested_is_pinged_and_replaced_if_its_server_end_is_gone(
    pooled: Store, database_url: str, clock: ManualClock
) -> None:
    gone = await pooled.read_statement(_backend)
    await _end_backend(database_url, gone)
    clock.advance(PING_AFTER_IDLE)
    assert await pooled.read_statement(_backend) != gone


async def test_a_connection_in_steady_use_is_not_pinged_so_a_broken_one_fails_one_unit_only(
    pooled: Store, database_url: str, clock: ManualClock
) -> None:
    gone = await pooled.read_statement(_backend)
    await _end_backend(database_url, gone)
    clock.advance(PING_AFTER_IDLE - 1)
    with pytest.raises(DBAPIError):
        await pooled.read_statement(_backend)
    # The disconnect emptied the pool: the next unit connects afresh.
    assert await pooled.read_statement(_backend) != gone


async def test_a_connection_whose_rest_spans_the_clock_set_back_is_pinged(
    pooled: Store, database_url: str, clock: ManualClock
) -> None:
    gone = await pooled.read_statement(_backend)
    await _end_backend(database_url, gone)
    clock.advance(-3600)
    assert await pooled.read_statement(_backend) != gone


async def test_past_its_size_the_pool_makes_a_unit_wait_rather_than_open_a_connection(database_url: str) -> None:
    store = Store(database_url, pool_size=2, pool_timeout=0.05)
    try:
        async with store.engine.connect() as first, store.engine.connect() as second:
            held = {await _pid(first), await _pid(second)}
            with pytest.raises(SQLAlchemyTimeoutError):
                await store.read_statement(_backend)
        # Given back, the pool's own connections serve the next unit.
        assert await store.read_statement(_backend) in held
    finally:
        await store.dispose()


async def _pid(connection: AsyncConnection) -> int:
    return int((await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def test_the_pool_size_setting_sizes_the_pool(database_url: str, tmp_path: Path) -> None:
    settings = load_settings({"data_dir": str(tmp_path), "database_url": database_url, "database_pool_size": "3"}, {})
    context = await open_store(settings)
    try:
        assert context.store.engine.sync_engine.pool.size() == 3  # type: ignore[attr-defined]
    finally:
        await context.close()
