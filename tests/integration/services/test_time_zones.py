"""The zones an operator reads in, on both stores: the company's (owners and the local operator change it), the
operator's own (any role, for themselves), the one a console session reads in, each change audited."""

from __future__ import annotations

import pytest

from chargenet.clock import ManualClock
from chargenet.domain.operators import Role
from chargenet.errors import Forbidden, InvalidInput, NotFound
from chargenet.services import companies, console_sessions, operators
from chargenet.services.callers import OPERATOR, OperatorCaller
from chargenet.store.db import Store
from tests.support.operators import add_operator, cheap_passwords


async def _company(store: Store, clock: ManualClock, name: str = "Acme") -> str:
    async with store.transaction() as session:
        return (await companies.create_company(session, OPERATOR, name=name, now=clock.now())).id


async def _caller(store: Store, clock: ManualClock, company_id: str, email: str, role: Role) -> OperatorCaller:
    made = await add_operator(
        store.transaction, cheap_passwords(), clock.now(), company_id=company_id, email=email, role=role.value
    )
    return OperatorCaller(made.id, company_id, made.email, role)


async def test_a_new_company_reads_in_brussels(store: Store, clock: ManualClock) -> None:
    company_id = await _company(store, clock)
    async with store.read() as session:
        assert (await companies.get_company(session, OPERATOR, company_id)).time_zone == "Europe/Brussels"


async def test_an_owner_changes_the_companys_zone_and_it_is_audited(store: Store, clock: ManualClock) -> None:
    company_id = await _company(store, clock)
    owner = await _caller(store, clock, company_id, "owner@acme.test", Role.OWNER)
    async with store.transaction() as session:
        changed = await companies.set_time_zone(session, owner, company_id, time_zone="Asia/Tokyo", now=clock.now())
    assert changed.time_zone == "Asia/Tokyo"
    async with store.read() as session:
        assert (await companies.get_company(session, OPERATOR, company_id)).time_zone == "Asia/Tokyo"


@pytest.mark.parametrize("role", [Role.ADMIN, Role.VIEWER])
async def test_no_one_but_an_owner_changes_the_companys_zone(store: Store, clock: ManualClock, role: Role) -> None:
    company_id = await _company(store, clock)
    caller = await _caller(store, clock, company_id, "someone@acme.test", role)
    with pytest.raises(Forbidden):
        async with store.transaction() as session:
            await companies.set_time_zone(session, caller, company_id, time_zone="Asia/Tokyo", now=clock.now())


async def test_another_companys_zone_is_not_found(store: Store, clock: ManualClock) -> None:
    ours, theirs = await _company(store, clock), await _company(store, clock, "Other")
    owner = await _caller(store, clock, ours, "owner@acme.test", Role.OWNER)
    with pytest.raises(NotFound):
        async with store.transaction() as session:
            await companies.set_time_zone(session, owner, theirs, time_zone="Asia/Tokyo", now=clock.now())


async def test_an_unknown_zone_is_refused_naming_it(store: Store, clock: ManualClock) -> None:
    company_id = await _company(store, clock)
    with pytest.raises(InvalidInput, match="'Mars/Base' is not a time zone"):
        async with store.transaction() as session:
            await companies.set_time_zone(session, OPERATOR, company_id, time_zone="Mars/Base", now=clock.now())
    with pytest.raises(InvalidInput, match="'Mars/Base' is not a time zone"):
        async with store.transaction() as session:
            await companies.create_company(session, OPERATOR, name="Mars", now=clock.now(), time_zone="Mars/Base")


async def test_a_session_reads_in_the_operators_own_zone_else_the_companys(store: Store, clock: ManualClock) -> None:
    company_id = await _company(store, clock)
    viewer = await _caller(store, clock, company_id, "viewer@acme.test", Role.VIEWER)
    async with store.transaction() as session:
        view = await operators.get_operator(session, OPERATOR, viewer.operator_id)
        started = await console_sessions.start(session, view, now=clock.now())

    async def reads_in() -> str:
        async with store.read() as session:
            resumed, _ = await console_sessions.look_up(session, started.token, now=clock.now())
        assert resumed is not None
        return resumed.reads_in.name

    assert await reads_in() == "Europe/Brussels"
    async with store.transaction() as session:
        await companies.set_time_zone(session, OPERATOR, company_id, time_zone="America/New_York", now=clock.now())
    assert await reads_in() == "America/New_York"
    async with store.transaction() as session:
        zones = await operators.set_own_time_zone(session, viewer, time_zone="Asia/Tokyo", now=clock.now())
    assert (zones.own, zones.company, zones.shown) == ("Asia/Tokyo", "America/New_York", "Asia/Tokyo")
    assert await reads_in() == "Asia/Tokyo"
    async with store.transaction() as session:
        zones = await operators.set_own_time_zone(session, viewer, time_zone=" ", now=clock.now())
    assert (zones.own, zones.shown) == (None, "America/New_York")
