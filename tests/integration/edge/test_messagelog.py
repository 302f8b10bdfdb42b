from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import insert, select

from chargenet.clock import ManualClock
from chargenet.edge import records
from chargenet.edge.messagelog import MessageLog
from chargenet.keys import KeyStore
from chargenet.store.db import Store
from chargenet.store.models import OcppMessage, StationPresence
from tests.factories import make_tenant


async def frames(store: Store) -> list[str]:
    async with store.transaction() as session:
        return list(await session.scalars(select(OcppMessage.frame).order_by(OcppMessage.id)))


async def test_frames_are_written_in_order_by_the_next_run(store: Store, clock: ManualClock) -> None:
    log = MessageLog(store, clock)
    logger = log.logger("CS-1", "station")
    logger("in", '[2,"a","Heartbeat",{}]')
    logger("out", '[3,"a",{}]')
    assert await frames(store) == []
    await log.run_once()
    assert await frames(store) == ['[2,"a","Heartbeat",{}]', '[3,"a",{}]']


async def test_frames_older_than_30_days_are_purged(store: Store, clock: ManualClock) -> None:
    log = MessageLog(store, clock)
    log.add("CS-1", "station", "in", "old")
    await log.run_once()
    clock.advance(31 * 86400)
    log.add("CS-1", "station", "in", "new")
    await log.run_once()
    assert await frames(store) == ["new"]


async def test_boot_recorded_while_another_transaction_writes_the_presence_row_keeps_both(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    await make_tenant(store, KeyStore(tmp_path), clock.now(), station_id="CS-1")

    async def boot() -> None:
        async with store.transaction() as session:
            payload = {"chargePointVendor": "chargenet", "chargePointModel": "SimStation"}
            await records.record_boot(session, "CS-1", payload, clock.now())

    # The message log writes the row when the station connects, from its own transaction: still uncommitted when
    # the boot writes, the boot must wait for it rather than lose a unique-key race (on SQLite the boot's
    # transaction simply waits its turn).
    async with store.transaction() as session:
        await session.execute(insert(StationPresence).values(station_id="CS-1", connected=True))
        booting = asyncio.create_task(boot())
        await asyncio.sleep(0.3)
    await booting
    async with store.transaction() as session:
        row = await session.get(StationPresence, "CS-1")
        assert row is not None and row.connected and row.model == "SimStation"
