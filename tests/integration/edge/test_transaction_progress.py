"""A running 2.0.1 transaction's progress written behind its answers (`records.write_progress`), on both
backends: a batch's progress in one statement, in the order noted."""

from __future__ import annotations

from pathlib import Path

from chargenet.clock import ManualClock
from chargenet.edge import records
from chargenet.keys import KeyStore
from chargenet.store.db import Store
from chargenet.store.models import EdgeTransaction
from tests.factories import make_tenant


async def running(store: Store, clock: ManualClock, tmp_path: Path, *names: str) -> list[int]:
    tenant = await make_tenant(store, KeyStore(tmp_path), clock.now(), station_id="CS-1")
    async with store.transaction() as session:
        rows = [
            EdgeTransaction(
                station_id="CS-1",
                site_id=tenant.site_id,
                charge_point_id="CS-1",
                connector_id=1,
                ocpp_connector_id=1,
                id_tag="TAG",
                started_at=clock.now(),
                meter_start=0,
                created_at=clock.now(),
                station_transaction_id=name,
                seq_no=0,
                meter_last=0,
            )
            for name in names
        ]
        session.add_all(rows)
        await session.flush()
        return [row.id for row in rows]


async def progress_of(store: Store, transaction_id: int) -> tuple[int | None, int | None]:
    async with store.transaction() as session:
        row = await session.get(EdgeTransaction, transaction_id)
        assert row is not None
        return row.seq_no, row.meter_last


async def test_a_batch_of_progress_keeps_the_latest_seq_no_and_reading_of_each_transaction(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    first, second = await running(store, clock, tmp_path, "TX-1", "TX-2")
    async with store.transaction() as session:
        await records.write_progress(
            session,
            [
                records.Progress(first, 1, 100),
                records.Progress(second, 1, 50),
                records.Progress(first, 2, 200),
                records.Progress(first, 3, None),  # no reading: the one before stays
                records.Progress(second, 0, 999),  # older than what is written: not news
            ],
        )
    assert await progress_of(store, first) == (3, 200)
    assert await progress_of(store, second) == (1, 50)


async def test_progress_never_writes_over_a_stopped_transaction(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    [transaction_id] = await running(store, clock, tmp_path, "TX-1")
    async with store.transaction() as session:
        row = await session.get(EdgeTransaction, transaction_id)
        assert row is not None
        row.stopped_at, row.seq_no, row.meter_stop, row.meter_last = clock.now(), 5, 500, 500
    async with store.transaction() as session:
        await records.write_progress(session, [records.Progress(transaction_id, 6, 600)])
    assert await progress_of(store, transaction_id) == (5, 500)
