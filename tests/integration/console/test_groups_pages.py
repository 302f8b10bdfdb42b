"""The Groups pages, and group membership from either side (the group's page and the application's): admins
change, viewers read; forms refuse bad input naming the field and keep what was typed; an edit made over
someone else's is refused (409), not applied; another company's group or application is not found; every
change is audited, from the console, the API and the command line alike."""

from __future__ import annotations

import asyncio
import io
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import httpx

from chargenet.app import create_app, open_context
from chargenet.cli.main import main
from chargenet.clock import ManualClock
from chargenet.config import load_settings
from chargenet.services import applications, audit, groups, sites
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from chargenet.store.db import Store
from tests.factories import make_tenant, partner_token
from tests.integration.console.conftest import ORIGIN, ConsoleHarness, csrf_of, token_of
from tests.support.templates import copy_sqlite_template

HOSTILE = "<script>alert(1)</script>"


async def a_site(harness: ConsoleHarness, company_id: str | None = None, name: str = "Depot") -> str:
    keys_cipher = _cipher(harness)
    async with harness.store.transaction() as session:
        site = await sites.create_site(
            session,
            OPERATOR,
            keys_cipher,
            company_id=company_id or harness.team.company_id,
            name=name,
            now=harness.clock.now(),
        )
    return site.id


def _cipher(harness: ConsoleHarness):  # type: ignore[no-untyped-def]
    from chargenet.keys import KeyStore

    directory = Path(harness.store.engine.url.database or "").parent / "keys"
    return KeyStore(directory).credential_cipher()


async def an_app(harness: ConsoleHarness, name: str = "Fleet partner", company_id: str | None = None) -> str:
    async with harness.store.transaction() as session:
        created = await applications.create_application(
            session,
            OPERATOR,
            harness.console.secret_hasher,  # type: ignore[arg-type]
            company_id=company_id or harness.team.company_id,
            name=name,
            now=harness.clock.now(),
        )
    return created.client_id


async def a_group(harness: ConsoleHarness, name: str = "Readers", company_id: str | None = None, **kw: object) -> str:
    async with harness.store.transaction() as session:
        group = await groups.create_group(
            session,
            OPERATOR,
            company_id=company_id or harness.team.company_id,
            name=name,
            scopes=kw.pop("scopes", ["sites:read"]),  # type: ignore[arg-type]
            site_id=kw.pop("site_id", None),  # type: ignore[arg-type]
            now=harness.clock.now(),
        )
    return group.id


async def records(store: Store, company_id: str, action: str) -> list[audit.AuditEntry]:
    async with store.transaction() as session:
        found = await audit.list_records(
            session, OPERATOR, PageRequest(), company_id=company_id, where=audit.AuditFilter(action=action)
        )
    return found.items


async def test_the_pages_need_a_signed_in_operator(harness: ConsoleHarness) -> None:
    anonymous = harness.client()
    group_id = await a_group(harness)
    for path in ("/console/groups", f"/console/groups/{group_id}"):
        response = await anonymous.get(path)
        assert response.status_code == 303 and response.headers["location"].startswith("/console/login?next="), path
    refused = await anonymous.post("/console/groups", data={"name": "x"}, headers=ORIGIN)
    assert refused.status_code == 303 and refused.headers["location"] == "/console/login"


async def test_an_admin_creates_a_group_at_a_site_and_finds_it_with_the_filters(harness: ConsoleHarness) -> None:
    site_id = await a_site(harness, name="North depot")
    await a_group(harness, "Company readers", scopes=["sites:read"])
    admin = await harness.signed_in("admin@acme.test")
    created = await admin.post(
        "/console/groups",
        data={
            "name": "Depot operators",
            "anchor": site_id,
            "scope": ["charge-points:write", "sessions:write"],
            "csrf_token": await token_of(admin),
        },
        headers=ORIGIN,
    )
    assert created.status_code == 303
    group_id = created.headers["location"].rsplit("/", 1)[1]
    shown = await admin.get(f"/console/groups/{group_id}")
    assert "Site North depot" in shown.text and "charge-points:write, sessions:write" in shown.text
    listing = (await admin.get("/console/groups")).text
    assert "Depot operators" in listing and "Company readers" in listing
    for query, kept, dropped in (
        ("q=depot", "Depot operators", "Company readers"),
        ("grants=sites:read", "Company readers", "Depot operators"),
        (f"at={site_id}", "Depot operators", "Company readers"),
        ("at=company", "Company readers", "Depot operators"),
    ):
        filtered = (await admin.get(f"/console/groups?{query}")).text
        assert kept in filtered and dropped not in filtered, query
    entry = (await records(harness.store, harness.team.company_id, "group.create"))[0]
    assert entry.object_id == group_id and entry.face == "console" and entry.actor == "operator admin@acme.test"
    assert entry.detail == {
        "name": "Depot operators",
        "anchor": site_id,
        "scopes": "charge-points:write sessions:write",
    }


