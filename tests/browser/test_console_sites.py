"""The Sites and Meters pages in Debian's Chromium: the main flow (a site, a station whose generated key is shown
once, a tag on the site's local list, by keyboard), and an axe-core scan of each page in its empty, filled and
error states, wide and narrow. Waits are on conditions, never on time."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, Page, expect

from chargenet.services import localauth, sites, webhooks
from chargenet.services.callers import OPERATOR
from chargenet.webhooks.outbound_auth import NoAuth
from tests.browser.console import ServedConsole, assert_accessible, csp_complaints, follow, sign_in
from tests.factories import add_station

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_an_admin_creates_a_site_and_a_station_sees_its_key_once_and_lists_a_tag(
    browser: Browser, console: ServedConsole
) -> None:
    context = await browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = await context.new_page()
    complaints = csp_complaints(page)
    try:
        await sign_in(page, console)
        await page.get_by_role("link", name="Sites").click()
        await expect(page.get_by_role("cell", name="No sites yet.")).to_be_visible()
        await page.get_by_label("Name", exact=True).fill("Harbour <depot>")
        await page.get_by_label("Upstream URL (optional)").fill("wss://cpo.example/ocpp")
        await page.get_by_label("Upstream password (optional)").fill("upstream-secret")
        await page.get_by_role("button", name="Create site").click()
        await expect(page.get_by_role("heading", name="Site Harbour <depot>")).to_be_visible()
        await expect(page.locator("#upstream + dl.facts")).to_contain_text("Upstream passwordset")

        await page.get_by_label("Station ID").fill("CS-HARBOUR")
        await page.get_by_label("Connectors per charge point (optional)").fill("2")
        await expect(page.get_by_label("Generate a key (recommended): shown once, on the next page")).to_be_checked()
        await page.get_by_role("button", name="Create station").click()
        await expect(page.get_by_role("alert")).to_contain_text("it will not be shown again")
        key = await page.get_by_label("Authorization key").input_value()
        assert 16 <= len(key) <= 40
        await page.get_by_role("button", name="Copy key").click()
        await expect(page.get_by_role("status")).to_have_text("Copied to the clipboard.")
        assert await page.evaluate("navigator.clipboard.readText()") == key
        await page.get_by_role("link", name="I have stored it").click()
        await expect(page.get_by_role("heading", name="Station CS-HARBOUR")).to_be_visible()
        await expect(page.get_by_role("table")).to_have_count(1)
        assert key not in await page.content()
        await page.reload()
        await expect(page.get_by_role("heading", name="Station CS-HARBOUR")).to_be_visible()
        assert key not in await page.content()

        # The trail leads back up the tree; the list is reached and filled by keyboard.
        await page.get_by_role("navigation", name="Where you are").get_by_role("link", name="Harbour <depot>").click()
        await page.get_by_role("link", name="Local authorization list").click()
        await expect(page.get_by_role("cell", name="The list is empty.")).to_be_visible()
        await page.get_by_label("idTag", exact=True).focus()
        await page.keyboard.type("04A1B2C3")
        await page.keyboard.press("Tab")
        await expect(page.get_by_role("form", name="Add or change a tag").get_by_label("Status")).to_be_focused()
        await page.keyboard.press("Shift+Tab")
        await page.keyboard.press("Enter")  # submits the form from its text field
        await expect(page.get_by_role("cell", name="04A1B2C3", exact=True)).to_be_visible()
        assert "tag=04A1B2C3" in page.url  # the view of the new tag can be bookmarked
        await page.get_by_role("button", name="Block 04A1B2C3").click()
        row = page.get_by_role("row").filter(has_text="04A1B2C3")
        await expect(row).to_contain_text("Blocked")
        await expect(row.get_by_role("button", name="Accept 04A1B2C3")).to_be_visible()
        await row.get_by_role("link", name="Edit 04A1B2C3").click()  # the form, filled with the entry's values
        await expect(page.get_by_role("form", name="Change tag 04A1B2C3").get_by_label("Status")).to_have_value(
            "Blocked"
        )

        await page.get_by_role("link", name="Audit log").click()
        for action in ("site.create", "station.create", "localauth.add", "localauth.update"):
            await expect(page.get_by_role("cell", name=action, exact=True)).to_be_visible()
        assert key not in await page.content() and "upstream-secret" not in await page.content()
        assert not complaints
    finally:
        await context.close()


async def test_the_site_page_shows_what_the_site_holds_and_new_webhook_there_chooses_the_site(
    browser: Browser, console: ServedConsole
) -> None:
    context = console.context
    now = context.clock.now()
    async with context.store.transaction() as session:
        site = await sites.create_site(
            session,
            OPERATOR,
            context.keys.credential_cipher(),
            company_id=console.company_id,
            name="Harbour",
            now=now,
            upstream_url="wss://cpo.example/ocpp",
        )
        await add_station(session, context.keys, site.id, "CS-HARBOUR", now, connectors=2)
        await localauth.add_entry(session, OPERATOR, site_id=site.id, id_tag="04A1B2C3", now=now)
    await webhooks.create_webhook(
        context.store.transaction,
        OPERATOR,
        context.keys.credential_cipher(),
        site_id=site.id,
        url="http://127.0.0.1:9/hook",
        event_types=["Authorize"],
        auth=NoAuth(),
        now=now,
        allow_private=True,
    )
    browsing = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await browsing.new_page()
    origin = console.url.removesuffix("/console")
    elsewhere: list[str] = []
    page.on("request", lambda request: None if request.url.startswith(origin) else elsewhere.append(request.url))
    complaints = csp_complaints(page)
    try:
        await sign_in(page, console)
        await page.goto(f"{console.url}/sites/{site.id}")
        for heading in ("Stations (1)", "Meters (0)", "Webhooks (1)", "Local authorization list (1)", "Upstream"):
            await expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible()
        hook = page.get_by_role("row").filter(has_text="http://127.0.0.1:9/hook")
        await expect(hook).to_contain_text("ok")
        await expect(page.locator("#upstream + dl.facts")).to_contain_text("0 up, 0 down")
        await assert_accessible(page, "site, every section filled")
        await follow(page, page.get_by_role("link", name="New webhook for this site"))
        form = page.get_by_role("form", name="New webhook")
        await expect(form.get_by_label("Site", exact=True)).to_have_value(site.id)
        await assert_accessible(page, "new webhook, site chosen")
        assert not elsewhere, elsewhere
        assert not complaints
    finally:
        await browsing.close()


async def test_sites_and_meters_pages_pass_axe_in_their_empty_filled_and_error_states(
    browser: Browser, console: ServedConsole
) -> None:
    """Every state in a wide window; then, narrow, every page as filled (what a narrow window changes is layout,
    which the filled pages show best)."""
    wide = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await wide.new_page()
    try:
        await sign_in(page, console)
        visited = await _scan(page, console, "1280px")
    finally:
        await wide.close()
    narrow = await browser.new_context(viewport={"width": 360, "height": 740})
    page = await narrow.new_page()
    try:
        await sign_in(page, console)
        for url in visited:
            await page.goto(url)
            await assert_accessible(page, "360px, filled")
        # Nothing in a narrow window is wider than the window but the tables, which scroll on their own.
        assert await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    finally:
        await narrow.close()


async def _submit_unchecked(page: Page, form: str, button: str) -> None:
    """Submit past the browser's own checks, so the server's refusal is what is scanned."""
    await page.locator(form).evaluate("form => form.noValidate = true")
    await page.get_by_role("button", name=button).click()
    await expect(page.get_by_role("alert")).to_be_visible()


async def _scan(page: Page, console: ServedConsole, width: str) -> list[str]:
    """Scan each page in its states; answers the addresses of the filled pages."""
    url = console.url
    await page.goto(f"{url}/sites?name=nothing-like-this")
    await assert_accessible(page, f"{width} sites, empty")
    await page.goto(f"{url}/sites")
    await page.get_by_label("Name", exact=True).fill("  ")
    await _submit_unchecked(page, "form[aria-labelledby=new-site]", "Create site")
    await assert_accessible(page, f"{width} sites, error")
    await page.get_by_label("Name", exact=True).fill(f"Depot {width}")
    await page.get_by_role("button", name="Create site").click()
    await expect(page.get_by_role("heading", name=f"Site Depot {width}")).to_be_visible()
    site_url = page.url
    await assert_accessible(page, f"{width} site, no stations")

    await page.get_by_label("Station ID").fill("not a valid id!")
    await _submit_unchecked(page, "form[aria-labelledby=new-station]", "Create station")
    await assert_accessible(page, f"{width} site, station error")
    await page.get_by_label("Station ID").fill(f"CS-{width}")
    await page.get_by_label("Charge points").fill("2")
    await page.get_by_label("Connectors per charge point (optional)").fill("2")
    await page.get_by_role("button", name="Create station").click()
    await expect(page.get_by_label("Authorization key")).to_be_visible()
    await assert_accessible(page, f"{width} station created, key shown")
    await follow(page, page.get_by_role("link", name="I have stored it"))
    await assert_accessible(page, f"{width} station")
    await page.get_by_label("Use the key typed below (16 to 40 characters)").check()
    await page.get_by_label("Key to use").fill("short")
    await _submit_unchecked(page, "form[aria-labelledby=edit-station]", "Save keys")
    await assert_accessible(page, f"{width} station, error")
    await page.goto(site_url)
    await assert_accessible(page, f"{width} site, filled")
    await page.get_by_label("Upstream URL", exact=True).fill("http://not-websocket.example")
    await _submit_unchecked(page, "form[aria-labelledby=edit-site]", "Save site")
    await assert_accessible(page, f"{width} site settings, error")
    await page.goto(f"{url}/sites")
    await assert_accessible(page, f"{width} sites, filled")

    await page.goto(f"{site_url}/local-list")
    await assert_accessible(page, f"{width} local list, empty")
    await page.get_by_label("idTag", exact=True).fill("X" * 20)
    await page.get_by_label("Expires (Europe/Brussels, optional)").evaluate("input => input.type = 'text'")
    await page.get_by_label("Expires (Europe/Brussels, optional)").fill("soon")
    await _submit_unchecked(page, "form[aria-labelledby=new-tag]", "Save tag")
    await assert_accessible(page, f"{width} local list, error")
    await page.get_by_label("Expires (Europe/Brussels, optional)").fill("")
    await page.get_by_role("button", name="Save tag").click()
    await expect(page.get_by_role("cell", name="X" * 20, exact=True)).to_be_visible()
    await assert_accessible(page, f"{width} local list, filled")
    await page.get_by_role("link", name=f"Edit {'X' * 20}").click()
    await assert_accessible(page, f"{width} local list, editing")

    await page.goto(f"{url}/meters")
    await assert_accessible(page, f"{width} meters, empty")
    await follow(page, page.get_by_role("link", name="Add a meter"))
    await assert_accessible(page, f"{width} new meter, empty")
    site_id = site_url.rsplit("/", 1)[1]
    await page.get_by_label("Site ID").fill(site_id)
    await page.get_by_label("Station ID").fill(f"CS-{width}")
    await page.get_by_label("Charge point ID (optional)").fill(f"CS-{width}-2")
    await page.get_by_label("Modbus unit id").fill("300")
    await page.get_by_label("TCP host and port").fill("192.0.2.5")
    await _submit_unchecked(page, "form[aria-labelledby=new-meter]", "Add meter")
    await assert_accessible(page, f"{width} new meter, error")
    await page.get_by_label("Modbus unit id").fill("3")
    await page.get_by_role("button", name="Add meter").click()
    await expect(page.get_by_role("heading", name="Meter meter_")).to_be_visible()
    await assert_accessible(page, f"{width} meter")
    await page.get_by_label("Stop current (A)").fill("99")
    await _submit_unchecked(page, "form[aria-labelledby=edit-meter]", "Save meter")
    await assert_accessible(page, f"{width} meter, error")
    meter_url = page.url
    await page.goto(f"{url}/meters")
    await assert_accessible(page, f"{width} meters, filled")
    station_url = f"{url}/stations/CS-{width}"
    return [f"{url}/sites", site_url, station_url, f"{site_url}/local-list", f"{url}/meters", meter_url]
