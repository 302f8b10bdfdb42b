from __future__ import annotations

from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.edge.messagelog import MessageLog
from chargenet.store.db import Store
from chargenet.store.models import OcppMessage


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