async def test_the_list_is_paginated_and_keeps_its_filter(harness: ConsoleHarness) -> None:
    for number in range(53):
        await a_group(harness, f"Team {number:02d}")
    await a_group(harness, "Other")
    admin = await harness.signed_in("admin@acme.test")
    first = (await admin.get("/console/groups?q=team")).text
    assert first.count('href="/console/groups/grp_') == 50
    following = re.search(r'href="(/console/groups\?q=team&amp;after=[^"]+)">Next page', first)
    assert following, "no next page link that keeps the filter"
    second = (await admin.get(following.group(1).replace("&amp;", "&"))).text
    assert second.count('href="/console/groups/grp_') == 3 and "Other" not in second and "Next page" not in second


async def test_an_invalid_group_is_422_naming_the_field_with_the_form_kept_as_typed(harness: ConsoleHarness) -> None:
    admin = await harness.signed_in("admin@acme.test")
    token = await token_of(admin)
    no_scope = await admin.post(
        "/console/groups", data={"name": "Kept name", "anchor": "company", "csrf_token": token}, headers=ORIGIN
    )
    assert no_scope.status_code == 422
    assert 'id="scope-error"' in no_scope.text and "Scopes: a group grants at least one scope" in no_scope.text
    assert 'value="Kept name"' in no_scope.text
    no_name = await admin.post(
        "/console/groups",
        data={"name": "  ", "anchor": "company", "scope": ["meters:read"], "csrf_token": token},
        headers=ORIGIN,
    )
    assert no_name.status_code == 422 and 'aria-describedby="name-error"' in no_name.text
    assert 'value="meters:read" checked' in no_name.text
    foreign_site = await a_site(harness, harness.team.other_company_id, "Theirs")
    elsewhere = await admin.post(
        "/console/groups",
        data={"name": "x", "anchor": foreign_site, "scope": ["sites:read"], "csrf_token": token},
        headers=ORIGIN,
    )
    assert elsewhere.status_code == 404  # another company's site, as any other of its ids
    async with harness.store.transaction() as session:
        listed = await groups.list_groups(session, OPERATOR, PageRequest(), company_id=harness.team.company_id)
    assert listed.items == []  # nothing half-saved


async def test_an_admin_edits_a_group_and_an_edit_from_an_older_version_is_refused(harness: ConsoleHarness) -> None:
    site_id = await a_site(harness)
    group_id = await a_group(harness, "Readers")
    admin = await harness.signed_in("admin@acme.test")
    page = (await admin.get(f"/console/groups/{group_id}")).text
    assert 'name="version" value="1"' in page
    token = csrf_of(page)
    edited = await admin.post(
        f"/console/groups/{group_id}",
        data={"name": "Depot readers", "anchor": site_id, "scope": ["sites:read", "meters:read"], "version": "1"}
        | {"csrf_token": token},
        headers=ORIGIN,
    )
    assert edited.status_code == 303
    # Another operator's form, rendered from version 1, arrives after that change.
    stale = await admin.post(
        f"/console/groups/{group_id}",
        data={"name": "Typed over", "anchor": "company", "scope": ["events:read"], "version": "1", "csrf_token": token},
        headers=ORIGIN,
    )
    assert stale.status_code == 409
    assert "changed by someone else" in stale.text and 'value="Typed over"' in stale.text
    assert 'value="events:read" checked' in stale.text and 'name="version" value="2"' in stale.text
    async with harness.store.transaction() as session:
        current = await groups.get_group(session, OPERATOR, group_id)
    assert (current.name, current.site_id, [s.value for s in current.scopes], current.version) == (
        "Depot readers",
        site_id,
        ["meters:read", "sites:read"],
        2,
    )
    invalid = await admin.post(
        f"/console/groups/{group_id}",
        data={"name": "", "anchor": "company", "scope": ["events:read"], "version": "2", "csrf_token": token},
        headers=ORIGIN,
    )
    assert invalid.status_code == 422 and 'aria-describedby="name-error"' in invalid.text
    update = (await records(harness.store, harness.team.company_id, "group.update"))[0]
    assert update.detail["name"] == "Depot readers" and update.detail["anchor"] == site_id


