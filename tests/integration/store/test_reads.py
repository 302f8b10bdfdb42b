"""`Store.read()`: a unit of work that only reads, on both backends; on SQLite it neither waits for a writer nor
can write."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import insert, select
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


async def test_a_write_inside_a_read_is_refused_on_sqlite(store: Store) -> None:
    if store.dialect != "sqlite":
        pytest.skip("PostgreSQL's reads are ordinary transactions")
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
