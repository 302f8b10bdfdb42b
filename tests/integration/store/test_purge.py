"""`purge_in_batches`: old rows deleted a batch per transaction, on both backends, whatever the table's key."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import cast

from sqlalchemy import Table, insert, select

from chargenet.store.db import Store
from chargenet.store.models import MeterSample, StoreSetting
from chargenet.store.purge import purge_in_batches

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def test_matching_rows_go_in_transactions_of_at_most_a_batch_and_the_rest_stay(store: Store) -> None:
    settings = cast(Table, StoreSetting.__table__)
    async with store.transaction() as session:
        await session.execute(insert(settings), [{"key": f"p-old-{n}", "value": "v"} for n in range(5)])
        await session.execute(insert(settings), [{"key": "p-kept", "value": "v"}])
    units: list[float] = []
    store.time_units(transaction=units.append, read=lambda _: None)
    assert await purge_in_batches(store, settings, settings.c.key.like("p-old-%"), batch=2) == 5
    assert len(units) == 3  # 2, 2 and 1 rows
    async with store.read() as session:
        assert list(await session.scalars(select(StoreSetting.key).where(StoreSetting.key.like("p-%")))) == ["p-kept"]


async def test_a_table_keyed_by_several_columns_is_purged_a_batch_at_a_time(store: Store) -> None:
    samples = cast(Table, MeterSample.__table__)
    rows = [
        {"transaction_id": 1, "station_id": "CS-1", "at": T0 + timedelta(minutes=n), "energy_wh": n} for n in range(5)
    ]
    async with store.transaction() as session:
        await session.execute(insert(samples), rows)
    assert await purge_in_batches(store, samples, samples.c.at < T0 + timedelta(minutes=3), batch=2) == 3
    async with store.read() as session:
        assert list(await session.scalars(select(MeterSample.energy_wh).order_by(MeterSample.at))) == [3, 4]
