"""The Operators pages: owners only, protected changes, forms that name the wrong field and keep the input."""

from __future__ import annotations

import logging
import re

import pytest

from chargenet.domain.operators import Role
from chargenet.services import audit
from chargenet.services.callers import OPERATOR, OperatorCaller
from chargenet.services.pages import PageRequest
from tests.integration.console.conftest import ORIGIN, PASSWORD, ConsoleHarness, token_of
from tests.support.operators import add_operator


def changes(harness: ConsoleHarness) -> list[tuple[str, dict[str, str]]]:
    """Every state-changing operator request of the console, aimed at the admin of the owner's company."""
    target = harness.team.admin.id
    return [
        (
            "/console/operators",
            {"email": "new@acme.test", "role": "viewer", "password": PASSWORD, "password_again": PASSWORD},
        ),
        (f"/console/operators/{target}/role", {"role": "viewer"}),
        (f"/console/operators/{target}/disable", {}),
        (f"/console/operators/{target}/enable", {}),
    ]


@pytest.mark.parametrize("email", ["viewer@acme.test", "admin@acme.test"])
async def test_only_an_owner_sees_or_changes_operators(harness: ConsoleHarness, email: str) -> None:
    client = await harness.signed_in(email)
    token = await token_of(client)
    refused = await client.get("/console/operators")
    assert refused.status_code == 403 and "this needs the owner role" in refused.text
    assert 'aria-label="Console"' in refused.text  # shown within the console, navigation and all
    assert (await client.get(f"/console/operators/{harness.team.owner.id}")).status_code == 403
    for path, data in changes(harness):
        response = await client.post(path, data={**data, "csrf_token": token}, headers=ORIGIN)
        assert response.status_code == 403, path
    async with harness.store.transaction() as session:
        page = await audit.list_records(session, OPERATOR, PageRequest(), company_id=harness.team.company_id)
    assert {e.action for e in page.items} == {"company.create", "operator.create"}  # only the fixture's own


