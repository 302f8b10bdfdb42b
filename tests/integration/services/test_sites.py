"""What a site's page counts (`sites.site_contents`), the names a table shows for site ids (`sites.site_names`),
and the site a webhook form may be pre-filled with (`webhooks.site_choice`): each only as far as the caller
reaches, another company's site being not found or simply left out."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import insert

from chargenet.clock import ManualClock
from chargenet.domain.operators import Role
from chargenet.errors import NotFound
from chargenet.keys import KeyStore
from chargenet.services import companies, localauth, meters, sites, webhooks
from chargenet.services.callers import OPERATOR, OperatorCaller
from chargenet.store.db import Store
from chargenet.store.models import StationPresence
from tests.factories import Tenant, add_station, add_webhook, make_tenant


@pytest.fixture
def keys(tmp_path: Path) -> KeyStore:
    return KeyStore(tmp_path / "keys")


@pytest.fixture
async def tenant(store: Store, clock: ManualClock, keys: KeyStore) -> Tenant:
    return await make_tenant(store, keys, clock.now())


async def stranger_of(store: Store, clock: ManualClock) -> OperatorCaller:
    async with store.transaction() as session:
        other = await companies.create_company(session, OPERATOR, name="Other", now=clock.now())
    return OperatorCaller("op-x", other.id, "owner@other.test", Role.OWNER)


async def test_site_contents_counts_the_stations_meters_webhooks_tags_and_upstream_links(
    store: Store, clock: ManualClock, keys: KeyStore, tenant: Tenant
) -> None:
    now = clock.now()
    async with store.transaction() as session:
        for station_id in ("ST-2", "ST-3"):
            await add_station(session, keys, tenant.site_id, station_id, now)
        await meters.create_meter(
            session,
            OPERATOR,
            site_id=tenant.site_id,
            station_id="ST-1",
            profile="sdm630",
            unit_id=1,
            tcp="192.0.2.7:502",
            now=now,
        )
        for tag in ("TAG-1", "TAG-2"):
            await localauth.add_entry(session, OPERATOR, site_id=tenant.site_id, id_tag=tag, now=now)
        await session.execute(
            insert(StationPresence),
            [
                {"station_id": "ST-1", "connected": True, "upstream_connected": True},
                {"station_id": "ST-2", "connected": True, "upstream_connected": False},
                {"station_id": "ST-3", "connected": False, "upstream_connected": False},  # offline: not counted
            ],
        )
    await add_webhook(store.transaction, keys.credential_cipher(), tenant.site_id, now)
    viewer = OperatorCaller("op-1", tenant.company_id, "viewer@acme.test", Role.VIEWER)
    async with store.read() as session:
        contents = await sites.site_contents(session, viewer, tenant.site_id)
    assert contents == sites.SiteContents(
        stations=3, meters=1, webhooks=1, local_list_entries=2, upstream_links_up=1, upstream_links_down=1
    )


async def test_site_contents_of_another_companys_site_is_not_found(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    stranger = await stranger_of(store, clock)
    async with store.read() as session:
        with pytest.raises(NotFound):
            await sites.site_contents(session, stranger, tenant.site_id)


async def test_site_names_names_the_sites_the_caller_reaches_and_leaves_out_the_others(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    stranger = await stranger_of(store, clock)
    owner = OperatorCaller("op-1", tenant.company_id, "owner@acme.test", Role.OWNER)
    async with store.read() as session:
        assert await sites.site_names(session, owner, [tenant.site_id, "site_unknown"]) == {tenant.site_id: "Depot"}
        assert await sites.site_names(session, stranger, [tenant.site_id]) == {}
        assert await sites.site_names(session, owner, []) == {}


async def test_a_webhook_form_is_pre_filled_only_with_a_site_the_caller_reaches(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    stranger = await stranger_of(store, clock)
    owner = OperatorCaller("op-1", tenant.company_id, "owner@acme.test", Role.OWNER)
    async with store.read() as session:
        assert await webhooks.site_choice(session, owner, tenant.site_id) == (tenant.site_id, "Depot")
        assert await webhooks.site_choice(session, stranger, tenant.site_id) is None
        for wrong in ("", "site_unknown", "x" * 300, "a\x00b"):
            assert await webhooks.site_choice(session, owner, wrong) is None
