"""The charge points list (`services.charge_points`) as one statement per shape of reach, and its views reused only
while what they show is unchanged."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import update

from chargenet.auth.permissions import Grant, Permissions
from chargenet.clock import ManualClock
from chargenet.domain.scopes import Scope
from chargenet.errors import NotFound
from chargenet.keys import KeyStore
from chargenet.ports import StationCommands
from chargenet.services import charge_points, companies, meters, sites
from chargenet.services.callers import OPERATOR, ApiApplication, Caller
from chargenet.services.charge_points import ChargePointView
from chargenet.services.directory import ChargePointDirectory
from chargenet.services.pages import Page, PageRequest, every_page
from chargenet.store.db import Store
from chargenet.store.models import ChargePoint, Connector, Station, StationPresence
from tests.factories import add_station


class Network:
    """Two companies; the first has sites A (stations A-1, A-2) and B (station B-1), the second site C (C-1)."""

    def __init__(self, first: str, second: str, site_a: str, site_b: str, site_c: str) -> None:
        self.first, self.second = first, second
        self.site_a, self.site_b, self.site_c = site_a, site_b, site_c


@pytest.fixture
async def network(store: Store, clock: ManualClock, tmp_path: Path) -> Network:
    keys = KeyStore(tmp_path / "keys")
    now = clock.now()
    async with store.transaction() as session:
        first = await companies.create_company(session, OPERATOR, name="First", now=now)
        second = await companies.create_company(session, OPERATOR, name="Second", now=now)
        made = {}
        for name, company in (("A", first), ("B", first), ("C", second)):
            made[name] = await sites.create_site(
                session, OPERATOR, keys.credential_cipher(), company_id=company.id, name=name, now=now
            )
        for station_id, site in (("A-1", "A"), ("A-2", "A"), ("B-1", "B"), ("C-1", "C")):
            await add_station(session, keys, made[site].id, station_id, now, connectors=2)
    return Network(first.id, second.id, made["A"].id, made["B"].id, made["C"].id)


def caller(company_id: str, *sites: str | None) -> ApiApplication:
    grants = [Grant(company_id, site, frozenset({Scope.CHARGE_POINTS_READ})) for site in sites]
    return ApiApplication("app", Permissions.of(company_id, grants))


class Lister:
    """Lists as the API does: from the store, or from a directory caught up with it (`services.directory`), each
    page then served from memory."""

    def __init__(self, store: Store, directory: ChargePointDirectory | None) -> None:
        self.store = store
        self.directory = directory

    async def __call__(
        self,
        who: Caller,
        stations: StationCommands | None = None,
        page: PageRequest | None = None,
        *,
        site_id: str | None = None,
    ) -> Page[ChargePointView]:
        missed = 0
        if self.directory is not None:
            await self.directory.refresh()
            missed = self.directory.missed
        shown = await charge_points.list_charge_points(
            self.store.read_statement,
            who,
            stations,
            page or PageRequest.of(),
            site_id=site_id,
            directory=self.directory,
        )
        if self.directory is not None:
            assert self.directory.missed == missed, "served from the store, not from the directory"
        return shown


@pytest.fixture(params=["store", "directory"])
def lister(request: pytest.FixtureRequest, store: Store, clock: ManualClock) -> Lister:
    return Lister(store, ChargePointDirectory(store, clock) if request.param == "directory" else None)


async def listed(lister: Lister, who: Caller, *, site_id: str | None = None) -> list[str]:
    views = await every_page(lambda page: lister(who, None, page, site_id=site_id))
    return [view.station_id for view in views]


async def test_a_company_grant_lists_every_charge_point_of_its_sites_only(
    lister: Lister, store: Store, network: Network
) -> None:
    assert await listed(lister, caller(network.first, None)) == ["A-1", "A-2", "B-1"]


async def test_a_site_grant_lists_that_sites_charge_points_only(lister: Lister, store: Store, network: Network) -> None:
    assert await listed(lister, caller(network.first, network.site_b)) == ["B-1"]


async def test_grants_on_two_sites_list_both(lister: Lister, store: Store, network: Network) -> None:
    assert await listed(lister, caller(network.first, network.site_a, network.site_b)) == ["A-1", "A-2", "B-1"]


async def test_the_operator_lists_every_company(lister: Lister, store: Store, network: Network) -> None:
    views = await every_page(lambda page: lister(OPERATOR, None, page))
    assert [view.station_id for view in views] == ["A-1", "A-2", "B-1", "C-1"]


async def test_a_site_filter_outside_the_callers_reach_lists_nothing(
    lister: Lister, store: Store, network: Network
) -> None:
    assert await listed(lister, caller(network.first, None), site_id=network.site_c) == []
    assert await listed(lister, caller(network.first, None), site_id=network.site_a) == ["A-1", "A-2"]


async def test_pages_of_one_follow_the_cursor_to_the_end(lister: Lister, store: Store, network: Network) -> None:
    who = caller(network.first, None)
    seen = []
    page = PageRequest.of(limit=1)
    while True:
        shown = await lister(who, None, page)
        seen += [view.station_id for view in shown.items]
        if shown.next is None:
            break
        page = PageRequest.of(limit=1, cursor=shown.next)
    assert seen == ["A-1", "A-2", "B-1"]


async def test_each_charge_point_shows_its_own_connectors_in_order(
    lister: Lister, store: Store, network: Network
) -> None:
    page = await lister(caller(network.first, None), None, PageRequest.of())
    for view in page.items:
        assert [c.connector_id for c in view.connectors] == [1, 2]


async def test_a_changed_status_shows_on_the_next_page_read(
    lister: Lister, store: Store, network: Network, clock: ManualClock
) -> None:
    who = caller(network.first, network.site_b)
    [before] = (await lister(who, None, PageRequest.of())).items
    await set_status(store, before.id, "Charging", clock.now())
    [after] = (await lister(who, None, PageRequest.of())).items
    assert [c.status for c in before.connectors] == [None, None]
    assert [c.status for c in after.connectors] == ["Charging", None]


async def test_an_unchanged_charge_point_is_shown_by_the_same_view(
    lister: Lister, store: Store, network: Network
) -> None:
    who = caller(network.first, network.site_b)
    [first] = (await lister(who, None, PageRequest.of())).items
    [again] = (await lister(who, None, PageRequest.of())).items
    assert again is first


async def test_a_heartbeat_shows_on_the_next_page_read(
    lister: Lister, store: Store, network: Network, clock: ManualClock
) -> None:
    who = caller(network.first, network.site_b)
    [before] = (await lister(who, None, PageRequest.of())).items
    async with store.transaction() as session:
        session.add(StationPresence(station_id="B-1", connected=True, last_heartbeat_at=clock.now()))
    [after] = (await lister(who, None, PageRequest.of())).items
    assert before.last_heartbeat is None
    assert after.last_heartbeat == clock.now()


async def test_a_station_connecting_here_shows_connected(lister: Lister, store: Store, network: Network) -> None:
    who = caller(network.first, network.site_b)
    [before] = (await lister(who, None, PageRequest.of())).items
    [after] = (await lister(who, Holding({"B-1"}), PageRequest.of())).items
    assert (before.connection, after.connection) == ("disconnected", "connected")


class Holding:
    """The connections this process holds, as the edge answers them (`ports.StationCommands.is_connected`)."""

    def __init__(self, station_ids: set[str]) -> None:
        self.station_ids = station_ids

    def is_connected(self, station_id: str) -> bool:
        return station_id in self.station_ids


async def set_status(store: Store, charge_point_id: str, status: str, at: datetime) -> None:
    async with store.transaction() as session:
        await session.execute(
            update(Connector)
            .where(Connector.charge_point_id == charge_point_id, Connector.connector_id == 1)
            .values(status=status, status_at=at, updated_at=at)
        )


async def test_two_meters_on_two_connectors_show_once_each_in_order(
    lister: Lister, store: Store, network: Network, clock: ManualClock
) -> None:
    made = []
    async with store.transaction() as session:
        for connector, port in ((2, 1502), (1, 1503)):
            made.append(
                await meters.create_meter(
                    session,
                    OPERATOR,
                    site_id=network.site_b,
                    station_id="B-1",
                    connector_id=connector,
                    profile="sdm630",
                    unit_id=1,
                    tcp=f"127.0.0.1:{port}",
                    now=clock.now(),
                )
            )
            clock.advance(1)
    [view] = (await lister(caller(network.first, network.site_b), None, PageRequest.of())).items
    assert [c.connector_id for c in view.connectors] == [1, 2]
    assert [(m.id, m.connector_id) for m in view.meters] == [(made[0].id, 2), (made[1].id, 1)]


async def test_charge_points_of_stations_sharing_an_ordinal_are_each_shown_whole(
    store: Store, network: Network
) -> None:
    async with store.transaction() as session:
        station = await session.get(Station, "A-1")
        assert station is not None
        session.add(ChargePoint(id="A-1-EXTRA", station_id="A-1", site_id=network.site_a, ordinal=1))
        await session.flush()
        session.add_all(Connector(charge_point_id="A-1-EXTRA", connector_id=c) for c in (1, 2))
    async with store.read() as session:
        views = await charge_points.charge_points_of_stations(session, caller(network.first, None), None, ["A-1"])
    assert sorted(view.id for view in views) == sorted({view.id for view in views})
    assert len(views) == 2
    assert all([c.connector_id for c in view.connectors] == [1, 2] for view in views)


async def test_one_charge_point_of_another_company_is_not_found(lister: Lister, store: Store, network: Network) -> None:
    [theirs] = await every_page(lambda page: lister(caller(network.second, None), None, page))
    with pytest.raises(NotFound):
        await charge_points.get_charge_point(store.read_statement, caller(network.first, None), None, theirs.id)
    shown = await charge_points.get_charge_point(store.read_statement, caller(network.second, None), None, theirs.id)
    assert shown == theirs


async def test_a_company_grant_beside_a_site_grant_lists_each_charge_point_once(
    lister: Lister, store: Store, network: Network
) -> None:
    assert await listed(lister, caller(network.first, None, network.site_b)) == ["A-1", "A-2", "B-1"]


async def test_a_grant_on_another_companys_site_reaches_nothing_there(
    lister: Lister, store: Store, network: Network
) -> None:
    grants = [
        Grant(network.first, network.site_b, frozenset({Scope.CHARGE_POINTS_READ})),
        Grant(network.second, None, frozenset({Scope.CHARGE_POINTS_READ})),
    ]
    assert await listed(lister, ApiApplication("app", Permissions.of(network.second, grants))) == ["C-1"]
