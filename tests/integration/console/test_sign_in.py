"""Signing in and out, the session cookie, session expiry and the limits on failed sign-ins."""

from __future__ import annotations

import logging

import pytest

from chargenet.console import protection
from tests.integration.console.conftest import ORIGIN, PASSWORD, ConsoleHarness, csrf_of

PAGES = ["/console/", "/console/operators", "/console/audit", "/console/account/password", "/console/sites"]


@pytest.mark.parametrize("path", PAGES)
async def test_every_page_sends_a_visitor_who_is_not_signed_in_to_the_sign_in_page(
    harness: ConsoleHarness, path: str
) -> None:
    response = await harness.client().get(path)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/console/login?next=")


async def test_signing_in_sets_an_httponly_samesite_cookie_for_the_console_path_only(harness: ConsoleHarness) -> None:
    client = harness.client()
    response = await client.post(
        "/console/login", data={"email": "owner@acme.test", "password": PASSWORD}, headers=ORIGIN
    )
    assert response.status_code == 303 and response.headers["location"] == "/console/"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/console" in cookie
    assert "Secure" not in cookie  # the public URL is http
    overview = await client.get("/console/")
    assert overview.status_code == 200 and "owner@acme.test" in overview.text


def test_the_cookie_is_secure_when_the_public_url_is_https() -> None:
    policy = protection.CookiePolicy.for_public_url("https://cpo.example/charging")
    assert policy.path == "/charging/console"
    assert "; Secure" in policy.set_cookie("x")


async def test_a_wrong_password_keeps_the_email_and_says_nothing_about_which_was_wrong(
    harness: ConsoleHarness,
) -> None:
    client = harness.client()
    for email in ("owner@acme.test", "nobody@acme.test"):
        response = await client.post(
            "/console/login", data={"email": email, "password": "not the password"}, headers=ORIGIN
        )
        assert response.status_code == 401
        assert "The e-mail address or the password is wrong." in response.text
        assert f'value="{email}"' in response.text
        assert "set-cookie" not in response.headers


async def test_signing_in_makes_a_new_session_id_and_ends_the_one_the_browser_brought(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("owner@acme.test")
    first = client.cookies[protection.COOKIE_NAME]
    response = await client.post(
        "/console/login", data={"email": "owner@acme.test", "password": PASSWORD}, headers=ORIGIN
    )
    assert response.status_code == 303
    assert client.cookies[protection.COOKIE_NAME] != first
    stale = harness.client()
    stale.cookies.set(protection.COOKIE_NAME, first)
    assert (await stale.get("/console/")).status_code == 303


async def test_signing_out_ends_the_session_on_the_server(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("viewer@acme.test")
    token = client.cookies[protection.COOKIE_NAME]
    page = await client.get("/console/")
    response = await client.post("/console/logout", data={"csrf_token": csrf_of(page.text)}, headers=ORIGIN)
    assert response.status_code == 303 and response.headers["location"] == "/console/login"
    replay = harness.client()
    replay.cookies.set(protection.COOKIE_NAME, token)
    assert (await replay.get("/console/")).status_code == 303


async def test_a_session_ends_after_30_idle_minutes(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("viewer@acme.test")
    harness.clock.advance(29 * 60)
    assert (await client.get("/console/")).status_code == 200
    harness.clock.advance(29 * 60)
    assert (await client.get("/console/")).status_code == 200
    harness.clock.advance(30 * 60)
    assert (await client.get("/console/")).status_code == 303


async def test_a_busy_session_still_ends_12_hours_after_signing_in(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("viewer@acme.test")
    for _ in range(24):
        harness.clock.advance(29 * 60)
        assert (await client.get("/console/")).status_code == 200
    harness.clock.advance(24 * 60)
    assert (await client.get("/console/")).status_code == 303


async def test_after_five_failures_an_account_is_refused_even_with_the_right_password(harness: ConsoleHarness) -> None:
    for attempt in range(5):
        wrong = await harness.client(f"192.0.2.{attempt + 1}").post(
            "/console/login", data={"email": "owner@acme.test", "password": "guess number one"}, headers=ORIGIN
        )
        assert wrong.status_code == 401
    refused = await harness.client("198.51.100.7").post(
        "/console/login", data={"email": "owner@acme.test", "password": PASSWORD}, headers=ORIGIN
    )
    assert refused.status_code == 401 and "The e-mail address or the password is wrong." in refused.text
    # Another account is not affected, and the lock lifts after 15 minutes.
    assert await harness.signed_in("admin@acme.test")
    harness.clock.advance(15 * 60)
    assert await harness.signed_in("owner@acme.test")


async def test_after_twenty_failures_an_address_is_refused_for_every_account(harness: ConsoleHarness) -> None:
    client = harness.client("203.0.113.9")
    for attempt in range(20):
        await client.post(
            "/console/login", data={"email": f"guess{attempt}@acme.test", "password": "x" * 12}, headers=ORIGIN
        )
    refused = await client.post(
        "/console/login", data={"email": "viewer@acme.test", "password": PASSWORD}, headers=ORIGIN
    )
    assert refused.status_code == 401
    assert await harness.signed_in("viewer@acme.test", address="203.0.113.10")


async def test_a_sign_in_posted_from_another_site_is_refused(harness: ConsoleHarness) -> None:
    response = await harness.client().post(
        "/console/login",
        data={"email": "owner@acme.test", "password": PASSWORD},
        headers={"Origin": "https://evil.example"},
    )
    assert response.status_code == 403 and "set-cookie" not in response.headers


async def test_after_signing_in_the_console_goes_back_only_to_its_own_pages(harness: ConsoleHarness) -> None:
    for given, expected in (
        ("/console/audit?action=operator.create", "/console/audit?action=operator.create"),
        ("//evil.example/console/", "/console/"),
        ("https://evil.example/", "/console/"),
        ("/elsewhere", "/console/"),
    ):
        response = await harness.client().post(
            "/console/login",
            data={"email": "owner@acme.test", "password": PASSWORD, "next": given},
            headers=ORIGIN,
        )
        assert response.headers["location"] == expected, given


async def test_no_password_reaches_the_logs(harness: ConsoleHarness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    await harness.client().post(
        "/console/login", data={"email": "owner@acme.test", "password": "a wrong password here"}, headers=ORIGIN
    )
    await harness.signed_in("owner@acme.test")
    assert "a wrong password here" not in caplog.text and PASSWORD not in caplog.text
