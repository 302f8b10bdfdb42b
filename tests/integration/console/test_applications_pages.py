"""The Applications pages: the secret shown once, then never again (pages, audit log, logs); admins change,
viewers read; another company's application is not found."""

from __future__ import annotations

import json
import logging
import re

import httpx
import pytest

from chargenet.services import applications, audit
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from tests.integration.console.conftest import ORIGIN, ConsoleHarness, token_of

JWKS = {
    "keys": [
        {
            "kty": "EC",
            "crv": "P-256",
            "kid": "partner-2026",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
        }
    ]
}


def secret_in(html: str) -> tuple[str, str]:
    client_id = re.search(r'id="client_id" type="text" value="([^"]+)"', html)
    secret = re.search(r'id="client_secret" type="text" value="([^"]+)"', html)
    assert client_id and secret, "no credentials on the page"
    return client_id.group(1), secret.group(1)


async def create(client: httpx.AsyncClient, name: str) -> tuple[str, str, httpx.Response]:
    response = await client.post(
        "/console/applications", data={"name": name, "csrf_token": await token_of(client)}, headers=ORIGIN
    )
    assert response.status_code == 200, response.text
    return (*secret_in(response.text), response)


async def test_a_created_applications_secret_is_shown_once_with_a_warning_and_a_copy_button(
    harness: ConsoleHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    admin = await harness.signed_in("admin@acme.test")
    client_id, secret, shown = await create(admin, "Fleet partner")
    assert "it will not be shown again" in shown.text and 'data-copy="client_secret"' in shown.text
    assert shown.headers["cache-control"] == "no-store"
    for path in ("/console/applications", f"/console/applications/{client_id}", "/console/audit", "/console/"):
        page = await admin.get(path)
        assert page.status_code == 200 and secret not in page.text, path
    assert "Fleet partner" in (await admin.get("/console/applications")).text
    async with harness.store.transaction() as session:
        entries = await audit.list_records(session, OPERATOR, PageRequest(), company_id=harness.team.company_id)
        assert await applications.get_application(session, OPERATOR, client_id)
    assert entries.items[0].action == "application.create" and entries.items[0].object_id == client_id
    assert secret not in repr(entries) and secret not in caplog.text


async def test_rotating_shows_the_new_secret_once_and_audits_it(harness: ConsoleHarness) -> None:
    admin = await harness.signed_in("admin@acme.test")
    client_id, first, _ = await create(admin, "Fleet partner")
    rotated = await admin.post(
        f"/console/applications/{client_id}/rotate-secret",
        data={"csrf_token": await token_of(admin)},
        headers=ORIGIN,
    )
    assert rotated.status_code == 200 and "The previous secret has stopped working" in rotated.text
    same_id, second = secret_in(rotated.text)
    assert same_id == client_id and second != first
    assert second not in (await admin.get(f"/console/applications/{client_id}")).text
    assert "application.rotate-secret" in (await admin.get("/console/audit")).text


async def test_an_admin_disables_enables_and_deletes_an_application(harness: ConsoleHarness) -> None:
    admin = await harness.signed_in("admin@acme.test")
    client_id, _, _ = await create(admin, "Fleet partner")
    token = await token_of(admin)
    base = f"/console/applications/{client_id}"
    assert (await admin.post(f"{base}/disable", data={"csrf_token": token}, headers=ORIGIN)).status_code == 303
    assert "<dd>disabled</dd>" in (await admin.get(base)).text
    assert (await admin.post(f"{base}/enable", data={"csrf_token": token}, headers=ORIGIN)).status_code == 303
    deleted = await admin.post(f"{base}/delete", data={"csrf_token": token}, headers={**ORIGIN, "HX-Request": "true"})
    assert deleted.headers["hx-redirect"] == "/console/applications"
    assert (await admin.get(base)).status_code == 404
    log = (await admin.get("/console/audit")).text
    for action in ("application.disable", "application.enable", "application.delete"):
        assert action in log


async def test_a_viewer_reads_applications_but_changes_none(harness: ConsoleHarness) -> None:
    admin = await harness.signed_in("admin@acme.test")
    client_id, _, _ = await create(admin, "Fleet partner")
    viewer = await harness.signed_in("viewer@acme.test")
    token = await token_of(viewer)
    listing = await viewer.get("/console/applications")
    assert listing.status_code == 200 and "Fleet partner" in listing.text and "Create application" not in listing.text
    assert "Rotate secret" not in (await viewer.get(f"/console/applications/{client_id}")).text
    for path in (
        "/console/applications",
        f"/console/applications/{client_id}/disable",
        f"/console/applications/{client_id}/enable",
        f"/console/applications/{client_id}/rotate-secret",
        f"/console/applications/{client_id}/keys",
        f"/console/applications/{client_id}/delete",
    ):
        response = await viewer.post(path, data={"csrf_token": token, "name": "x"}, headers=ORIGIN)
        assert response.status_code == 403, path


async def test_another_companys_application_is_not_found(harness: ConsoleHarness) -> None:
    async with harness.store.transaction() as session:
        theirs = await applications.create_application(
            session,
            OPERATOR,
            harness.console.secret_hasher,  # type: ignore[arg-type]
            company_id=harness.team.other_company_id,
            name="Theirs",
            now=harness.clock.now(),
        )
    admin = await harness.signed_in("admin@acme.test")
    token = await token_of(admin)
    assert (await admin.get(f"/console/applications/{theirs.client_id}")).status_code == 404
    for verb in ("disable", "enable", "rotate-secret", "delete"):
        response = await admin.post(
            f"/console/applications/{theirs.client_id}/{verb}", data={"csrf_token": token}, headers=ORIGIN
        )
        assert response.status_code == 404, verb
    assert "Theirs" not in (await admin.get("/console/applications")).text


async def test_a_change_without_the_token_or_from_another_origin_is_refused(harness: ConsoleHarness) -> None:
    admin = await harness.signed_in("admin@acme.test")
    client_id, _, _ = await create(admin, "Fleet partner")
    token = await token_of(admin)
    path = f"/console/applications/{client_id}/rotate-secret"
    assert (await admin.post(path, headers=ORIGIN)).status_code == 403
    assert (
        await admin.post(path, data={"csrf_token": token}, headers={"Origin": "https://evil.example"})
    ).status_code == 403
    assert (await admin.post("/console/applications", data={"name": "x"}, headers=ORIGIN)).status_code == 403


async def test_an_empty_name_is_422_naming_the_field_and_a_hostile_name_is_shown_as_text(
    harness: ConsoleHarness,
) -> None:
    admin = await harness.signed_in("admin@acme.test")
    response = await admin.post(
        "/console/applications", data={"name": "   ", "csrf_token": await token_of(admin)}, headers=ORIGIN
    )
    assert response.status_code == 422 and 'aria-describedby="name-error"' in response.text
    hostile = "<img src=x onerror=alert(1)>"
    _, _, shown = await create(admin, hostile)
    for html in (shown.text, (await admin.get("/console/applications")).text, (await admin.get("/console/audit")).text):
        assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


async def test_a_change_from_a_page_older_than_the_application_is_refused_and_changes_nothing(
    harness: ConsoleHarness,
) -> None:
    admin = await harness.signed_in("admin@acme.test")
    client_id, _, _ = await create(admin, "Fleet partner")
    shown = (await admin.get(f"/console/applications/{client_id}")).text
    version = re.search(r'name="version" value="(\d+)"', shown)
    assert version is not None
    token = await token_of(admin)
    base = f"/console/applications/{client_id}"
    # Another operator disables it meanwhile; this page still offers "Disable" and carries the old version.
    assert (await admin.post(f"{base}/disable", data={"csrf_token": token}, headers=ORIGIN)).status_code == 303
    stale = await admin.post(
        f"{base}/rotate-secret", data={"csrf_token": token, "version": version.group(1)}, headers=ORIGIN
    )
    assert stale.status_code == 409 and "changed by someone else" in stale.text
    log = (await admin.get("/console/audit")).text
    assert "application.rotate-secret" not in log


async def test_the_list_finds_applications_by_part_of_their_name_or_client_id(harness: ConsoleHarness) -> None:
    admin = await harness.signed_in("admin@acme.test")
    billing, _, _ = await create(admin, "Billing")
    roaming, _, _ = await create(admin, "Roaming Hub")
    found = (await admin.get("/console/applications", params={"find": "hub"})).text
    assert roaming in found and billing not in found
    by_id = (await admin.get("/console/applications", params={"find": billing[-6:].upper()})).text
    assert billing in by_id and roaming not in by_id
    none = (await admin.get("/console/applications", params={"find": "100%_"})).text
    assert "No application matches." in none and billing not in none


async def test_an_admin_registers_public_keys_as_a_document_and_removes_them(harness: ConsoleHarness) -> None:
    admin = await harness.signed_in("admin@acme.test")
    client_id, _, _ = await create(admin, "Fleet partner")
    base = f"/console/applications/{client_id}"
    assert "none: the application authenticates with its secret only" in (await admin.get(base)).text
    saved = await admin.post(
        f"{base}/keys", data={"csrf_token": await token_of(admin), "jwks": json.dumps(JWKS)}, headers=ORIGIN
    )
    assert saved.status_code == 303
    shown = (await admin.get(base)).text
    assert "1 registered" in shown and "<code>partner-2026</code> (EC)" in shown
    assert "application.set-keys" in (await admin.get("/console/audit")).text
    removed = await admin.post(f"{base}/keys", data={"csrf_token": await token_of(admin)}, headers=ORIGIN)
    assert removed.status_code == 303
    assert "none: the application authenticates with its secret only" in (await admin.get(base)).text


async def test_an_admin_sets_a_rate_limit_of_its_own_and_back_the_default_and_a_bad_one_is_422(
    harness: ConsoleHarness,
) -> None:
    admin = await harness.signed_in("admin@acme.test")
    client_id, _, _ = await create(admin, "Fleet partner")
    base = f"/console/applications/{client_id}"
    assert "600 (the default)" in (await admin.get(base)).text
    saved = await admin.post(
        f"{base}/rate-limit", data={"csrf_token": await token_of(admin), "rate_limit": "1200"}, headers=ORIGIN
    )
    assert saved.status_code == 303
    assert 'id="rate_limit" name="rate_limit" type="text" value="1200"' in (await admin.get(base)).text
    assert "application.set-rate-limit" in (await admin.get("/console/audit")).text
    for typed in ("0", "ten", "12.5"):
        refused = await admin.post(
            f"{base}/rate-limit", data={"csrf_token": await token_of(admin), "rate_limit": typed}, headers=ORIGIN
        )
        assert refused.status_code == 422
        assert 'aria-describedby="rate_limit-error"' in refused.text
        assert "The public keys were not changed" not in refused.text
    back = await admin.post(f"{base}/rate-limit", data={"csrf_token": await token_of(admin)}, headers=ORIGIN)
    assert back.status_code == 303
    assert "600 (the default)" in (await admin.get(base)).text


async def test_a_private_key_or_a_private_url_is_422_naming_the_field_and_nothing_is_stored(
    harness: ConsoleHarness,
) -> None:
    admin = await harness.signed_in("admin@acme.test")
    client_id, _, _ = await create(admin, "Fleet partner")
    base = f"/console/applications/{client_id}"
    private = {"keys": [{**JWKS["keys"][0], "d": "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}]}
    for fields, field, words in (
        ({"jwks": json.dumps(private)}, "jwks", "private key"),
        ({"jwks": "not json"}, "jwks", "not JSON"),
        ({"jwks_url": "http://10.1.2.3/jwks.json"}, "jwks_url", "private"),
    ):
        refused = await admin.post(f"{base}/keys", data={"csrf_token": await token_of(admin), **fields}, headers=ORIGIN)
        assert refused.status_code == 422
        assert f'id="{field}" ' in refused.text and f'aria-describedby="{field}-error"' in refused.text
        assert words in refused.text
    async with harness.store.transaction() as session:
        shown = await applications.get_application(session, OPERATOR, client_id)
    assert (shown.jwks, shown.jwks_url) == (None, None)
