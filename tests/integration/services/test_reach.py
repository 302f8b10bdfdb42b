"""A caller's reach over one object: the station, or any object on a site, is `NotFound` out of reach, exactly as
one that does not exist; a console viewer asking to change one it sees is `Forbidden`."""

from __future__ import annotations

from pathlib import Path

import pytest

from chargenet.auth.permissions import Grant, Permissions
from chargenet.clock import ManualClock
from chargenet.domain.operators import Role
from chargenet.domain.scopes import Scope
from chargenet.errors import Forbidden, NotFound
from chargenet.keys import KeyStore
from chargenet.services.callers import OPERATOR, ApiApplication, Caller, OperatorCaller
from chargenet.services.reach import reachable_on_site, reachable_station, site_of
from chargenet.store.db import Store
from chargenet.store.models import ChargePoint
from tests.factories import Tenant, make_tenant


@pytest.fixture
async def tenant(store: Store, clock: ManualClock, tmp_path: Path) -> Tenant:
    return await make_tenant(store, KeyStore(tmp_path / "keys"), clock.now())


def application(company_id: str, site_id: str | None, *scopes: Scope) -> ApiApplication:
    return ApiApplication("app_1", Permissions.of(company_id, [Grant(company_id, site_id, frozenset(scopes))]))


def operator(company_id: str, role: Role) -> OperatorCaller:
    return OperatorCaller("op_1", company_id, "ana@acme.test", role)


async def station_for(store: Store, caller: Caller, scope: Scope, station_id: str) -> str:
    async with store.read() as session:
        return (await reachable_station(session, caller, scope, station_id)).id


async def test_a_station_within_reach_is_found(store: Store, tenant: Tenant) -> None:
    for caller in (
        OPERATOR,
        application(tenant.company_id, tenant.site_id, Scope.SITES_READ),
        application(tenant.company_id, None, Scope.SITES_READ),
        operator(tenant.company_id, Role.VIEWER),
    ):
        assert await station_for(store, caller, Scope.SITES_READ, tenant.station_id) == tenant.station_id


async def test_a_station_out_of_reach_is_not_found_like_one_that_does_not_exist(store: Store, tenant: Tenant) -> None:
    for caller in (
        application("co_other", None, Scope.SITES_READ),
        application(tenant.company_id, "site_other", Scope.SITES_READ),
        application(tenant.company_id, tenant.site_id, Scope.METERS_READ),
        operator("co_other", Role.OWNER),
    ):
        with pytest.raises(NotFound) as out_of_reach:
            await station_for(store, caller, Scope.SITES_READ, tenant.station_id)
        with pytest.raises(NotFound) as missing:
            await station_for(store, OPERATOR, Scope.SITES_READ, "ST-NONE")
        assert (out_of_reach.value.kind, missing.value.kind) == ("station", "station")


async def test_a_viewer_asking_to_change_a_station_it_sees_is_forbidden(store: Store, tenant: Tenant) -> None:
    with pytest.raises(Forbidden):
        await station_for(store, operator(tenant.company_id, Role.VIEWER), Scope.SITES_WRITE, tenant.station_id)
    assert await station_for(store, operator(tenant.company_id, Role.ADMIN), Scope.SITES_WRITE, tenant.station_id)


async def test_any_object_on_a_site_is_reached_through_its_site(store: Store, tenant: Tenant) -> None:
    reader = application(tenant.company_id, tenant.site_id, Scope.CHARGE_POINTS_READ)
    async with store.read() as session:
        point = await session.get(ChargePoint, tenant.station_id)  # its one charge point
        reached = await reachable_on_site(session, reader, Scope.CHARGE_POINTS_READ, point, NotFound("cp", "x"))
        assert (await site_of(session, reached)).id == tenant.site_id
        with pytest.raises(NotFound) as none:
            await reachable_on_site(session, OPERATOR, Scope.CHARGE_POINTS_READ, None, NotFound("charge point", "x"))
        assert none.value.kind == "charge point"
        with pytest.raises(NotFound):
            await reachable_on_site(session, reader, Scope.CHARGE_POINTS_WRITE, point, NotFound("cp", "x"))
