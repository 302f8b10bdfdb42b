"""The Sites pages: the tree company > site > station > charge point > connector, sites and stations created and
edited (credentials write-only, a generated station key shown once), the local authorization list, and each
change protected, role-checked, audited, refused as stale when the row moved on, and escaped."""

from __future__ import annotations

import logging
import re
from datetime import timedelta

import pytest
from sqlalchemy import insert, update

from chargenet.services import localauth, meters, sites, stations
from chargenet.services.callers import OPERATOR
from chargenet.store.models import Connector, Site, Station
from tests.integration.console.conftest import (
    ORIGIN,
    ConsoleHarness,
    make_site,
    make_station,
    post,
    records,
    token_of,
)

HOSTILE = "<script>alert(1)</script>"
HOSTILE_TAG = "<b>x</b>&'\""  # 12 characters: fits an idTag


def key_on(html: str) -> str:
    found = re.search(r'id="station_key" type="text" value="([^"]+)"', html)
    assert found, "no key on the page"
    return found.group(1)


def version_on(html: str, form_action: str) -> str:
    form = html.split(f'action="{form_action}"', 1)[1]
    found = re.search(r'name="version" value="(\d+)"', form)
    assert found
    return found.group(1)


# --- reading ----------------------------------------------------------------------------------------------