async def test_members_are_added_and_removed_from_the_group_page_and_from_the_applications_page(
    harness: ConsoleHarness,
) -> None:
    group_id = await a_group(harness, "Readers")
    client_id = await an_app(harness, "Fleet partner")
    admin = await harness.signed_in("admin@acme.test")
    token = await token_of(admin)
    added = await admin.post(
        f"/console/groups/{group_id}/members", data={"client_id": client_id, "csrf_token": token}, headers=ORIGIN
    )
    assert added.status_code == 303
    group_page = (await admin.get(f"/console/groups/{group_id}")).text
    assert "Fleet partner" in group_page and "Remove Fleet partner from this group" in group_page
    app_page = (await admin.get(f"/console/applications/{client_id}")).text
    assert f'href="/console/groups/{group_id}">Readers</a>' in app_page
    removed = await admin.post(
        f"/console/applications/{client_id}/groups/{group_id}/remove", data={"csrf_token": token}, headers=ORIGIN
    )
    assert removed.status_code == 303 and removed.headers["location"] == f"/console/applications/{client_id}#groups"
    assert "In no group" in (await admin.get(f"/console/applications/{client_id}")).text
    joined = await admin.post(
        f"/console/applications/{client_id}/groups", data={"group_id": group_id, "csrf_token": token}, headers=ORIGIN
    )
    assert joined.status_code == 303
    async with harness.store.transaction() as session:
        assert (await groups.get_group(session, OPERATOR, group_id)).client_ids == [client_id]
    left = await admin.post(
        f"/console/groups/{group_id}/members/{client_id}/remove", data={"csrf_token": token}, headers=ORIGIN
    )
    assert left.status_code == 303
    actions = [e.action for e in (await audit_of(harness, group_id))]
    assert actions == ["group.remove-app", "group.add-app", "group.remove-app", "group.add-app", "group.create"]
    nothing = await admin.post(
        f"/console/groups/{group_id}/members", data={"client_id": "", "csrf_token": token}, headers=ORIGIN
    )
    assert nothing.status_code == 422 and 'id="client_id-error"' in nothing.text


def offered(page: str, name: str) -> list[str]:
    """The values a page's select `name` offers."""
    select = re.search(rf'<select id="{name}" name="{name}".*?</select>', page, re.S)
    return re.findall(r'<option value="([^"]*)"', select.group(0)) if select else []


async def test_a_picker_offers_the_first_applications_by_name_and_a_search_narrows_them(
    harness: ConsoleHarness,
) -> None:
    group_id = await a_group(harness, "Readers")
    async with harness.store.transaction() as session:
        for n in range(groups.PICKER_SIZE + 5):
            await applications.create_application(
                session,
                OPERATOR,
                harness.console.secret_hasher,  # type: ignore[arg-type]
                company_id=harness.team.company_id,
                name=f"Partner {n:03d}",
                now=harness.clock.now(),
            )
    wanted = await an_app(harness, "Zeta fleet")
    admin = await harness.signed_in("admin@acme.test")
    page = (await admin.get(f"/console/groups/{group_id}")).text
    assert len(offered(page, "client_id")) == groups.PICKER_SIZE and wanted not in offered(page, "client_id")
    assert "More match than are offered below" in page
    found = (await admin.get(f"/console/groups/{group_id}", params={"find": "zeta"})).text
    assert offered(found, "client_id") == [wanted] and 'value="zeta"' in found
    assert (
        "No application outside this group matches"
        in (await admin.get(f"/console/groups/{group_id}", params={"find": "%"})).text
    )


async def test_a_groups_members_are_paged(harness: ConsoleHarness) -> None:
    group_id = await a_group(harness, "Everyone")
    async with harness.store.transaction() as session:
        for n in range(120):
            created = await applications.create_application(
                session,
                OPERATOR,
                harness.console.secret_hasher,  # type: ignore[arg-type]
                company_id=harness.team.company_id,
                name=f"Member {n:03d}",
                now=harness.clock.now(),
            )
            await groups.add_app(session, OPERATOR, group_id, created.client_id, now=harness.clock.now())
    viewer = await harness.signed_in("viewer@acme.test")
    seen: list[str] = []
    path: str | None = f"/console/groups/{group_id}"
    while path is not None:
        page = (await viewer.get(path)).text
        rows = re.findall(r'<td><a href="/console/applications/([^"]+)">Member', page)
        assert 0 < len(rows) <= 50
        seen += rows
        found = re.search(r'href="([^"]+)">Next page', page)
        path = found.group(1).replace("&amp;", "&") if found else None
    assert "Applications in this group (120)" in page
    assert len(seen) == 120 == len(set(seen)) and seen == sorted(seen)


