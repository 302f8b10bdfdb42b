"""The charge point list's copy in memory (`services.directory`), on both backends: its structure is never served
behind the store's, whichever writer changed it; what changes by the second follows at its next read."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, event, insert, select, text, update

from chargenet.auth.permissions import Grant, Permissions
from chargenet.clock import ManualClock
from chargenet.domain.scopes import Scope
from chargenet.edge.records import presence_upsert
from chargenet.errors import NotFound
from chargenet.outbox import Outbox
from chargenet.services import charge_points, companies, meters, sites, station_import, stations
from chargenet.services import directory as directory_module
from chargenet.services.callers import OPERATOR, ApiApplication
from chargenet.services.charge_points import ChargePointView
from chargenet.services.directory import ChargePointDirectory
from chargenet.services.pages import PageRequest
from chargenet.store.db import Store
from chargenet.store.models import Connector, DirectoryVersion, Meter, MeterState, Site
from tests.support.tenants import Tenant

VERSION = select(DirectoryVersion.version).where(DirectoryVersion.id == 1)


@dataclass
class Fleet(Tenant):
    directory: ChargePointDirectory

    async def page(self) -> list[ChargePointView]:
        """The operator's first page, through the directory as the API asks for it."""
        shown = await charge_points.list_charge_points(
            self.store.read_statement, OPERATOR, None, PageRequest.of(), directory=self.directory
        )
        return shown.items

    async def meter(self) -> str:
        async with self.store.transaction() as session:
            made = await meters.create_meter(
                session,
                OPERATOR,
                site_id=self.site_id,
                station_id="ST-1",
                connector_id=1,
                profile="sdm630",
                unit_id=1,
                tcp="127.0.0.1:1502",
                now=self.clock.now(),
            )
        return made.id


@pytest.fixture
async def fleet(store: Store, clock: ManualClock, tmp_path: Path) -> Fleet:
    tenant = await Tenant.create(store, clock, tmp_path / "keys")
    made = Fleet(**vars(tenant), directory=ChargePointDirectory(store, clock))
    await made.station("ST-1")
    await made.directory.refresh()
    return made


def ids(views: list[ChargePointView]) -> list[str]:
    return [view.station_id for view in views]


async def test_a_station_created_after_the_copy_was_read_is_listed_at_once(fleet: Fleet) -> None:
    await fleet.station("ST-2")
    assert ids(await fleet.page()) == ["ST-1", "ST-2"]
    assert fleet.directory.missed == 1  # read from the store: the copy's structure was behind


async def test_a_deleted_station_is_gone_from_the_next_page(fleet: Fleet) -> None:
    async with fleet.store.transaction() as session:
        await stations.delete_station(session, OPERATOR, "ST-1", now=fleet.clock.now())
    assert await fleet.page() == []


async def test_each_page_is_counted_by_where_it_was_read(fleet: Fleet) -> None:
    sources: list[str] = []
    fleet.directory = ChargePointDirectory(fleet.store, fleet.clock, counted=sources.append)
    await fleet.page()
    await fleet.directory.refresh()
    await fleet.page()
    assert sources == ["store", "memory"]


async def test_one_charge_point_is_served_from_memory_as_the_store_reads_it(fleet: Fleet) -> None:
    await fleet.status("Charging")
    await fleet.directory.refresh()
    [listed] = await fleet.page()
    kept = await charge_points.get_charge_point(
        fleet.store.read_statement, OPERATOR, None, listed.id, directory=fleet.directory
    )
    read = await charge_points.get_charge_point(fleet.store.read_statement, OPERATOR, None, listed.id)
    assert kept == read and [c.status for c in kept.connectors] == ["Charging", None]
    assert (fleet.directory.served, fleet.directory.missed) == (2, 0)