async def test_every_sites_page_needs_a_signed_in_operator(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-1")
    anonymous = harness.client()
    for path in (
        "/console/sites",
        f"/console/sites/{site.id}",
        f"/console/sites/{site.id}/local-list",
        "/console/stations/CS-1",
    ):
        response = await anonymous.get(path)
        assert response.status_code == 303 and response.headers["location"].startswith("/console/login?next="), path
    for path in (
        "/console/sites",
        f"/console/sites/{site.id}",
        f"/console/sites/{site.id}/stations",
        "/console/stations/CS-1",
    ):
        response = await anonymous.post(path, data={"name": "x"}, headers=ORIGIN)
        assert response.status_code == 303 and response.headers["location"] == "/console/login", path


async def test_the_tree_shows_company_site_station_charge_points_and_connector_status(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id, "Harbour")
    await make_station(harness, site.id, "CS-TWIN", charge_points=2, connectors=2, password="k" * 20)
    async with harness.store.transaction() as session:
        await session.execute(
            update(Connector)
            .where(Connector.charge_point_id == "CS-TWIN-2", Connector.connector_id == 1)
            .values(status="Faulted", error_code="GroundFailure", info=HOSTILE, status_at=harness.clock.now())
        )
    viewer = await harness.signed_in("viewer@acme.test")
    listing = await viewer.get("/console/sites")
    assert listing.status_code == 200 and "Sites of Acme" in listing.text and "Harbour" in listing.text
    assert f'href="/console/sites/{site.id}"' in listing.text
    shown = await viewer.get(f"/console/sites/{site.id}")
    assert shown.status_code == 200
    html = shown.text
    assert '<a href="/console/sites">Acme</a>' in html  # the tree's trail starts at the company
    assert 'href="/console/stations/CS-TWIN"' in html and "Security profile 1" in html
    assert html.count('<span class="connector">') == 4  # one table, a row for each charge point
    assert "<code>CS-TWIN-1</code>" in html and "<code>CS-TWIN-2</code>" in html
    assert "Faulted" in html and "GroundFailure" in html and "not reported yet" in html
    station = await viewer.get("/console/stations/CS-TWIN")
    assert station.status_code == 200 and "Faulted" in station.text and HOSTILE not in station.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in station.text  # the info is on the station's page, as text
    assert "Save keys" not in station.text and "Delete station" not in station.text  # a viewer only reads
    assert "Create station" not in html and "Save site" not in html and "Create site" not in listing.text


async def test_ten_thousand_sites_are_paged_and_filtered_by_get_parameters(harness: ConsoleHarness) -> None:
    now = harness.clock.now()
    async with harness.store.transaction() as session:
        await session.execute(
            insert(Site),
            [
                {"id": f"site_{n:05d}", "company_id": harness.team.company_id, "name": f"Depot {n}", "created_at": now}
                for n in range(10_000)
            ],
        )
        await session.execute(
            update(Site).where(Site.id == "site_09999").values(upstream_url="wss://cpo.example/ocpp", name="Far end")
        )
    viewer = await harness.signed_in("viewer@acme.test")
    first = await viewer.get("/console/sites")
    assert first.status_code == 200 and first.text.count('href="/console/sites/site_') == 50
    assert "site_00049" in first.text and "site_00050" not in first.text
    next_url = re.search(r'href="(/console/sites\?after=[^"]+)">Next page', first.text)
    assert next_url
    second = await viewer.get(next_url.group(1).replace("&amp;", "&"))
    assert "site_00050" in second.text and "site_00099" in second.text and "site_00049<" not in second.text
    assert "First page" in second.text
    named = await viewer.get("/console/sites", params={"name": "depot 123"})
    assert named.text.count('href="/console/sites/site_') == 11  # Depot 123 and Depot 1230-1239
    assert 'value="depot 123"' in named.text
    upstream = await viewer.get("/console/sites", params={"upstream": "with"})
    assert upstream.text.count('href="/console/sites/site_') == 1 and "Far end" in upstream.text
    edited = await viewer.get("/console/sites", params={"after": "not a cursor"})
    assert edited.status_code == 200 and "site_00000" in edited.text  # an edited address is the first page


# --- sites: create and edit ---------------------------------------------------------------------------------


async def test_an_admin_creates_a_site_and_the_upstream_password_is_only_ever_set_or_not_set(
    harness: ConsoleHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    admin = await harness.signed_in("admin@acme.test")
    secret = "upstream-secret-value"
    created = await post(
        admin,
        "/console/sites",
        {"name": "North", "upstream_url": "wss://cpo.example/ocpp", "upstream_password": secret},
    )
    assert created.status_code == 303
    site_path = created.headers["location"]
    page = await admin.get(site_path)
    assert page.status_code == 200 and "Site North" in page.text and "<code>wss://cpo.example/ocpp</code>" in page.text
    assert "<dt>Upstream password</dt><dd>set</dd>" in page.text
    site_id = site_path.rsplit("/", 1)[1]
    [entry] = await records(harness, action="site.create")
    assert entry.object_id == site_id and entry.actor == "operator admin@acme.test" and entry.face == "console"
    assert entry.detail["name"] == "North" and entry.detail["upstream login"] == "set"
    for path in (site_path, "/console/sites", "/console/audit"):
        assert secret not in (await admin.get(path)).text, path
    assert secret not in repr(await records(harness)) and secret not in caplog.text

    # A blank password keeps it; the checkbox clears it; the URL may change with it.
    version = version_on(page.text, site_path)
    kept = await post(admin, site_path, {"name": "North", "upstream_url": "wss://cpo.example/ocpp", "version": version})
    assert kept.status_code == 303 and "<dt>Upstream password</dt><dd>set</dd>" in (await admin.get(site_path)).text
    assert len(await records(harness, action="site.update")) == 0  # nothing changed, nothing recorded
    cleared = await post(
        admin,
        site_path,
        {
            "name": "North",
            "upstream_url": "wss://other.example/ocpp",
            "clear_upstream_password": "yes",
            "upstream_ocpp_versions": "ocpp1.6,ocpp2.0.1",
            "version": version,
        },
    )
    assert cleared.status_code == 303
    after = (await admin.get(site_path)).text
    assert "<dt>Upstream password</dt><dd>not set</dd>" in after and "wss://other.example/ocpp" in after
    assert '<dd id="upstream-ocpp-versions">ocpp1.6, ocpp2.0.1:' in after
    [changed] = await records(harness, action="site.update")
    assert changed.detail["changed"] == "upstream URL, upstream password removed, upstream OCPP versions"
    removed = await post(admin, site_path, {"name": "North", "upstream_url": "", "version": str(int(version) + 1)})
    assert removed.status_code == 303 and "<dt>Upstream URL</dt><dd>none: the edge" in (await admin.get(site_path)).text


async def test_a_bad_site_form_is_422_naming_the_field_and_keeping_what_was_typed(harness: ConsoleHarness) -> None:
    admin = await harness.signed_in("admin@acme.test")
    empty = await post(admin, "/console/sites", {"name": "  ", "upstream_url": "wss://cpo.example"})
    assert empty.status_code == 422 and 'aria-describedby="name-error' in empty.text
    assert 'value="wss://cpo.example"' in empty.text and "The site was not created" in empty.text
    bad_url = await post(admin, "/console/sites", {"name": HOSTILE, "upstream_url": "http://cpo.example/?a=<b>"})
    assert bad_url.status_code == 422 and 'id="upstream_url-error"' in bad_url.text
    assert HOSTILE not in bad_url.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in bad_url.text  # kept, escaped
    with_login = await post(admin, "/console/sites", {"name": "x", "upstream_url": "wss://user:pw@cpo.example"})
    assert with_login.status_code == 422 and "give the password in its own field" in with_login.text
    site = await make_site(harness, harness.team.company_id)
    path = f"/console/sites/{site.id}"
    orphan = await post(admin, path, {"name": "Depot", "upstream_url": "", "upstream_password": "p", "version": "1"})
    assert orphan.status_code == 422 and 'id="site-upstream_password-error"' in orphan.text
    assert len(await records(harness, action="site.create")) == 1  # the fixture's: nothing was half-saved


async def test_a_stale_site_edit_is_409_with_the_form_kept_and_the_other_change_kept(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id, "Before")
    path = f"/console/sites/{site.id}"
    mine = await harness.signed_in("admin@acme.test")
    theirs = await harness.signed_in("owner@acme.test")
    form = await mine.get(path)
    version = version_on(form.text, path)
    assert (await post(theirs, path, {"name": "Theirs", "version": version})).status_code == 303
    stale = await post(mine, path, {"name": "Mine", "upstream_url": "wss://mine.example", "version": version})
    assert stale.status_code == 409
    assert "changed by someone else meanwhile" in stale.text and 'value="Mine"' in stale.text
    assert 'value="wss://mine.example"' in stale.text and "Site Theirs" in stale.text  # what is now stored, above
    async with harness.store.transaction() as session:
        assert (await sites.get_site(session, OPERATOR, site.id)).name == "Theirs"
    # Saved again from the refused form: a deliberate overwrite of what is now shown.
    again = await post(mine, path, {"name": "Mine", "version": version_on(stale.text, path)})
    assert again.status_code == 303


# --- stations ----------------------------------------------------------------------------------------------


async def test_a_generated_station_key_is_shown_once_and_never_again(
    harness: ConsoleHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    site = await make_site(harness, harness.team.company_id)
    admin = await harness.signed_in("admin@acme.test")
    created = await post(
        admin,
        f"/console/sites/{site.id}/stations",
        {"station_id": "CS-NEW", "charge_points": "2", "connectors": "3", "key": "generate"},
    )
    assert created.status_code == 200 and created.headers["cache-control"] == "no-store"
    assert "it will not be shown again" in created.text and 'data-copy="station_key"' in created.text
    key = key_on(created.text)
    assert 16 <= len(key) <= 40
    async with harness.store.transaction() as session:
        row = await session.get(Station, "CS-NEW")
        assert row is not None and row.password_hash is not None and row.password_hash != key
        assert harness.console.secret_hasher.verify(key, row.password_hash)  # type: ignore[union-attr]
    for path in ("/console/stations/CS-NEW", f"/console/sites/{site.id}", "/console/sites", "/console/audit"):
        page = await admin.get(path)
        assert page.status_code == 200 and key not in page.text, path
    station = (await admin.get("/console/stations/CS-NEW")).text
    assert "CS-NEW-1" in station and "CS-NEW-2" in station and station.count("not reported yet") == 6  # 2 x 3
    [entry] = await records(harness, action="station.create")
    assert entry.detail == {
        "site": site.id,
        "charge points": "2",
        "connectors per charge point": "3",
        "security profile": "1",
        "OCPP versions": "ocpp2.0.1, ocpp1.6",
    }
    assert key not in caplog.text

    # A new generated key: shown once, the old one stops.
    rotated = await post(admin, "/console/stations/CS-NEW", {"key": "generate", "version": "1"})
    assert rotated.status_code == 200 and "The previous key has stopped working" in rotated.text
    new_key = key_on(rotated.text)
    async with harness.store.transaction() as session:
        row = await session.get(Station, "CS-NEW")
        assert row is not None and row.version == 2
        assert harness.console.secret_hasher.verify(new_key, row.password_hash)  # type: ignore[union-attr,arg-type]
        assert not harness.console.secret_hasher.verify(key, row.password_hash)  # type: ignore[union-attr,arg-type]
    assert new_key not in (await admin.get("/console/stations/CS-NEW")).text
    [changed] = await records(harness, action="station.update")
    assert changed.detail == {"changed": "authorization key replaced"}


async def test_a_station_with_a_typed_key_or_none_and_its_keys_changed(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    admin = await harness.signed_in("admin@acme.test")
    typed = "a-typed-key-of-24-chars!"
    given = await post(
        admin, f"/console/sites/{site.id}/stations", {"station_id": "CS-T", "key": "given", "password": typed}
    )
    assert given.status_code == 303 and given.headers["location"] == "/console/stations/CS-T"
    assert typed not in (await admin.get("/console/stations/CS-T")).text
    open_ = await post(admin, f"/console/sites/{site.id}/stations", {"station_id": "CS-OPEN", "key": "none"})
    assert open_.status_code == 303
    assert "Security profile</dt><dd>0" in (await admin.get("/console/stations/CS-OPEN")).text
    owner = await harness.signed_in("owner@acme.test")  # removing the key lowers the profile: an owner's act
    removed = await post(
        owner,
        "/console/stations/CS-T",
        {"key": "none", "station_upstream_password": "own-upstream", "version": "1"},
    )
    assert removed.status_code == 303
    page = (await admin.get("/console/stations/CS-T")).text
    assert "Security profile</dt><dd>0" in page and "Own upstream password</dt><dd>set" in page
    assert "own-upstream" not in page
    cleared = await post(
        admin, "/console/stations/CS-T", {"key": "keep", "clear_upstream_password": "yes", "version": "2"}
    )
    assert (
        cleared.status_code == 303
        and "Own upstream password</dt><dd>not set" in (await admin.get("/console/stations/CS-T")).text
    )
    actions = [entry.detail["changed"] for entry in await records(harness, action="station.update")]
    assert actions == ["upstream key removed", "authorization key removed (security profile 0), upstream key set"]


async def test_a_bad_station_form_is_422_naming_the_field_and_a_taken_id_too(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-TAKEN")
    admin = await harness.signed_in("admin@acme.test")
    path = f"/console/sites/{site.id}/stations"
    cases = [
        ({"station_id": "bad id!", "key": "none"}, "station_id"),
        ({"station_id": "CS-TAKEN", "key": "none"}, "station_id"),
        ({"station_id": "CS-2", "charge_points": "two", "key": "none"}, "charge_points"),
        ({"station_id": "CS-2", "charge_points": "2", "key": "none"}, "connectors"),  # several need connectors
        ({"station_id": "CS-2", "connectors": "17", "key": "none"}, "connectors"),
        ({"station_id": "CS-2", "key": "given", "password": "short"}, "password"),
        ({"station_id": "CS-2", "key": "sometimes"}, "key"),
    ]
    for data, field in cases:
        response = await post(admin, path, data)
        assert response.status_code == 422, data
        assert f'id="{field}-error"' in response.text, (data, field)
        assert "The station was not created" in response.text
        assert f'value="{data["station_id"]}"' in response.text.replace("&#34;", '"'), data
    hostile = await post(admin, path, {"station_id": HOSTILE, "key": "none"})
    assert hostile.status_code == 422 and HOSTILE not in hostile.text
    async with harness.store.transaction() as session:
        assert (await stations.get_station(session, OPERATOR, "CS-TAKEN")).site_id == site.id
        assert await session.get(Station, "CS-2") is None
    assert [entry.object_id for entry in await records(harness, action="station.create")] == ["CS-TAKEN"]


async def test_a_stale_station_edit_is_409_and_keeps_the_choice(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-1", password="k" * 20)
    admin = await harness.signed_in("admin@acme.test")
    replaced = await post(admin, "/console/stations/CS-1", {"key": "given", "password": "m" * 20, "version": "1"})
    assert replaced.status_code == 303
    stale = await post(admin, "/console/stations/CS-1", {"key": "generate", "version": "1"})
    assert stale.status_code == 409 and "changed by someone else meanwhile" in stale.text
    assert 'id="key-generate" name="key" type="radio" value="generate" checked' in stale.text
    assert 'id="station_key"' not in stale.text  # no key was made


async def test_a_station_is_deleted_only_while_it_has_no_meters(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-GONE", connectors=2)
    await make_station(harness, site.id, "CS-METERED")
    async with harness.store.transaction() as session:
        await meters.create_meter(
            session,
            OPERATOR,
            site_id=site.id,
            station_id="CS-METERED",
            profile="sdm630",
            unit_id=1,
            tcp="192.0.2.1:502",
            now=harness.clock.now(),
        )
    admin = await harness.signed_in("admin@acme.test")
    deleted = await post(admin, "/console/stations/CS-GONE/delete", {"version": "1"})
    assert deleted.status_code == 303 and deleted.headers["location"] == f"/console/sites/{site.id}"
    assert (await admin.get("/console/stations/CS-GONE")).status_code == 404
    refused = await post(admin, "/console/stations/CS-METERED/delete", {"version": "1"})
    assert refused.status_code == 409 and "has meters; delete them first" in refused.text
    assert [entry.object_id for entry in await records(harness, action="station.delete")] == ["CS-GONE"]


async def test_an_empty_site_is_deleted_with_its_local_list_and_audited(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id, name="Closed depot")
    async with harness.store.transaction() as session:
        await localauth.add_entry(session, OPERATOR, site_id=site.id, id_tag="TAG-1", now=harness.clock.now())
    admin = await harness.signed_in("admin@acme.test")
    deleted = await post(admin, f"/console/sites/{site.id}/delete", {"version": "1"})
    assert deleted.status_code == 303 and deleted.headers["location"] == "/console/sites"
    assert (await admin.get(f"/console/sites/{site.id}")).status_code == 404
    [entry] = await records(harness, action="site.delete")
    assert entry.object_id == site.id and entry.detail == {"name": "Closed depot"}


async def test_a_site_that_still_holds_stations_or_webhooks_is_not_deleted(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-1")
    admin = await harness.signed_in("admin@acme.test")
    refused = await post(admin, f"/console/sites/{site.id}/delete", {"version": "1"})
    assert refused.status_code == 409
    assert f"site {site.id} still has stations; delete them first" in refused.text
    assert (await admin.get(f"/console/sites/{site.id}")).status_code == 200
    assert await records(harness, action="site.delete") == []


async def test_a_stale_or_foreign_site_delete_changes_nothing(harness: ConsoleHarness) -> None:
    ours = await make_site(harness, harness.team.company_id)
    theirs = await make_site(harness, harness.team.other_company_id)
    admin = await harness.signed_in("admin@acme.test")
    assert (await post(admin, f"/console/sites/{ours.id}", {"name": "Renamed", "version": "1"})).status_code == 303
    stale = await post(admin, f"/console/sites/{ours.id}/delete", {"version": "1"})
    assert stale.status_code == 409 and "changed by someone else meanwhile" in stale.text
    assert (await post(admin, f"/console/sites/{theirs.id}/delete", {"version": "1"})).status_code == 404
    viewer = await harness.signed_in("viewer@acme.test")
    assert (await post(viewer, f"/console/sites/{ours.id}/delete", {"version": "2"})).status_code == 403
    async with harness.store.transaction() as session:
        for site in (ours, theirs):
            assert (await sites.get_site(session, OPERATOR, site.id)).id == site.id


# --- the local authorization list ------------------------------------------------------------------------


async def test_tags_are_added_blocked_expired_accepted_and_removed_each_audited(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    admin = await harness.signed_in("admin@acme.test")
    base = f"/console/sites/{site.id}/local-list"
    added = await post(admin, base, {"id_tag": "TAG-1", "status": "Accepted", "expires": "2027-01-31T18:00"})
    assert added.status_code == 303
    page = await admin.get(added.headers["location"])
    assert "<code>TAG-1</code>" in page.text and "2027-01-31 18:00" in page.text
    for verb, status in (("block", "Blocked"), ("expire", "Expired"), ("accept", "Accepted")):
        response = await post(admin, f"{base}/{verb}", {"id_tag": "TAG-1", "tag": "TAG"})
        assert response.status_code == 303 and response.headers["location"] == f"{base}?tag=TAG"
        async with harness.store.transaction() as session:
            entry = await localauth.get_entry(session, OPERATOR, site_id=site.id, id_tag="TAG-1")
        assert entry.status == status and entry.expires_at is not None  # the expiry is kept
    token = await token_of(admin)
    removed = await admin.post(
        f"{base}/remove", data={"id_tag": "TAG-1", "csrf_token": token}, headers={**ORIGIN, "HX-Request": "true"}
    )
    assert removed.status_code == 200 and removed.headers["hx-redirect"] == base  # htmx loads the list as a page
    assert "The list is empty" in (await admin.get(base)).text
    assert [
        (e.action, e.detail.get("status")) for e in reversed(await records(harness, object_type="local list entry"))
    ] == [
        ("localauth.add", "Accepted"),
        ("localauth.update", "Blocked"),
        ("localauth.update", "Expired"),
        ("localauth.update", "Accepted"),
        ("localauth.remove", None),
    ]
    assert (await post(admin, f"{base}/block", {"id_tag": "TAG-1"})).status_code == 404


async def test_the_local_list_pages_filters_refuses_bad_tags_and_escapes_them(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    async with harness.store.transaction() as session:
        for n in range(120):
            await localauth.add_entry(
                session,
                OPERATOR,
                site_id=site.id,
                id_tag=f"T{n:03d}",
                now=harness.clock.now(),
                status="Blocked" if n % 10 == 0 else "Accepted",
            )
        await localauth.add_entry(session, OPERATOR, site_id=site.id, id_tag=HOSTILE_TAG, now=harness.clock.now())
    viewer = await harness.signed_in("viewer@acme.test")
    base = f"/console/sites/{site.id}/local-list"
    first = await viewer.get(base)
    assert first.text.count("<tr>\n      <td><code>") == 50 and "Next page" in first.text
    assert "<b>x</b>" not in first.text and "&lt;b&gt;x&lt;/b&gt;&amp;&#39;&#34;" in first.text
    assert "Save tag" not in first.text and ">Block<" not in first.text  # a viewer reads only
    blocked = await viewer.get(base, params={"status": "Blocked"})
    assert blocked.text.count("<tr>\n      <td><code>") == 12
    narrowed = await viewer.get(base, params={"tag": "t11"})
    assert narrowed.text.count("<tr>\n      <td><code>") == 10
    admin = await harness.signed_in("admin@acme.test")
    too_long = await post(admin, base, {"id_tag": "X" * 37, "status": "Accepted"})
    assert too_long.status_code == 422 and 'id="id_tag-error"' in too_long.text and "X" * 37 in too_long.text
    bad_status = await post(admin, base, {"id_tag": "OK", "status": "Maybe"})
    assert bad_status.status_code == 422 and 'id="status-error"' in bad_status.text
    bad_date = await post(admin, base, {"id_tag": "OK", "status": "Accepted", "expires": "soon"})
    assert bad_date.status_code == 422 and 'id="expires-error"' in bad_date.text and 'value="soon"' in bad_date.text
    async with harness.store.transaction() as session:
        with pytest.raises(Exception, match="not found"):
            await localauth.get_entry(session, OPERATOR, site_id=site.id, id_tag="OK")


async def add_tag(harness: ConsoleHarness, site_id: str, id_tag: str, status: str = "Accepted") -> None:
    async with harness.store.transaction() as session:
        await localauth.add_entry(
            session, OPERATOR, site_id=site_id, id_tag=id_tag, now=harness.clock.now(), status=status
        )


def tag_form(html: str) -> str:
    """The add-or-change form of the list page, after the rows' own forms."""
    return html.split('id="new-tag"', 1)[1]


async def stored_tag(harness: ConsoleHarness, site_id: str, id_tag: str) -> localauth.LocalAuthView:
    async with harness.store.read() as session:
        return await localauth.get_entry(session, OPERATOR, site_id=site_id, id_tag=id_tag)


async def test_a_tag_edited_meanwhile_shows_the_stale_message_keeps_what_was_typed_and_is_not_saved(
    harness: ConsoleHarness,
) -> None:
    site = await make_site(harness, harness.team.company_id)
    await add_tag(harness, site.id, "TAG-1")
    admin = await harness.signed_in("admin@acme.test")
    base = f"/console/sites/{site.id}/local-list"
    editing = await admin.get(base, params={"edit": "TAG-1"})
    version = version_on(tag_form(editing.text), base)
    assert version == "1" and 'value="TAG-1" autocomplete="off" required maxlength="36" readonly' in editing.text
    await add_tag(harness, site.id, "TAG-1", status="Blocked")  # another operator's save
    typed = {"id_tag": "TAG-1", "status": "Expired", "parent_id_tag": "PARENT-9", "version": version}
    stale = await post(admin, base, typed)
    assert stale.status_code == 409 and "changed by someone else meanwhile" in stale.text
    assert 'value="PARENT-9"' in stale.text and '<option value="Expired" selected>' in stale.text
    assert version_on(tag_form(stale.text), base) == "2"  # saving again is a deliberate overwrite of what is shown now
    entry = await stored_tag(harness, site.id, "TAG-1")
    assert (entry.status, entry.parent_id_tag, entry.version) == ("Blocked", None, 2)


async def test_a_tag_blocked_or_removed_from_an_older_version_is_not_changed(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    await add_tag(harness, site.id, "TAG-1")
    admin = await harness.signed_in("admin@acme.test")
    base = f"/console/sites/{site.id}/local-list"
    assert version_on((await admin.get(base)).text, f"{base}/block") == "1"
    await add_tag(harness, site.id, "TAG-1", status="Expired")  # another operator's save
    for verb in ("block", "remove"):
        stale = await post(admin, f"{base}/{verb}", {"id_tag": "TAG-1", "version": "1"})
        assert stale.status_code == 409 and "changed by someone else meanwhile" in stale.text
    assert (await stored_tag(harness, site.id, "TAG-1")).status == "Expired"


# --- protections ---------------------------------------------------------------------------------------------


def changes(site_id: str) -> list[tuple[str, dict[str, str]]]:
    """Every state-changing request of the Sites pages, aimed at the viewer's own company's objects."""
    return [
        ("/console/sites", {"name": "New"}),
        (f"/console/sites/{site_id}", {"name": "Renamed", "version": "1"}),
        (f"/console/sites/{site_id}/stations", {"station_id": "CS-NEW", "key": "none"}),
        (f"/console/sites/{site_id}/local-list", {"id_tag": "NEW", "status": "Accepted"}),
        (f"/console/sites/{site_id}/local-list/block", {"id_tag": "TAG"}),
        (f"/console/sites/{site_id}/local-list/expire", {"id_tag": "TAG"}),
        (f"/console/sites/{site_id}/local-list/accept", {"id_tag": "TAG"}),
        (f"/console/sites/{site_id}/local-list/remove", {"id_tag": "TAG"}),
        ("/console/stations/CS-1", {"key": "none", "version": "1"}),
        ("/console/stations/CS-1/delete", {"version": "1"}),
    ]


async def _fixture(harness: ConsoleHarness, company_id: str, station_id: str = "CS-1") -> str:
    site = await make_site(harness, company_id)
    await make_station(harness, site.id, station_id, password="k" * 20)
    async with harness.store.transaction() as session:
        await localauth.add_entry(session, OPERATOR, site_id=site.id, id_tag="TAG", now=harness.clock.now())
    return site.id


async def test_a_viewer_is_refused_every_change_with_403(harness: ConsoleHarness) -> None:
    site_id = await _fixture(harness, harness.team.company_id)
    viewer = await harness.signed_in("viewer@acme.test")
    before = await records(harness)
    for path, data in changes(site_id):
        response = await post(viewer, path, data)
        assert response.status_code == 403, path
        assert "this needs the admin role" in response.text
    assert await records(harness) == before


async def test_a_change_without_the_token_with_a_wrong_one_or_from_another_origin_is_403(
    harness: ConsoleHarness,
) -> None:
    site_id = await _fixture(harness, harness.team.company_id)
    admin = await harness.signed_in("admin@acme.test")
    token = await token_of(admin)
    for path, data in changes(site_id):
        assert (await admin.post(path, data=data, headers=ORIGIN)).status_code == 403, path
        assert (await admin.post(path, data={**data, "csrf_token": "wrong"}, headers=ORIGIN)).status_code == 403, path
        foreign = {"Origin": "https://evil.example"}
        assert (await admin.post(path, data={**data, "csrf_token": token}, headers=foreign)).status_code == 403, path
        cross_site = {"Sec-Fetch-Site": "cross-site"}  # no Origin: the fetch metadata decides
        assert (await admin.post(path, data={**data, "csrf_token": token}, headers=cross_site)).status_code == 403
    async with harness.store.transaction() as session:
        assert (await sites.get_site(session, OPERATOR, site_id)).name == "Depot"


async def test_another_companys_sites_stations_and_tags_are_not_found(harness: ConsoleHarness) -> None:
    theirs = await _fixture(harness, harness.team.other_company_id)
    admin = await harness.signed_in("admin@acme.test")
    for path in (f"/console/sites/{theirs}", f"/console/sites/{theirs}/local-list", "/console/stations/CS-1"):
        response = await admin.get(path)
        assert response.status_code == 404 and "belongs to another company" in response.text, path
    for path, data in changes(theirs)[1:]:
        assert (await post(admin, path, data)).status_code == 404, path
    assert theirs not in (await admin.get("/console/sites")).text
    async with harness.store.transaction() as session:
        assert (await sites.get_site(session, OPERATOR, theirs)).name == "Depot"
        assert (await stations.get_station(session, OPERATOR, "CS-1")).security_profile == 1


async def test_hostile_site_names_and_tags_are_text_everywhere_including_the_audit_log(harness: ConsoleHarness) -> None:
    admin = await harness.signed_in("admin@acme.test")
    created = await post(admin, "/console/sites", {"name": HOSTILE})
    site_path = created.headers["location"]
    site_id = site_path.rsplit("/", 1)[1]
    assert (
        await post(admin, f"{site_path}/local-list", {"id_tag": HOSTILE_TAG, "status": "Blocked"})
    ).status_code == 303
    harness.clock.advance(timedelta(seconds=1).total_seconds())
    for path in ("/console/sites", site_path, f"{site_path}/local-list", "/console/audit"):
        html = (await admin.get(path)).text
        assert HOSTILE not in html and "<b>x</b>" not in html, path
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in (await admin.get("/console/audit")).text
    assert {e.action for e in await records(harness)} >= {"site.create", "localauth.add"}
    assert site_id