async def test_a_change_without_the_csrf_token_or_with_a_wrong_one_is_refused(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("owner@acme.test")
    for path, data in changes(harness):
        assert (await client.post(path, data=data, headers=ORIGIN)).status_code == 403, path
        wrong = {**data, "csrf_token": "not-the-token"}
        assert (await client.post(path, data=wrong, headers=ORIGIN)).status_code == 403, path
        header = {**ORIGIN, "X-CSRF-Token": "not-the-token"}
        assert (await client.post(path, data=data, headers=header)).status_code == 403, path


async def test_another_sessions_csrf_token_does_not_do(harness: ConsoleHarness) -> None:
    mine = await harness.signed_in("owner@acme.test")
    theirs = await harness.signed_in("owner@acme.test")
    path, data = changes(harness)[2]
    response = await mine.post(path, data={**data, "csrf_token": await token_of(theirs)}, headers=ORIGIN)
    assert response.status_code == 403


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
async def test_a_change_posted_from_another_origin_is_refused_even_with_the_token(
    harness: ConsoleHarness, headers: dict[str, str]
) -> None:
    client = await harness.signed_in("owner@acme.test")
    token = await token_of(client)
    for path, data in changes(harness):
        response = await client.post(path, data={**data, "csrf_token": token}, headers=headers)
        assert response.status_code == 403, path


async def test_another_companys_operator_is_not_found(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("owner@acme.test")
    token = await token_of(client)
    stranger = harness.team.stranger.id
    assert (await client.get(f"/console/operators/{stranger}")).status_code == 404
    for path in (f"/console/operators/{stranger}/role", f"/console/operators/{stranger}/disable"):
        response = await client.post(path, data={"csrf_token": token, "role": "viewer"}, headers=ORIGIN)
        assert response.status_code == 404, path
    listing = await client.get("/console/operators")
    assert "owner@other.test" not in listing.text and "viewer@acme.test" in listing.text


async def test_an_owner_creates_an_operator_who_can_sign_in_and_it_is_audited(
    harness: ConsoleHarness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = await harness.signed_in("owner@acme.test")
    secret = "fresh operator password"
    response = await client.post(
        "/console/operators",
        data={
            "email": "New@Acme.test",
            "role": "admin",
            "password": secret,
            "password_again": secret,
            "csrf_token": await token_of(client),
        },
        headers=ORIGIN,
    )
    assert response.status_code == 303
    shown = await client.get(response.headers["location"])
    assert "Operator new@acme.test" in shown.text and secret not in shown.text
    assert await harness.signed_in("new@acme.test", secret)
    log = await client.get("/console/audit")
    assert "operator.create" in log.text and "operator owner@acme.test" in log.text and "role: admin" in log.text
    assert secret not in log.text and secret not in caplog.text
    async with harness.store.transaction() as session:
        entries = await audit.list_records(session, OPERATOR, PageRequest(), company_id=harness.team.company_id)
    assert secret not in repr(entries)


@pytest.mark.parametrize(
    "form,field,message",
    [
        ({"email": "not an address", "role": "viewer"}, "email", "is not an e-mail address"),
        ({"email": "viewer@acme.test", "role": "viewer"}, "email", "is already used by another operator"),
        ({"email": "ok@acme.test", "role": "root"}, "role", "is not one of viewer, admin, owner"),
        (
            {"email": "ok@acme.test", "role": "viewer", "password": "short", "password_again": "short"},
            "password",
            "at least 12",
        ),
        ({"email": "ok@acme.test", "role": "viewer", "password_again": "something else!"}, "password_again", "differ"),
    ],
)
async def test_an_invalid_new_operator_is_422_with_the_field_named_and_the_input_kept(
    harness: ConsoleHarness, form: dict[str, str], field: str, message: str
) -> None:
    client = await harness.signed_in("owner@acme.test")
    data = {"password": PASSWORD, "password_again": PASSWORD, **form, "csrf_token": await token_of(client)}
    response = await client.post("/console/operators", data=data, headers=ORIGIN)
    assert response.status_code == 422
    assert f'id="{field}" ' in response.text and f'aria-describedby="{field}-error"' in response.text
    assert message in response.text
    assert f'value="{form["email"]}"' in response.text
    assert PASSWORD not in response.text  # a password is never sent back


async def test_disabling_an_operator_ends_their_session_at_once(harness: ConsoleHarness) -> None:
    owner = await harness.signed_in("owner@acme.test")
    admin = await harness.signed_in("admin@acme.test")
    assert (await admin.get("/console/")).status_code == 200
    response = await owner.post(
        f"/console/operators/{harness.team.admin.id}/disable",
        data={"csrf_token": await token_of(owner)},
        headers=ORIGIN,
    )
    assert response.status_code == 303
    assert (await admin.get("/console/")).status_code == 303
    denied = await harness.client().post(
        "/console/login", data={"email": "admin@acme.test", "password": PASSWORD}, headers=ORIGIN
    )
    assert denied.status_code == 401


async def test_htmx_disables_with_the_header_token_and_gets_the_status_fragment(harness: ConsoleHarness) -> None:
    owner = await harness.signed_in("owner@acme.test")
    headers = {**ORIGIN, "HX-Request": "true", "X-CSRF-Token": await token_of(owner)}
    response = await owner.post(f"/console/operators/{harness.team.viewer.id}/disable", headers=headers)
    assert response.status_code == 200
    assert response.text.startswith('<section id="operator-status"') and "disabled" in response.text
    own = await owner.post(f"/console/operators/{harness.team.owner.id}/disable", headers=headers)
    assert own.status_code == 409 and "cannot disable their own account" in own.text
    assert own.text.startswith('<section id="operator-status"')


async def test_a_role_change_sent_from_an_outdated_page_is_refused(harness: ConsoleHarness) -> None:
    owner = await harness.signed_in("owner@acme.test")
    token = await token_of(owner)
    target = harness.team.viewer
    path = f"/console/operators/{target.id}/role"
    first = await owner.post(
        path, data={"csrf_token": token, "role": "admin", "version": str(target.version)}, headers=ORIGIN
    )
    assert first.status_code == 303
    second = await owner.post(
        path, data={"csrf_token": token, "role": "owner", "version": str(target.version)}, headers=ORIGIN
    )
    assert second.status_code == 409 and "changed by someone else" in second.text


async def test_hostile_strings_are_shown_as_text(harness: ConsoleHarness) -> None:
    from chargenet.services import operators

    hostile = "<script>alert(1)</script>@x.test"
    await operators.create_operator(
        harness.store.transaction,
        harness.console.passwords,
        # An owner whose name is itself hostile, as the audit log shows who acted.
        OperatorCaller("op_x", harness.team.company_id, '"><img src=x onerror=alert(2)>', Role.OWNER),
        company_id=harness.team.company_id,
        email=hostile,
        role="viewer",
        password=PASSWORD,
        now=harness.clock.now(),
    )
    owner = await harness.signed_in("owner@acme.test")
    for page in (await owner.get("/console/operators"), await owner.get("/console/audit?actor=%3Cscript%3E")):
        assert "<script>alert" not in page.text and "<img src=x" not in page.text
    listing = await owner.get("/console/operators")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;@x.test" in listing.text
    log = await owner.get("/console/audit")
    assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in log.text
    echoed = await owner.get("/console/audit", params={"actor": '"><script>x</script>'})
    assert 'value="&#34;&gt;&lt;script&gt;x&lt;/script&gt;"' in echoed.text


async def test_the_operators_list_pages_by_email(harness: ConsoleHarness) -> None:
    for n in range(50):  # with the fixture's own three: 53, a page of 50 and one of 3
        await add_operator(
            harness.store.transaction,
            harness.console.passwords,
            harness.clock.now(),
            company_id=harness.team.company_id,
            email=f"robot{n:02}@acme.test",
            role="viewer",
        )
    owner = await harness.signed_in("owner@acme.test")
    first = await owner.get("/console/operators")
    assert first.text.count("@acme.test</a></td>") == 50 and "robot47@acme.test" in first.text
    next_url = re.search(r'href="([^"]+)">Next page', first.text)
    assert next_url is not None
    second = await owner.get(next_url.group(1).replace("&amp;", "&"))
    assert second.text.count("@acme.test</a></td>") == 3 and "Next page" not in second.text
    assert "robot48@acme.test" in second.text and "viewer@acme.test" in second.text
    edited = await owner.get("/console/operators", params={"after": "not a cursor"})
    assert edited.status_code == 200 and edited.text.count("@acme.test</a></td>") == 50
