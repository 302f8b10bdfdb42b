"""Overview, audit log, own password, the pages still to come, and the headers every answer carries."""

from __future__ import annotations

from pathlib import Path

from chargenet.console import protection
from chargenet.keys import KeyStore
from chargenet.services import audit, sites
from chargenet.services.callers import OPERATOR, Actor, Face
from tests.factories import add_station
from tests.integration.console.conftest import ORIGIN, PASSWORD, ConsoleHarness, csrf_of


async def test_every_answer_carries_the_csp_and_pages_are_not_stored(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("viewer@acme.test")
    for path in ("/console/login", "/console/", "/console/nowhere", "/console/static/console.css"):
        response = await client.get(path)
        assert response.headers["content-security-policy"] == protection.CONTENT_SECURITY_POLICY, path
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
        assert response.headers["referrer-policy"] == "same-origin"
        assert response.headers["x-content-type-options"] == "nosniff"
    assert (await client.get("/console/")).headers["cache-control"] == "no-store"
    assert (await client.get("/console/nowhere")).status_code == 404


async def test_pages_have_no_inline_script_and_load_only_their_own_assets(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("owner@acme.test")
    pages = [(await harness.client().get("/console/login")).text]
    for path in ("/console/", "/console/operators", "/console/audit", "/console/account/password"):
        pages.append((await client.get(path)).text)
    for html in pages:
        assert (
            "<script>" not in html
            and " on" + "click=" not in html
            and "http://" not in html.replace("http://console.test", "")
        )
        assert '<script src="/console/static/vendor/htmx.min.js" defer></script>' in html
    htmx = await client.get("/console/static/vendor/htmx.min.js")
    assert htmx.status_code == 200 and "javascript" in htmx.headers["content-type"]


async def test_the_body_carries_the_csrf_header_for_htmx_as_inherited(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("owner@acme.test")
    html = (await client.get("/console/")).text
    token = csrf_of((await client.get("/console/account/password")).text)
    assert f'hx-headers:inherited="{{&#34;X-CSRF-Token&#34;: &#34;{token}&#34;}}"' in html


async def test_the_overview_counts_only_the_operators_company(harness: ConsoleHarness, tmp_path: Path) -> None:
    store_keys = KeyStore(tmp_path / "keys")
    store_keys.ensure()
    async with harness.store.transaction() as session:
        for company_id, count in ((harness.team.company_id, 2), (harness.team.other_company_id, 5)):
            site = await sites.create_site(
                session,
                OPERATOR,
                store_keys.credential_cipher(),
                company_id=company_id,
                name="Depot",
                now=harness.clock.now(),
            )
            for n in range(count):
                await add_station(session, store_keys, site.id, f"{company_id[-4:]}-{n}", harness.clock.now())
    page = await (await harness.signed_in("viewer@acme.test")).get("/console/")
    assert '<dt>Sites</dt><dd><a href="/console/sites">1</a></dd>' in page.text
    assert "<dt>Stations</dt><dd>2</dd>" in page.text
    assert '<dt>Stations offline</dt><dd><a href="/console/connectors?connection=offline">2</a></dd>' in page.text


async def test_the_audit_log_filters_by_get_parameters_and_pages_by_keyset(harness: ConsoleHarness) -> None:
    async with harness.store.transaction() as session:
        for n in range(120):
            harness.clock.advance(60)
            await audit.record(
                session,
                Actor(f"operator robot{n % 2}@acme.test", Face.API),
                company_id=harness.team.company_id,
                action="application.enable" if n % 2 else "application.disable",
                object_type="application",
                object_id=f"app-{n}",
                now=harness.clock.now(),
            )
    client = await harness.signed_in("viewer@acme.test")
    first = await client.get("/console/audit", params={"action": "application.enable"})
    assert first.status_code == 200
    assert first.text.count("<td>application.enable</td>") == 50 and "application.disable" not in first.text
    assert "app-119" in first.text and 'value="application.enable"' in first.text
    older = first.text.split('href="/console/audit?')[1].split('"')[0].replace("&amp;", "&")
    assert "action=application.enable" in older and "after=" in older
    second = await client.get(f"/console/audit?{older}")
    assert second.text.count("<td>application.enable</td>") == 10 and "Older entries" not in second.text
    assert "app-119 " not in second.text and "app-1<" in second.text.replace("</td>", "<")
    assert (await client.get("/console/audit", params={"actor": "robot1"})).text.count("robot1@acme.test") == 50


async def test_an_invalid_audit_filter_is_422_naming_the_field_and_keeping_the_rest(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("viewer@acme.test")
    response = await client.get("/console/audit", params={"since": "yesterday", "actor": "ana"})
    assert response.status_code == 422
    assert 'aria-describedby="since-error"' in response.text and "is not a date" in response.text
    assert 'value="ana"' in response.text


async def test_another_companys_audit_records_are_never_shown(harness: ConsoleHarness) -> None:
    async with harness.store.transaction() as session:
        await audit.record(
            session,
            OPERATOR.actor,
            company_id=harness.team.other_company_id,
            action="site.create",
            object_type="site",
            object_id="their-site",
            now=harness.clock.now(),
        )
    page = await (await harness.signed_in("owner@acme.test")).get("/console/audit", params={"object_id": "their-site"})
    assert "their-site</td>" not in page.text and "Nothing recorded" in page.text


async def test_the_audit_log_names_each_object_and_links_to_its_page_with_its_id_beside(
    harness: ConsoleHarness, tmp_path: Path
) -> None:
    store_keys = KeyStore(tmp_path / "keys")
    store_keys.ensure()
    async with harness.store.transaction() as session:
        site = await sites.create_site(
            session,
            OPERATOR,
            store_keys.credential_cipher(),
            company_id=harness.team.company_id,
            name="Harbour <North>",
            now=harness.clock.now(),
        )
    page = await (await harness.signed_in("viewer@acme.test")).get("/console/audit", params={"object_type": "site"})
    assert f'<a href="/console/sites/{site.id}">Harbour &lt;North&gt;</a>' in page.text
    assert f'<code class="hint" title="Site ID">{site.id}</code>' in page.text


async def test_an_operator_changes_their_own_password_and_the_other_sessions_end(harness: ConsoleHarness) -> None:
    here = await harness.signed_in("viewer@acme.test")
    elsewhere = await harness.signed_in("viewer@acme.test")
    token = csrf_of((await here.get("/console/account/password")).text)
    new = "a brand new password"
    mismatch = await here.post(
        "/console/account/password",
        data={"csrf_token": token, "current_password": PASSWORD, "new_password": new, "new_password_again": "other"},
        headers=ORIGIN,
    )
    assert mismatch.status_code == 422 and 'aria-describedby="new_password_again-error"' in mismatch.text
    wrong = await here.post(
        "/console/account/password",
        data={
            "csrf_token": token,
            "current_password": "not my password",
            "new_password": new,
            "new_password_again": new,
        },
        headers=ORIGIN,
    )
    assert wrong.status_code == 422 and "is not your current password" in wrong.text
    done = await here.post(
        "/console/account/password",
        data={"csrf_token": token, "current_password": PASSWORD, "new_password": new, "new_password_again": new},
        headers=ORIGIN,
    )
    assert done.status_code == 200 and "Your password is changed" in done.text
    assert new not in done.text and PASSWORD not in done.text
    assert (await here.get("/console/")).status_code == 200
    assert (await elsewhere.get("/console/")).status_code == 303
    assert await harness.signed_in("viewer@acme.test", new)


async def test_a_viewer_may_change_their_own_password_but_nothing_of_the_company(harness: ConsoleHarness) -> None:
    viewer = await harness.signed_in("viewer@acme.test")
    page = await viewer.get("/console/")
    assert 'href="/console/operators"' not in page.text  # the navigation offers only what the role may see
    assert 'href="/console/audit"' in page.text


async def test_every_page_of_the_navigation_is_built_and_marked_current(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("viewer@acme.test")
    for key in ("sites", "applications", "groups", "webhooks", "meters", "audit"):
        response = await client.get(f"/console/{key}")
        assert response.status_code == 200, key
        assert f'href="/console/{key}" aria-current="page"' in response.text, key


async def test_an_edited_cursor_on_any_list_is_its_first_page(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("viewer@acme.test")
    for key in ("sites", "applications", "groups", "webhooks", "meters", "audit", "sessions"):
        for edited in ("!!!", "YWJj", "A"):
            response = await client.get(f"/console/{key}", params={"after": edited, "before": edited})
            assert response.status_code == 200, (key, edited)