async def test_an_applications_page_lists_its_groups_whatever_their_number_and_offers_only_others(
    harness: ConsoleHarness,
) -> None:
    client_id = await an_app(harness, "Fleet partner")
    joined = []
    for n in range(3):
        joined.append(await a_group(harness, f"Member group {n}"))
        async with harness.store.transaction() as session:
            await groups.add_app(session, OPERATOR, joined[-1], client_id, now=harness.clock.now())
    others = [await a_group(harness, f"Other group {n}") for n in range(groups.PICKER_SIZE + 1)]
    admin = await harness.signed_in("admin@acme.test")
    page = (await admin.get(f"/console/applications/{client_id}")).text
    assert all(f'href="/console/groups/{group_id}"' in page for group_id in joined)
    choices = offered(page, "group_id")
    assert len(choices) == groups.PICKER_SIZE and not set(choices) & set(joined) and set(choices) <= set(others)
    narrowed = (await admin.get(f"/console/applications/{client_id}", params={"find": "Other group 50"})).text
    assert offered(narrowed, "group_id") == [others[50]]


async def audit_of(harness: ConsoleHarness, object_id: str) -> list[audit.AuditEntry]:
    async with harness.store.transaction() as session:
        found = await audit.list_records(
            session,
            OPERATOR,
            PageRequest(),
            company_id=harness.team.company_id,
            where=audit.AuditFilter(object_id=object_id),
        )
    return found.items


async def test_a_viewer_reads_groups_but_every_change_is_refused(harness: ConsoleHarness) -> None:
    group_id = await a_group(harness, "Readers")
    client_id = await an_app(harness)
    viewer = await harness.signed_in("viewer@acme.test")
    token = await token_of(viewer)
    listing = await viewer.get("/console/groups")
    assert listing.status_code == 200 and "Readers" in listing.text and "Create group" not in listing.text
    detail = (await viewer.get(f"/console/groups/{group_id}")).text
    assert "Save changes" not in detail and "Add to group" not in detail
    assert "Add to group" not in (await viewer.get(f"/console/applications/{client_id}")).text
    for path in (
        "/console/groups",
        f"/console/groups/{group_id}",
        f"/console/groups/{group_id}/delete",
        f"/console/groups/{group_id}/members",
        f"/console/groups/{group_id}/members/{client_id}/remove",
        f"/console/applications/{client_id}/groups",
        f"/console/applications/{client_id}/groups/{group_id}/remove",
    ):
        data = {"csrf_token": token, "name": "x", "scope": "sites:read", "client_id": client_id, "group_id": group_id}
        response = await viewer.post(path, data=data, headers=ORIGIN)
        assert response.status_code == 403, path


async def test_the_service_refuses_a_viewer_whichever_face_calls_it(harness: ConsoleHarness) -> None:
    from chargenet.domain.operators import Role
    from chargenet.errors import Forbidden
    from chargenet.services.callers import OperatorCaller

    group_id = await a_group(harness)
    viewer = OperatorCaller(harness.team.viewer.id, harness.team.company_id, "viewer@acme.test", Role.VIEWER)
    async with harness.store.transaction() as session:
        for change in (
            groups.create_group(session, viewer, name="x", scopes=["sites:read"], now=harness.clock.now()),
            groups.update_group(session, viewer, group_id, name="y", now=harness.clock.now()),
            groups.delete_group(session, viewer, group_id, now=harness.clock.now()),
        ):
            try:
                await change
            except Forbidden:
                continue
            raise AssertionError("a viewer changed a group")


async def test_a_change_without_the_token_or_from_another_origin_is_refused(harness: ConsoleHarness) -> None:
    group_id = await a_group(harness)
    admin = await harness.signed_in("admin@acme.test")
    token = await token_of(admin)
    path = f"/console/groups/{group_id}/delete"
    assert (await admin.post(path, headers=ORIGIN)).status_code == 403
    assert (await admin.post(path, data={"csrf_token": "wrong"}, headers=ORIGIN)).status_code == 403
    evil = {"Origin": "https://evil.example"}
    assert (await admin.post(path, data={"csrf_token": token}, headers=evil)).status_code == 403
    cross = {"Sec-Fetch-Site": "cross-site"}
    assert (await admin.post(path, data={"csrf_token": token}, headers=cross)).status_code == 403
    async with harness.store.transaction() as session:
        assert await groups.get_group(session, OPERATOR, group_id)


