"""The console in Debian's Chromium: the flows an operator goes through, keyboard only where it matters, and an
axe-core scan of every page in its empty, filled and error states. Waits are on conditions, never on time."""

from __future__ import annotations

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser.console import (
    OWNER,
    PASSWORD,
    ServedConsole,
    assert_accessible,
    csp_complaints,
    follow,
    sign_in,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.fixture
def csp_violations(page: Page) -> list[str]:
    """Every Content-Security-Policy complaint the page logs: a flow must cause none (no inline script or style)."""
    return csp_complaints(page)


async def test_an_owner_signs_in_by_keyboard_creates_an_operator_and_finds_it_in_the_audit_log(
    page: Page, console: ServedConsole, csp_violations: list[str]
) -> None:
    await page.goto(f"{console.url}/")
    await expect(page).to_have_url(f"{console.url}/login?next=%2Fconsole%2F")
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("link", name="Skip to main content")).to_be_focused()
    await page.keyboard.press("Enter")  # the skip link lands on the page's main content, past the header
    await expect(page.locator("main")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(page.get_by_label("E-mail address")).to_be_focused()
    await page.keyboard.type(OWNER)
    await page.keyboard.press("Tab")
    await page.keyboard.type(PASSWORD)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Overview")).to_be_visible()

    await page.get_by_role("link", name="Operators").click()
    await page.get_by_label("E-mail address").fill("new@acme.test")
    await page.get_by_label("Role").select_option("admin")
    await page.get_by_label("Password", exact=True).fill("a fresh long password")
    await page.get_by_label("Password again").fill("a fresh long password")
    await page.get_by_role("button", name="Create operator").click()
    await expect(page.get_by_role("heading", name="Operator new@acme.test")).to_be_visible()

    await page.get_by_role("link", name="Audit log").click()
    await page.get_by_label("Action").fill("operator.create")
    await page.get_by_role("button", name="Filter").click()
    row = page.get_by_role("row").filter(has_text="new@acme.test")
    await expect(row).to_contain_text("operator owner@acme.test")
    await expect(row).to_contain_text("role: admin")
    assert "action=operator.create" in page.url  # the filtered view can be bookmarked
    assert not csp_violations


async def test_an_operator_changes_their_password_and_signs_in_with_the_new_one(
    page: Page, console: ServedConsole, csp_violations: list[str]
) -> None:
    await sign_in(page, console)
    await page.get_by_role("link", name=OWNER).click()
    await page.get_by_label("Current password").fill(PASSWORD)
    await page.get_by_label("New password", exact=True).fill("the next long password")
    await page.get_by_label("New password again").fill("the next long password")
    await page.get_by_role("button", name="Change password").click()
    await expect(page.get_by_role("status")).to_contain_text("Your password is changed")
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await sign_in(page, console, password="the next long password")
    assert not csp_violations


async def test_disabling_an_operator_asks_first_and_updates_in_place_through_htmx(
    page: Page, console: ServedConsole, csp_violations: list[str]
) -> None:
    await sign_in(page, console)
    await page.get_by_role("link", name="Operators").click()
    await page.get_by_label("E-mail address").fill("temp@acme.test")
    await page.get_by_label("Password", exact=True).fill("a fresh long password")
    await page.get_by_label("Password again").fill("a fresh long password")
    await page.get_by_role("button", name="Create operator").click()
    await expect(page.get_by_role("heading", name="Operator temp@acme.test")).to_be_visible()
    url = page.url
    page.once("dialog", lambda dialog: dialog.accept())
    await page.get_by_role("button", name="Disable operator").click()
    # Swapped in place: the same address, the new state, and the next action offered.
    await expect(page.get_by_role("button", name="Enable operator")).to_be_visible()
    await expect(page.locator("#operator-status")).to_contain_text("This operator is disabled")
    assert page.url == url
    assert not csp_violations


async def test_an_admin_creates_an_application_copies_its_secret_gets_a_token_and_rotates_it(
    browser: Browser, console: ServedConsole
) -> None:
    context = await browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = await context.new_page()
    try:
        await sign_in(page, console)
        await page.get_by_role("link", name="Applications").click()
        await page.get_by_label("Name", exact=True).fill("Fleet partner")
        await page.get_by_role("button", name="Create application").click()
        await expect(page.get_by_role("alert")).to_contain_text("it will not be shown again")
        client_id = await page.get_by_label("Client ID").input_value()
        await page.get_by_role("button", name="Copy secret").click()
        await expect(page.get_by_role("status")).to_have_text("Copied to the clipboard.")
        secret = await page.evaluate("navigator.clipboard.readText()")
        assert secret == await page.get_by_label("Client Secret").input_value()
        token_url = console.url.removesuffix("/console") + "/auth/oauth2/token"
        async with httpx.AsyncClient() as http:
            granted = await http.post(token_url, data={"grant_type": "client_credentials"}, auth=(client_id, secret))
            assert granted.status_code == 200

            await page.get_by_role("link", name="I have stored it").click()
            await expect(page.get_by_role("heading", name="Application Fleet partner")).to_be_visible()
            assert secret not in await page.content()
            page.once("dialog", lambda dialog: dialog.accept())
            await page.get_by_role("button", name="Rotate secret").click()
            await expect(page.get_by_role("alert")).to_contain_text("The previous secret has stopped working")
            rotated = await page.get_by_label("Client Secret").input_value()
            assert rotated != secret
            old = await http.post(token_url, data={"grant_type": "client_credentials"}, auth=(client_id, secret))
            assert old.status_code == 401
            new = await http.post(token_url, data={"grant_type": "client_credentials"}, auth=(client_id, rotated))
            assert new.status_code == 200
        await page.reload()  # the secret was swapped into the detail page: reloading shows the page, not the secret
        await expect(page.get_by_role("heading", name="Application Fleet partner")).to_be_visible()
        assert rotated not in await page.content()
    finally:
        await context.close()


async def test_every_page_passes_axe_in_its_empty_filled_and_error_states(
    browser: Browser, console: ServedConsole
) -> None:
    for viewport in ({"width": 1280, "height": 900}, {"width": 360, "height": 740}):
        context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
        page = await context.new_page()
        try:
            await _scan_every_page(page, console, f"{viewport['width']}px")
        finally:
            await context.close()


async def _scan_every_page(page: Page, console: ServedConsole, width: str) -> None:
    url = console.url
    await page.goto(f"{url}/login")
    await assert_accessible(page, f"{width} sign-in, empty")
    await page.get_by_label("E-mail address").fill(OWNER)
    await page.get_by_label("Password").fill("wrong password")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("alert")).to_be_visible()
    await assert_accessible(page, f"{width} sign-in, error")
    await sign_in(page, console)
    await assert_accessible(page, f"{width} overview")

    await page.goto(f"{url}/operators")
    await assert_accessible(page, f"{width} operators, one operator and an empty form")
    await page.get_by_label("E-mail address").fill("not an address@")
    await page.get_by_label("Password", exact=True).fill("short")
    await page.get_by_label("Password again").fill("short")
    # The browser's own checks would stop this form; the server's answer is what is scanned.
    await page.locator("form[aria-labelledby=new-operator]").evaluate("form => form.noValidate = true")
    await page.get_by_role("button", name="Create operator").click()
    await expect(page.get_by_role("alert")).to_be_visible()
    await assert_accessible(page, f"{width} operators, error")
    await page.get_by_label("E-mail address").fill(f"filled-{width}@acme.test")
    await page.get_by_label("Password", exact=True).fill("a fresh long password")
    await page.get_by_label("Password again").fill("a fresh long password")
    await page.get_by_role("button", name="Create operator").click()
    await expect(page.get_by_role("heading", name=f"Operator filled-{width}@acme.test")).to_be_visible()
    await assert_accessible(page, f"{width} operator detail")
    await page.goto(f"{url}/operators")
    await assert_accessible(page, f"{width} operators, filled")

    await page.goto(f"{url}/audit")
    await assert_accessible(page, f"{width} audit log, filled")
    await page.goto(f"{url}/audit?action=nothing.like.this")
    await assert_accessible(page, f"{width} audit log, empty")
    await page.goto(f"{url}/audit?since=not-a-day")
    await assert_accessible(page, f"{width} audit log, error")

    await page.goto(f"{url}/account/password")
    await assert_accessible(page, f"{width} password, empty")
    await page.get_by_label("Current password").fill("not the password")
    await page.get_by_label("New password", exact=True).fill("x")
    await page.get_by_label("New password again").fill("y")
    await page.get_by_role("button", name="Change password").click()
    await expect(page.get_by_role("alert")).to_be_visible()
    await assert_accessible(page, f"{width} password, error")

    await page.goto(f"{url}/applications")
    await assert_accessible(page, f"{width} applications, empty")
    await page.get_by_label("Name", exact=True).fill("   ")
    await page.locator("form[aria-labelledby=new-application]").evaluate("form => form.noValidate = true")
    await page.get_by_role("button", name="Create application").click()
    await expect(page.get_by_role("alert")).to_be_visible()
    await assert_accessible(page, f"{width} applications, error")
    await page.get_by_label("Name", exact=True).fill(f"Partner {width}")
    await page.get_by_role("button", name="Create application").click()
    await expect(page.get_by_label("Client Secret")).to_be_visible()
    await assert_accessible(page, f"{width} application created, secret shown")
    await follow(page, page.get_by_role("link", name="I have stored it"))
    await assert_accessible(page, f"{width} application detail")
    await page.get_by_label("JWKS document", exact=True).fill("not a key set")
    await page.get_by_role("button", name="Save public keys").click()
    await expect(page.get_by_role("alert")).to_be_visible()
    await assert_accessible(page, f"{width} application detail, keys refused")
    await page.goto(f"{url}/applications")
    await assert_accessible(page, f"{width} applications, filled")

    for key in ("groups", "webhooks"):
        await page.goto(f"{url}/{key}")
        await assert_accessible(page, f"{width} {key}, empty")
    await page.goto(f"{url}/operators/op_nonexistent")
    await assert_accessible(page, f"{width} not found")
