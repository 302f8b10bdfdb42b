"""The console served for real (uvicorn on loopback, the whole composition root) for the browser tests, and the
axe-core scan they run on every page."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from playwright.async_api import ConsoleMessage, Locator, Page

from chargenet.app import AppContext, create_app, open_context
from chargenet.clock import Clock
from chargenet.config import load_settings
from chargenet.services import companies, sites
from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import SimulatedStation
from chargenet.webhooks.install import install as install_webhooks
from chargenet.webhooks.retry import RetryPolicy
from tests.factories import add_station
from tests.support.in_loop import start_serving
from tests.support.operators import PASSWORD, add_operator, cheap_passwords
from tests.support.ports import free_port
from tests.support.templates import prepare_data_dir

AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
OWNER = "owner@acme.test"


@dataclass
class ServedConsole:
    context: AppContext
    url: str  # the console's address, ending in /console
    company_id: str


@asynccontextmanager
async def served_console(
    tmp_path: Path, *, clock: Clock | None = None, webhooks: RetryPolicy | None = None
) -> AsyncIterator[ServedConsole]:
    """The whole app on loopback, as `chargenet serve` runs it. With `webhooks` (their retry policy), it also
    delivers webhooks, to private addresses too (the tests' receivers are on loopback), as `make demo` does."""
    port = free_port()
    data_dir = prepare_data_dir(tmp_path / "data")
    flags = {"data_dir": str(data_dir), "port": port, "webhook_allow_private": webhooks is not None}
    settings = load_settings(flags, environ={})
    context = await open_context(settings, clock=clock)
    if webhooks is not None:
        install_webhooks(context, policy=webhooks)
    passwords = cheap_passwords()
    async with context.store.transaction() as session:
        company = await companies.create_company(session, OPERATOR, name="Acme", now=context.clock.now())
    await add_operator(context.store.transaction, passwords, context.clock.now(), company_id=company.id, email=OWNER)
    app = create_app(context, console_passwords=passwords)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    task = await start_serving(server)
    try:
        yield ServedConsole(context, f"{settings.public_url}/console", company.id)
    finally:
        server.should_exit = True
        await task
        await context.close()


async def a_site(console: ServedConsole, name: str = "Depot") -> str:
    """A new site of the console's company: its id."""
    context = console.context
    async with context.store.transaction() as session:
        site = await sites.create_site(
            session,
            OPERATOR,
            context.keys.credential_cipher(),
            company_id=console.company_id,
            name=name,
            now=context.clock.now(),
        )
    return site.id


async def station_on_a_new_site(console: ServedConsole, station_id: str, *, connectors: int = 2) -> SimulatedStation:
    """A site of the console's company with one station of `connectors` connectors, and a simulator for it (not
    connected yet)."""
    site_id = await a_site(console, "Harbour")
    context = console.context
    async with context.store.transaction() as session:
        await add_station(session, context.keys, site_id, station_id, context.clock.now(), connectors=connectors)
    return SimulatedStation(console.url.replace("http://", "ws://").removesuffix("/console") + "/ocpp", station_id)


def csp_complaints(page: Page) -> list[str]:
    """Every Content-Security-Policy complaint the page logs from now on: a flow must cause none (no inline script
    or style)."""
    seen: list[str] = []

    def listen(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            seen.append(message.text)

    page.on("console", listen)
    return seen


async def sign_in(page: Page, console: ServedConsole, email: str = OWNER, password: str = PASSWORD) -> None:
    await page.goto(f"{console.url}/login")
    await page.get_by_label("E-mail address").fill(email)
    await page.get_by_label("Password").fill(password)
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_role("heading", name="Overview").wait_for()


async def axe_violations(page: Page) -> list[dict[str, Any]]:
    """The serious and critical WCAG 2 A/AA violations axe-core finds on the page as it is now."""
    # Evaluated through the DevTools protocol, which the page's CSP (no inline script) does not govern.
    if not await page.evaluate("typeof window.axe !== 'undefined'"):
        await page.evaluate(_axe_source())
    # Only violations are detailed (`resultTypes`) and only they cross back to Python: the passes of a page run
    # to thousands of nodes, and serialising them took most of a scan's time.
    found: list[dict[str, Any]] = await page.evaluate(
        """async () => {
            const result = await axe.run(document, {
                runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
                resultTypes: ['violations'],
            });
            return result.violations
                .filter(v => v.impact === 'serious' || v.impact === 'critical')
                .map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 5).map(n => n.target)}));
        }"""
    )
    return found


@functools.cache
def _axe_source() -> str:
    return AXE.read_text()


async def follow(page: Page, link: Locator) -> None:
    """Click a link and wait until the page it leads to has loaded: a scan begun before would run on the page being
    left, whose document goes away under it."""
    leaving = page.url
    await link.click()
    await page.wait_for_url(lambda url: url != leaving)


async def assert_accessible(page: Page, state: str) -> None:
    found = await axe_violations(page)
    assert not found, f"{state} ({page.url}): {json.dumps(found, indent=1)}"
