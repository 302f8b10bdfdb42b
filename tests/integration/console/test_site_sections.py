"""The site as the place to configure: its page shows, each with a count and links, its stations, meters,
webhooks (with their health), local list and upstream, each list bounded by a first page and a link to all of
them; "New webhook" there opens the webhook form with the site chosen, never another company's."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import insert, update

from chargenet.console.views import sites as site_views
from chargenet.services import localauth
from chargenet.services.callers import OPERATOR
from chargenet.store.models import Station, StationPresence, WebhookLane
from tests.factories import add_webhook
from tests.integration.console.conftest import ConsoleHarness, make_meter, make_site, make_station

HOSTILE_URL = "http://127.0.0.1:9/<script>"


async def make_webhook(harness: ConsoleHarness, site_id: str, url: str = "http://127.0.0.1:9/hook") -> str:
    created = await add_webhook(
        harness.store.transaction, harness.console.credential_cipher, site_id, harness.clock.now(), url=url
    )
    return created.id


def section(html: str, heading_id: str) -> str:
    """The page from the section's heading to the next one."""
    start = html.index(f'<h2 id="{heading_id}">')
    following = html.find("<h2 ", start + 1)
    return html[start : following if following != -1 else len(html)]


def selected_site(html: str) -> str | None:
    form = html.split('<form method="post" action="/console/webhooks"', 1)[1].split("</form>", 1)[0]
    found = re.search(r'<select id="site_id".*?</select>', form, re.S)
    assert found, "no site choice in the form"
    chosen = re.search(r'<option value="([^"]*)" selected>', found.group(0))
    return chosen.group(1) if chosen else None


async def test_the_site_page_counts_its_stations_and_links_to_their_live_status(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    for station_id in ("CS-1", "CS-2"):
        await make_station(harness, site.id, station_id, connectors=1)
    viewer = await harness.signed_in("viewer@acme.test")
    shown = section((await viewer.get(f"/console/sites/{site.id}")).text, "stations")
    assert "Stations (2)" in shown
    assert 'href="/console/stations/CS-1"' in shown and 'href="/console/stations/CS-2"' in shown
    assert f'href="/console/connectors?site={site.id}"' in shown


async def test_a_site_with_ten_thousand_stations_shows_their_count_and_one_page_of_them(
    harness: ConsoleHarness,
) -> None:
    site = await make_site(harness, harness.team.company_id)
    now = harness.clock.now()
    async with harness.store.transaction() as session:
        await session.execute(
            insert(Station), [{"id": f"CS-{n:05d}", "site_id": site.id, "created_at": now} for n in range(10_000)]
        )
    viewer = await harness.signed_in("viewer@acme.test")
    shown = section((await viewer.get(f"/console/sites/{site.id}")).text, "stations")
    assert "Stations (10000)" in shown
    assert shown.count('href="/console/stations/CS-') == site_views.STATIONS_PER_PAGE
    assert "Live status of the connectors of all 10000 stations" in shown


async def test_the_site_page_lists_its_first_meters_and_links_to_all_of_them(
    harness: ConsoleHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(site_views, "SECTION_ROWS", 1)
    site = await make_site(harness, harness.team.company_id)
    for unit, station_id in ((1, "CS-1"), (2, "CS-2")):
        await make_station(harness, site.id, station_id, connectors=1)
        await make_meter(harness, site.id, station_id, unit)
    viewer = await harness.signed_in("viewer@acme.test")
    shown = section((await viewer.get(f"/console/sites/{site.id}")).text, "meters")
    assert "Meters (2)" in shown
    assert shown.count('href="/console/meters/') == 1  # the first page only
    assert f'<a href="/console/meters?site={site.id}">All 2 meters of this site</a>' in shown


async def test_the_site_page_lists_its_webhooks_with_their_health(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    webhook_id = await make_webhook(harness, site.id, HOSTILE_URL)
    async with harness.store.transaction() as session:
        await session.execute(
            update(WebhookLane).where(WebhookLane.webhook_id == webhook_id).values(consecutive_failures=3)
        )
    viewer = await harness.signed_in("viewer@acme.test")
    shown = section((await viewer.get(f"/console/sites/{site.id}")).text, "webhooks")
    assert "Webhooks (1)" in shown
    assert f'href="/console/webhooks/{webhook_id}"' in shown
    assert '<span class="level level-alert">alert</span>' in shown
    assert "<script>" not in shown and "&lt;script&gt;" in shown  # a partner's URL is text
    assert f'href="/console/webhooks?site={site.id}">All 1 webhook of this site</a>' in shown
    assert "New webhook" not in shown  # a viewer changes nothing


async def test_the_site_page_counts_its_local_list_and_links_to_it(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    async with harness.store.transaction() as session:
        for tag in ("TAG-1", "TAG-2", "TAG-3"):
            await localauth.add_entry(session, OPERATOR, site_id=site.id, id_tag=tag, now=harness.clock.now())
    viewer = await harness.signed_in("viewer@acme.test")
    shown = section((await viewer.get(f"/console/sites/{site.id}")).text, "local-list")
    assert "Local authorization list (3)" in shown
    assert f'href="/console/sites/{site.id}/local-list"' in shown


async def test_the_site_page_shows_its_upstream_and_how_many_links_to_it_are_up(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id, upstream_url="wss://cpo.example/ocpp")
    for station_id in ("CS-1", "CS-2", "CS-3"):
        await make_station(harness, site.id, station_id, connectors=1)
    async with harness.store.transaction() as session:
        await session.execute(
            insert(StationPresence),
            [
                {"station_id": "CS-1", "connected": True, "upstream_connected": True},
                {"station_id": "CS-2", "connected": True, "upstream_connected": True},
                {"station_id": "CS-3", "connected": True, "upstream_connected": False},
            ],
        )
    viewer = await harness.signed_in("viewer@acme.test")
    shown = section((await viewer.get(f"/console/sites/{site.id}")).text, "upstream")
    assert "<code>wss://cpo.example/ocpp</code>" in shown
    assert "2 up, 1 down" in shown


async def test_a_site_without_an_upstream_says_the_edge_answers_its_stations(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    viewer = await harness.signed_in("viewer@acme.test")
    shown = section((await viewer.get(f"/console/sites/{site.id}")).text, "upstream")
    assert "none: the edge answers stations as central system" in shown and " up, " not in shown


async def test_new_webhook_on_the_site_page_opens_the_form_with_the_site_chosen(harness: ConsoleHarness) -> None:
    await make_site(harness, harness.team.company_id, "Another")
    site = await make_site(harness, harness.team.company_id, "Harbour")
    admin = await harness.signed_in("admin@acme.test")
    shown = section((await admin.get(f"/console/sites/{site.id}")).text, "webhooks")
    link = f"/console/webhooks?site={site.id}#new-webhook"
    assert f'<a href="{link}">New webhook for this site</a>' in shown
    form = await admin.get(link.split("#")[0])
    assert form.status_code == 200 and selected_site(form.text) == site.id


async def test_another_companys_site_is_not_pre_filled_nor_named_in_the_webhook_form(harness: ConsoleHarness) -> None:
    await make_site(harness, harness.team.company_id, "Ours")
    theirs = await make_site(harness, harness.team.other_company_id, "Secret yard")
    admin = await harness.signed_in("admin@acme.test")
    for site_id in (theirs.id, "site_unknown", "x" * 300):
        form = await admin.get("/console/webhooks", params={"site": site_id})
        assert form.status_code == 200, site_id
        assert selected_site(form.text) is None
        assert theirs.id not in form.text and "Secret yard" not in form.text
