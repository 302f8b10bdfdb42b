"""The audit log's own rules on both backends: a change is recorded in the log of its object's company, which its
operators read, kept 365 days, then purged by its worker; never a secret."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from chargenet.auth.permissions import Grant, Permissions
from chargenet.clock import ManualClock
from chargenet.domain.operators import Role
from chargenet.domain.scopes import Scope
from chargenet.errors import NotFound
from chargenet.keys import KeyStore
from chargenet.services import audit, sites
from chargenet.services.callers import OPERATOR, ApiApplication, OperatorCaller
from chargenet.services.pages import PageRequest, UnknownCursor, encode_cursor
from chargenet.store.db import Store
from chargenet.store.models import Station
from tests.factories import make_tenant

NOTED = audit.AuditFilter(action="site.update")  # what `note` records, not the tenant's creation


async def note(store: Store, company_id: str, clock: ManualClock, object_id: str) -> None:
    async with store.transaction() as session:
        await audit.record(
            session,
            OPERATOR.actor,
            company_id=company_id,
            action="site.update",
            object_type="site",
            object_id=object_id,
            now=clock.now(),
        )


async def kept(store: Store, company_id: str) -> list[str]:
    async with store.transaction() as session:
        return [
            e.object_id
            for e in (await audit.list_records(session, OPERATOR, PageRequest(), company_id=company_id)).items
        ]


async def test_records_older_than_365_days_are_purged_by_the_retention_worker(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    company_id = (await make_tenant(store, KeyStore(tmp_path), clock.now())).company_id
    await note(store, company_id, clock, "old")
    clock.advance(timedelta(days=200).total_seconds())
    await note(store, company_id, clock, "recent")
    clock.advance(timedelta(days=166).total_seconds())
    await audit.AuditRetention(store, clock).run_once()
    assert await kept(store, company_id) == ["recent"]


async def test_a_detail_naming_a_secret_is_refused(store: Store, clock: ManualClock) -> None:
    async with store.transaction() as session:
        with pytest.raises(ValueError, match="names a secret"):
            await audit.record(
                session,
                OPERATOR.actor,
                company_id=None,
                action="application.rotate-secret",
                object_type="application",
                object_id="app_1",
                now=clock.now(),
                detail={"client_secret": "s3cr3t"},
            )


async def test_a_change_to_an_object_on_a_site_is_in_the_log_of_the_sites_company(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    tenant = await make_tenant(store, KeyStore(tmp_path), clock.now())
    async with store.transaction() as session:
        station = await session.get(Station, tenant.station_id)
        assert station is not None
        await audit.record_change(session, OPERATOR, "station.update", station, now=clock.now(), detail={"a": "b"})
        page = await audit.list_records(
            session,
            OPERATOR,
            PageRequest(),
            company_id=tenant.company_id,
            where=audit.AuditFilter(action="station.update"),
        )
    [entry] = page.items
    assert (entry.object_type, entry.object_id, entry.company_id) == ("station", tenant.station_id, tenant.company_id)
    assert (entry.actor, entry.face, entry.detail) == ("local operator", "cli", {"a": "b"})


async def test_a_companys_log_is_read_by_its_operators_the_local_operator_and_its_applications_granted_it(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    company_id = (await make_tenant(store, KeyStore(tmp_path), clock.now())).company_id
    await note(store, company_id, clock, "site_1")
    viewer = OperatorCaller("op_1", company_id, "ana@acme.test", Role.VIEWER)
    granted = ApiApplication("app_1", Permissions.of(company_id, [Grant(company_id, None, frozenset(Scope))]))
    at_a_site = ApiApplication("app_2", Permissions.of(company_id, [Grant(company_id, "site_1", frozenset(Scope))]))
    async with store.read() as session:
        for reader in (viewer, OPERATOR, granted):
            page = await audit.list_records(session, reader, PageRequest(), company_id=company_id, where=NOTED)
            assert [entry.object_id for entry in page.items] == ["site_1"]
        assert (await audit.list_records(session, at_a_site, PageRequest(), company_id=company_id)).items == []
        for stranger in (
            replace(viewer, company_id="co_other"),
            replace(granted, permissions=Permissions.of("co_other", [])),
        ):
            with pytest.raises(NotFound):
                await audit.list_records(session, stranger, PageRequest(), company_id=company_id)


async def test_the_log_pages_newest_first_by_an_opaque_cursor(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    company_id = (await make_tenant(store, KeyStore(tmp_path), clock.now())).company_id
    for n in range(5):
        await note(store, company_id, clock, f"site_{n}")
    async with store.read() as session:
        first = await audit.list_records(session, OPERATOR, PageRequest(3), company_id=company_id, where=NOTED)
        rest = await audit.list_records(
            session, OPERATOR, PageRequest.of(3, first.next), company_id=company_id, where=NOTED
        )
        with pytest.raises(UnknownCursor):
            await audit.list_records(session, OPERATOR, PageRequest.of(3, encode_cursor("x")), company_id=company_id)
    assert [e.object_id for e in first.items + rest.items] == [f"site_{n}" for n in range(4, -1, -1)]
    assert rest.next is None


async def test_each_record_names_its_object_as_a_person_calls_it_now(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    keys = KeyStore(tmp_path)
    tenant = await make_tenant(store, keys, clock.now())
    async with store.transaction() as session:
        await sites.update_site(
            session, OPERATOR, keys.credential_cipher(), tenant.site_id, name="Harbour", now=clock.now()
        )
        entries = (await audit.list_records(session, OPERATOR, PageRequest(), company_id=tenant.company_id)).items
    named = {(e.object_type, e.object_id): e.object_name for e in entries}
    assert named[("site", tenant.site_id)] == "Harbour"  # the name it has now, in every record of it
    assert named[("company", tenant.company_id)] == "Acme Charging"
    assert named[("station", tenant.station_id)] is None  # a station is named by its id


async def test_a_record_never_shows_the_name_of_another_companys_object(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    ours = await make_tenant(store, KeyStore(tmp_path), clock.now())
    theirs = await make_tenant(store, KeyStore(tmp_path), clock.now(), station_id="ST-2")
    await note(store, ours.company_id, clock, theirs.site_id)  # a record naming another company's site by its id
    async with store.transaction() as session:
        page = await audit.list_records(session, OPERATOR, PageRequest(), company_id=ours.company_id, where=NOTED)
    assert [(e.object_id, e.object_name) for e in page.items] == [(theirs.site_id, None)]