@pytest.mark.postgresql_only(
    reason="on SQLite the version is read in one synchronous call, which no other page can overlap"
)
async def test_pages_asked_together_share_reads_of_the_version_each_begun_after_they_were_asked(fleet: Fleet) -> None:
    reads: list[str] = []
    event.listen(
        fleet.store.engine.sync_engine,
        "before_cursor_execute",
        lambda *args: reads.append(args[2]) if "directory_version" in args[2] else None,
    )
    reach = OPERATOR.reach(Scope.CHARGE_POINTS_READ)
    kept = await asyncio.gather(*(fleet.directory.one(reach, "ST-1") for _ in range(50)))
    assert all(k is not None and k.point is not None and k.point.id == "ST-1" for k in kept)
    assert len(reads) == 2  # the first page's, then one for the 49 asked while it ran
    await fleet.station("ST-2")  # the version moves: a page asked after the commit reads the new one
    assert await fleet.directory.one(reach, "ST-2") is None
    assert fleet.directory.missed == 1


@pytest.mark.postgresql_only(
    reason="on SQLite the version is read in one synchronous call, which no other page can overlap"
)
async def test_pages_waiting_for_a_shared_read_of_the_version_end_when_that_read_is_cancelled(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = fleet.store.read_value
    first_may_end, shared_began, never = asyncio.Event(), asyncio.Event(), asyncio.Event()
    calls = 0

    async def read_value(statement: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:  # the first page's read, ending once a second page waits for the next one
            await first_may_end.wait()
            return await real(statement)
        shared_began.set()  # the read the second page shares, held until the copy closes
        await never.wait()
        return await real(statement)

    monkeypatch.setattr(fleet.store, "read_value", read_value)
    reach = OPERATOR.reach(Scope.CHARGE_POINTS_READ)
    first = asyncio.create_task(fleet.directory.one(reach, "ST-1"))
    await asyncio.sleep(0)
    waiting = asyncio.create_task(fleet.directory.one(reach, "ST-1"))
    await asyncio.sleep(0)
    first_may_end.set()
    await first
    await shared_began.wait()
    shared = fleet.directory._version_task
    assert shared is not None
    shared.cancel()  # as when the copy closes
    ended, _ = await asyncio.wait({waiting}, timeout=10)
    assert ended == {waiting}
    assert waiting.cancelled()


async def test_one_charge_point_of_another_company_is_not_found_in_memory_either(fleet: Fleet) -> None:
    [listed] = await fleet.page()
    stranger = ApiApplication(
        "app_stranger", Permissions.of("co_other", [Grant("co_other", None, frozenset({Scope.CHARGE_POINTS_READ}))])
    )
    for unknown in (listed.id, "CP-NEVER"):
        with pytest.raises(NotFound):
            await charge_points.get_charge_point(
                fleet.store.read_statement, stranger, None, unknown, directory=fleet.directory
            )
    assert (fleet.directory.served, fleet.directory.missed) == (3, 0)


async def test_one_charge_point_created_after_the_copy_was_read_is_found_at_once(fleet: Fleet) -> None:
    await fleet.station("ST-2")
    found = await charge_points.get_charge_point(
        fleet.store.read_statement, OPERATOR, None, "ST-2", directory=fleet.directory
    )
    assert found.station_id == "ST-2"
    assert fleet.directory.missed == 1  # read from the store: the copy's structure was behind


async def test_once_read_again_the_new_structure_is_served_from_memory(fleet: Fleet) -> None:
    await fleet.station("ST-2")
    await fleet.directory.refresh()
    assert ids(await fleet.page()) == ["ST-1", "ST-2"]
    assert (fleet.directory.served, fleet.directory.missed) == (1, 0)


async def test_a_status_shows_once_the_copy_has_read_what_changed(fleet: Fleet) -> None:
    await fleet.status("Charging")
    [before] = await fleet.page()
    await fleet.directory.refresh()
    [after] = await fleet.page()
    assert [c.status for c in before.connectors] == [None, None]  # within a refresh (0.5 s) of the store
    assert [c.status for c in after.connectors] == ["Charging", None]
    assert fleet.directory.missed == 0


async def test_a_meter_reading_shows_once_the_copy_has_read_again(fleet: Fleet) -> None:
    meter_id = await fleet.meter()
    await fleet.directory.refresh()
    async with fleet.store.transaction() as session:
        await session.execute(
            insert(MeterState).values(
                meter_id=meter_id, energy_wh=1500, read_at=fleet.clock.now(), power_w=7000.0, phase="idle"
            )
        )
    await fleet.directory.refresh()
    [view] = await fleet.page()
    [meter] = view.meters
    assert meter.last_reading is not None and meter.last_reading.energy_kwh == 1.5
    assert fleet.directory.missed == 0


@pytest.fixture
async def worker(fleet: Fleet) -> AsyncIterator[ChargePointDirectory]:
    """The directory's worker, its periodic reads a minute apart on the test's clock; it has read the store
    twice, whole at its start and then what changed, so that its next whole read is not held back by the first."""
    directory = ChargePointDirectory(
        fleet.store, fleet.clock, refresh_every=60, stale_after=3600, idle_after=3600, whole_every=3600
    )
    stopping = asyncio.Event()
    task = asyncio.create_task(directory.run(stopping))
    fleet.directory = directory
    try:
        await until(lambda: directory.reads == 1)
        fleet.clock.advance(60)
        await until(lambda: directory.reads == 2)
        directory.served = directory.missed = 0
        yield directory
    finally:
        stopping.set()
        await task


async def test_a_page_that_meets_a_newer_structure_has_the_worker_read_it_without_waiting_for_its_period(
    fleet: Fleet, worker: ChargePointDirectory
) -> None:
    await fleet.station("ST-2")
    assert ids(await fleet.page()) == ["ST-1", "ST-2"]
    await until(lambda: worker.whole_reads == 2)
    assert ids(await fleet.page()) == ["ST-1", "ST-2"]
    assert (worker.served, worker.missed) == (1, 1)


async def test_structure_changing_again_and_again_is_read_whole_once_a_period(
    fleet: Fleet, worker: ChargePointDirectory
) -> None:
    await fleet.station("ST-2")
    await fleet.page()
    await until(lambda: worker.whole_reads == 2)
    await fleet.station("ST-3")
    assert ids(await fleet.page()) == ["ST-1", "ST-2", "ST-3"]  # from the store meanwhile
    await asyncio.sleep(0.2)
    assert worker.whole_reads == 2
    fleet.clock.advance(60)
    await until(lambda: worker.whole_reads == 3)
    assert ids(await fleet.page()) == ["ST-1", "ST-2", "ST-3"]
    assert worker.missed == 2


async def test_a_copy_nobody_asks_for_a_minute_is_let_go_and_read_again_when_a_page_asks(fleet: Fleet) -> None:
    directory = ChargePointDirectory(fleet.store, fleet.clock, refresh_every=1, idle_after=60)
    stopping = asyncio.Event()
    task = asyncio.create_task(directory.run(stopping))
    fleet.directory = directory
    try:
        await until(lambda: directory.reads == 1)  # read at the start, before anybody asks
        fleet.clock.advance(61)
        await until(lambda: directory.index is None)
        reads = directory.reads
        fleet.clock.advance(600)
        await asyncio.sleep(0.1)
        assert directory.reads == reads  # no reads while nobody asks
        assert ids(await fleet.page()) == ["ST-1"]  # from the store, and the copy is read again
        await until(lambda: directory.index is not None)
        assert ids(await fleet.page()) == ["ST-1"]
        assert (directory.served, directory.missed) == (1, 1)
    finally:
        stopping.set()
        await task


async def test_the_whole_store_read_a_few_charge_points_at_a_time_is_read_whole(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(2, 6):
        await fleet.station(f"ST-{n}")
    monkeypatch.setattr(directory_module, "WHOLE_READ_PART", 2)
    await fleet.directory.refresh()
    assert ids(await fleet.page()) == ["ST-1", "ST-2", "ST-3", "ST-4", "ST-5"]
    assert fleet.directory.missed == 0


async def test_a_copy_not_read_for_longer_than_it_may_be_behind_is_not_served(fleet: Fleet) -> None:
    fleet.clock.advance(2.5)  # the reader has not read for 2.5 s: the store away, the reader stuck
    await fleet.page()
    assert fleet.directory.missed == 1
    await fleet.directory.refresh()
    await fleet.page()
    assert fleet.directory.served == 1


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(5):
        while not condition():
            await asyncio.sleep(0.01)


# --- the store's version of the list's structure --------------------------------------------------------------


async def _import(fleet: Fleet) -> None:
    async with fleet.store.transaction() as session:
        await station_import.import_stations(
            session,
            OPERATOR,
            fleet.keys.secret_hasher(),
            fleet.keys.credential_cipher(),
            site_id=fleet.site_id,
            rows=station_import.read_csv("id,connectors\nIMP-1,2\nIMP-2,1\n"),
            now=fleet.clock.now(),
        )


async def _delete(fleet: Fleet) -> None:
    async with fleet.store.transaction() as session:
        await stations.delete_station(session, OPERATOR, "ST-1", now=fleet.clock.now())


async def _new_connector(fleet: Fleet) -> None:
    async with fleet.store.transaction() as session:
        await session.execute(insert(Connector).values(charge_point_id="ST-1", connector_id=3))


async def _site_moved(fleet: Fleet) -> None:
    async with fleet.store.transaction() as session:
        other = await companies.create_company(session, OPERATOR, name="Other", now=fleet.clock.now())
    async with fleet.store.transaction() as session:
        await session.execute(update(Site).where(Site.id == fleet.site_id).values(company_id=other.id))


async def _delete_empty_site(fleet: Fleet) -> None:
    async with fleet.store.transaction() as session:
        site = await sites.create_site(
            session,
            OPERATOR,
            fleet.keys.credential_cipher(),
            company_id=fleet.company_id,
            name="Empty",
            now=fleet.clock.now(),
        )
    async with fleet.store.transaction() as session:
        await session.execute(delete(Site).where(Site.id == site.id))


STRUCTURAL: dict[str, Callable[[Fleet], Awaitable[object]]] = {
    "a station without connectors created": lambda fleet: fleet.station("ST-BARE", connectors=None),
    "an empty site deleted": _delete_empty_site,
    "a station created": lambda fleet: fleet.station("ST-2"),
    "a station deleted": _delete,
    "stations imported": _import,
    "a meter added": lambda fleet: fleet.meter(),
    "a connector a station reported": _new_connector,
    "a site given to another company": _site_moved,
}


@pytest.mark.parametrize("change", list(STRUCTURAL))
async def test_a_change_of_what_the_list_is_made_of_moves_the_version(fleet: Fleet, change: str) -> None:
    before = await fleet.store.read_value(VERSION)
    await STRUCTURAL[change](fleet)
    assert await fleet.store.read_value(VERSION) != before


async def _delete_meter(fleet: Fleet, meter_id: str) -> None:
    async with fleet.store.transaction() as session:
        await meters.delete_meter(session, OPERATOR, Outbox(fleet.clock), meter_id, now=fleet.clock.now())


async def _disable_meter(fleet: Fleet, meter_id: str) -> None:
    async with fleet.store.transaction() as session:
        await meters.update_meter(session, OPERATOR, meter_id, now=fleet.clock.now(), enabled=False)


async def _move_meter(fleet: Fleet, meter_id: str) -> None:
    async with fleet.store.transaction() as session:
        await session.execute(update(Meter).where(Meter.id == meter_id).values(connector_id=2))


OF_A_METER: dict[str, Callable[[Fleet, str], Awaitable[object]]] = {
    "deleted": _delete_meter,
    "disabled": _disable_meter,
    "moved to another connector": _move_meter,
}


@pytest.mark.parametrize("change", list(OF_A_METER))
async def test_a_meter_changed_moves_the_version(fleet: Fleet, change: str) -> None:
    meter_id = await fleet.meter()  # its creation moves it too: the change is measured from after it
    before = await fleet.store.read_value(VERSION)
    await OF_A_METER[change](fleet, meter_id)
    assert await fleet.store.read_value(VERSION) != before


async def _heartbeat(fleet: Fleet) -> None:
    async with fleet.store.transaction() as session:
        values = {"station_id": "ST-1", "connected": True, "last_heartbeat_at": fleet.clock.now()}
        await session.execute(presence_upsert(fleet.store.dialect, ("connected", "last_heartbeat_at")), [values])


async def _station_key(fleet: Fleet) -> None:
    async with fleet.store.transaction() as session:
        await stations.update_station(
            session,
            OPERATOR,
            fleet.keys.secret_hasher(),
            fleet.keys.credential_cipher(),
            "ST-1",
            now=fleet.clock.now(),
            password="0123456789abcdef",
        )


SECONDLY: dict[str, Callable[[Fleet], Awaitable[object]]] = {
    "a status": lambda fleet: fleet.status("Charging"),
    "a heartbeat": _heartbeat,
    "a station's new key": _station_key,
}


@pytest.mark.parametrize("change", list(SECONDLY))
async def test_what_changes_by_the_second_leaves_the_version(fleet: Fleet, change: str) -> None:
    await fleet.status("Available")  # the connectors' statuses exist: later ones are updates
    before = await fleet.store.read_value(VERSION)
    await SECONDLY[change](fleet)
    assert await fleet.store.read_value(VERSION) == before


async def test_a_value_read_by_key_is_the_stored_one_and_none_without_a_row(fleet: Fleet) -> None:
    await fleet.station("ST-2")
    assert await fleet.store.read_value(VERSION) == await _version_in_a_transaction(fleet.store)
    assert await fleet.store.read_value(select(DirectoryVersion.version).where(DirectoryVersion.id == 2)) is None


async def _version_in_a_transaction(store: Store) -> int | None:
    async with store.read() as session:
        return await session.scalar(VERSION)


async def test_every_trigger_of_the_version_is_in_the_store(store: Store) -> None:
    migration = importlib.import_module("chargenet.store.migrations.versions.0018_directory_version")
    if store.dialect == "postgresql":
        found = "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE 'directory_%'"
    else:
        found = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'directory_%'"
    async with store.read() as session:
        names = set(await session.scalars(text(found)))
    assert names == {name for name, _, _ in migration._triggers()}


async def test_a_heartbeat_committed_long_after_its_instant_shows_within_the_sweeps_round_without_a_whole_read(
    fleet: Fleet,
) -> None:
    await fleet.station("ST-2")
    fleet.directory = ChargePointDirectory(fleet.store, fleet.clock, whole_every=60)
    await _heartbeat(fleet)  # ST-1's: the newest link instant the copy has seen
    await fleet.directory.refresh()
    fleet.clock.advance(3)  # past the overlap: the follow reads only what is newer than that instant
    late = fleet.clock.now() - timedelta(seconds=30)
    async with fleet.store.transaction() as session:
        values = {"station_id": "ST-2", "connected": True, "last_heartbeat_at": late}
        await session.execute(presence_upsert(fleet.store.dialect, ("connected", "last_heartbeat_at")), [values])
    await fleet.directory.refresh()
    assert [view.last_heartbeat for view in await fleet.page()][1] is None  # the follow cannot see it
    fleet.clock.advance(60)  # the sweep's round: every charge point read again, a part with each follow read
    await fleet.directory.refresh()
    assert [view.last_heartbeat for view in await fleet.page()][1] == late
    assert fleet.directory.whole_reads == 1  # the start's


@pytest.mark.expected_traceback("ConnectionError: the store is away")
async def test_a_version_that_cannot_be_read_leaves_the_page_to_the_store(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def failing(statement: object) -> None:
        raise ConnectionError("the store is away")

    monkeypatch.setattr(fleet.store, "read_value", failing)
    assert ids(await fleet.page()) == ["ST-1"]
    assert fleet.directory.missed == 1