async def test_another_companys_group_and_application_are_not_found(harness: ConsoleHarness) -> None:
    theirs = await a_group(harness, "Their readers", company_id=harness.team.other_company_id)
    their_app = await an_app(harness, "Their app", company_id=harness.team.other_company_id)
    mine = await a_group(harness, "Mine")
    my_app = await an_app(harness, "My app")
    admin = await harness.signed_in("admin@acme.test")
    token = await token_of(admin)
    assert (await admin.get(f"/console/groups/{theirs}")).status_code == 404
    assert "Their readers" not in (await admin.get("/console/groups")).text
    for path, data in (
        (f"/console/groups/{theirs}", {"name": "x", "anchor": "company", "scope": "sites:read"}),
        (f"/console/groups/{theirs}/delete", {}),
        (f"/console/groups/{theirs}/members", {"client_id": my_app}),
        (f"/console/groups/{mine}/members", {"client_id": their_app}),
        (f"/console/applications/{their_app}/groups", {"group_id": mine}),
        (f"/console/applications/{my_app}/groups", {"group_id": theirs}),
    ):
        response = await admin.post(path, data={**data, "csrf_token": token}, headers=ORIGIN)
        assert response.status_code == 404, path
    assert "Their readers" not in (await admin.get(f"/console/applications/{my_app}")).text


async def test_hostile_names_are_shown_as_text(harness: ConsoleHarness) -> None:
    group_id = await a_group(harness, HOSTILE)
    client_id = await an_app(harness, HOSTILE)
    await a_site(harness, name=HOSTILE)
    admin = await harness.signed_in("admin@acme.test")
    await admin.post(
        f"/console/groups/{group_id}/members",
        data={"client_id": client_id, "csrf_token": await token_of(admin)},
        headers=ORIGIN,
    )
    for path in ("/console/groups", f"/console/groups/{group_id}", f"/console/applications/{client_id}"):
        html = (await admin.get(path)).text
        assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html, path


async def test_an_api_call_and_a_cli_command_leave_audit_records(tmp_path: Path, clock: ManualClock) -> None:
    copy_sqlite_template(tmp_path / "faces.db")
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'faces.db'}"
    settings = load_settings({"database_url": database_url, "data_dir": str(tmp_path / "data")}, environ={})
    context = await open_context(settings, clock=clock)
    try:
        tenant = await make_tenant(context.store, context.keys, clock.now())
        token = await partner_token(context, tenant.company_id, ["groups:write"])
        transport = httpx.ASGITransport(app=create_app(context), client=("198.51.100.7", 5000))
        async with httpx.AsyncClient(transport=transport, base_url="http://test/api/v1") as api:
            headers = {"Authorization": f"Bearer {token}"}
            created = await api.post("/groups", json={"name": "Via API", "scopes": ["sites:read"]}, headers=headers)
            assert created.status_code == 201, created.text
            group_id = created.json()["id"]
            renamed = await api.patch(f"/groups/{group_id}", json={"name": "Renamed", "version": 1}, headers=headers)
            assert renamed.status_code == 200 and renamed.json()["version"] == 2
            stale = await api.patch(f"/groups/{group_id}", json={"name": "Late", "version": 1}, headers=headers)
            assert stale.status_code == 409
        via_api = await records(context.store, tenant.company_id, "group.update")
        assert via_api[0].face == "api" and via_api[0].address == "198.51.100.7"
        assert via_api[0].actor.startswith("application ")
    finally:
        await context.close()

    def cli(*args: str) -> str:
        out = io.StringIO()
        with redirect_stdout(out), redirect_stderr(io.StringIO()):
            code = main([*args, "--database-url", database_url, "--data-dir", str(tmp_path / "data")])
        assert code == 0, args
        return out.getvalue()

    await asyncio.to_thread(cli, "admin", "group", "update", group_id, "--name", "From the CLI", "--company-level")
    store = Store(database_url)
    try:
        entries = await records(store, tenant.company_id, "group.update")
    finally:
        await store.dispose()
    assert (
        entries[0].face == "cli"
        and entries[0].actor == "local operator"
        and entries[0].detail["name"] == "From the CLI"
    )
