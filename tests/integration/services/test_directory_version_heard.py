"""The charge point directory on PostgreSQL while the process listens: pages take the store's version as its
notifications tell it, without a read a page; this process's own commits are in its very next page, another
process's once notified; a listening connection killed (as a restart of the server kills them all) is opened
again and the version read until it listens, the follow read's connection too; and it is closed when the process
stops."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from sqlalchemy import text

from chargenet.clock import ManualClock
from chargenet.domain.scopes import Scope
from chargenet.services.callers import OPERATOR
from chargenet.services.charge_points import Kept
from chargenet.services.directory import ChargePointDirectory
from chargenet.store.db import Store
from chargenet.store.notify import APPLICATION_NAME, DIRECTORY
from tests.support.processes import WITHIN, eventually, results_of, two_stores
from tests.support.tenants import Tenant

REACH = OPERATOR.reach(Scope.CHARGE_POINTS_READ)


@dataclasses.dataclass
class Served:
    """A serving process (its store, listener and directory running) and another process on the same store."""

    serving: Tenant
    other: Tenant
    directory: ChargePointDirectory
    version_reads: list[object]  # the directory's reads of the version, one entry each

    async def one(self, charge_point_id: str) -> Kept | None:
        return await self.directory.one(REACH, charge_point_id)

    async def until_shown(self, charge_point_id: str) -> None:
        """Pages until one no longer answers from a copy without `charge_point_id` (the copy behind: None, the store
        answers; or read again: found)."""
        async with asyncio.timeout(WITHIN):
            while (kept := await self.one(charge_point_id)) is not None and kept.point is None:
                await asyncio.sleep(0.01)

    async def until_served(self, charge_point_id: str) -> None:
        """Pages until one is served from the copy, with `charge_point_id`."""
        async with asyncio.timeout(WITHIN):
            while (kept := await self.one(charge_point_id)) is None or kept.point is None:
                await asyncio.sleep(0.01)


@asynccontextmanager
async def served(clock: ManualClock, keys_dir: Path) -> AsyncIterator[tuple[Served, Callable[[], Awaitable[None]]]]:
    """The two processes, the serving one's workers running; with the function that stops them."""
    async with two_stores(clock) as (serving, other):
        tenant = await Tenant.create(serving, clock, keys_dir)
        await tenant.station("ST-1")
        directory = ChargePointDirectory(serving, clock)
        made = Served(tenant, dataclasses.replace(tenant, store=other), directory, results_of(serving, "read_value"))
        stopping = asyncio.Event()
        workers = [asyncio.create_task(serving.listener.run(stopping)), asyncio.create_task(directory.run(stopping))]

        async def stop() -> None:
            stopping.set()
            await asyncio.gather(*workers)

        try:
            await eventually(lambda: serving.listener.listening(DIRECTORY) and directory.index is not None)
            yield made, stop
        finally:
            await stop()


async def listening_connections(store: Store) -> int:
    """The listening connections open on the store's database, whoever's."""
    async with store.engine.connect() as connection:
        found = await connection.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = :name"
            ),
            {"name": APPLICATION_NAME},
        )
    return int(found or 0)


async def test_pages_take_the_version_heard_and_miss_no_change_of_this_process_or_another(
    clock: ManualClock, tmp_path: Path
) -> None:
    async with served(clock, tmp_path / "keys") as (process, _stop):
        kept = await process.one("ST-1")  # the first page since the LISTEN took effect reads the version: the base
        assert kept is not None and kept.point is not None and kept.point.id == "ST-1"
        for _ in range(5):
            assert await process.one("ST-1") == kept
        assert len(process.version_reads) == 1

        async with process.serving.store.engine.connect() as connection:  # each pooled connection listens too
            assert (await connection.scalars(text("SELECT pg_listening_channels()"))).all() == [DIRECTORY]
        await process.serving.station("ST-2")  # this process's commit: heard before it returned
        assert await process.one("ST-2") is None  # not a 404 from the copy: the store answers
        await process.other.station("ST-3")  # another process's: heard once its notification arrives
        await process.until_shown("ST-3")
        assert len(process.version_reads) == 1


@pytest.mark.expected_traceback()  # the killed connections' errors, whichever the pages and reads meet first
async def test_a_listening_connection_killed_is_opened_again_and_the_version_read_until_it_listens(
    clock: ManualClock, tmp_path: Path
) -> None:
    async with served(clock, tmp_path / "keys") as (process, stop):
        serving, other = process.serving.store, process.other.store
        await process.one("ST-1")
        async with other.engine.connect() as connection:  # as a restart of the server: every connection of the
            await connection.execute(  # serving process ends, its pooled ones and its listening one
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
        await eventually(lambda: serving.listener.connections == 2 and serving.listener.listening(DIRECTORY))
        reads = len(process.version_reads)
        await process.until_served("ST-1")  # the pool's dead connections fail a page or two, left to the store
        assert len(process.version_reads) > reads  # the version read anew: what was notified meanwhile was missed

        reads = process.directory.reads
        async with asyncio.timeout(WITHIN):
            while process.directory.reads == reads:  # the follow read's own connection, dropped too, opened anew
                clock.advance(process.directory.refresh_every)
                await asyncio.sleep(0.01)

        reads = len(process.version_reads)
        await process.other.station("ST-2")
        await process.until_shown("ST-2")
        assert len(process.version_reads) == reads  # heard again

        await stop()
        async with asyncio.timeout(WITHIN):
            while await listening_connections(other):
                await asyncio.sleep(0.01)
