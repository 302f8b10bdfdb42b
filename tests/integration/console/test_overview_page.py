"""The overview page in-process: its figures for a known store, each linked to the list behind it, the energy
chart with its figures as text, and nothing of another company."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from pathlib import Path

from sqlalchemy import select, update

from chargenet.keys import KeyStore
from chargenet.services import sites, webhooks
from chargenet.services.callers import OPERATOR
from chargenet.store.models import Connector, EdgeTransaction, StationPresence, WebhookLane
from chargenet.webhooks.outbound_auth import NoAuth
from tests.factories import add_station
from tests.integration.console.conftest import BRUSSELS, ConsoleHarness


async def _seed(harness: ConsoleHarness, tmp_path: Path, company_id: str, station_id: str, wh: int) -> str:
    """A site with one connected station of two connectors (one Charging, one Faulted), a completed session of
    `wh` started an hour ago, and a webhook whose ChargePointStatus lane has 7 events waiting (alert)."""
    keys = KeyStore(tmp_path / "keys")
    keys.ensure()
    now = harness.clock.now()
    async with harness.store.transaction() as session:
        site = await sites.create_site(
            session, OPERATOR, keys.credential_cipher(), company_id=company_id, name="Depot", now=now
        )
        await add_station(session, keys, site.id, station_id, now, connectors=2)
        for connector_id, status, code in ((1, "Charging", "NoError"), (2, "Faulted", "GroundFailure")):
            await session.execute(
                update(Connector)
                .where(Connector.charge_point_id == station_id, Connector.connector_id == connector_id)
                .values(status=status, error_code=code, status_at=now, updated_at=now)
            )
        session.add(StationPresence(station_id=station_id, connected=True, connected_at=now))
        session.add(
            EdgeTransaction(
                station_id=station_id,
                site_id=site.id,
                charge_point_id=station_id,
                connector_id=1,
                ocpp_connector_id=1,
                id_tag="TAG",
                started_at=now - timedelta(hours=1),
                meter_start=0,
                stopped_at=now,
                meter_stop=wh,
                created_at=now,
            )
        )
    hook = await webhooks.create_webhook(
        harness.store.transaction,
        OPERATOR,
        keys.credential_cipher(),
        site_id=site.id,
        url=f"http://127.0.0.1:9/{station_id}",
        event_types=["ChargePointStatus"],
        auth=NoAuth(),
        now=now,
        allow_private=True,
    )
    async with harness.store.transaction() as session:
        await session.execute(update(WebhookLane).where(WebhookLane.webhook_id == hook.id).values(size=7))
    return site.id


def _figure(page: str, term: str) -> str:
    """The text of the first figure after `term` (its link's text where it has one)."""
    found = re.search(rf"<dt>{re.escape(term)}</dt><dd>(?:<a [^>]*>)?([^<]*)", page)
    assert found, f"no figure {term!r} on the page"
    return html.unescape(found.group(1)).strip()


async def test_a_viewer_sees_the_companys_figures_and_nothing_of_another_company(
    harness: ConsoleHarness, tmp_path: Path
) -> None:
    await _seed(harness, tmp_path, harness.team.company_id, "ST-ACME", 12_345)
    await _seed(harness, tmp_path, harness.team.other_company_id, "ST-OTHER", 99_000)
    page = (await (await harness.signed_in("viewer@acme.test")).get("/console/")).text
    assert _figure(page, "Stations connected") == "1"
    assert "100% of 1 online" in page
    assert _figure(page, "Stations offline") == "0"
    assert _figure(page, "Faulted connectors") == "1"
    assert _figure(page, "Energy delivered today") == "12.345"
    assert _figure(page, "Webhook lanes in alert") == "1"
    assert "ST-OTHER" not in page and "99.000" not in page


async def test_each_figure_links_to_the_filtered_list_behind_it(harness: ConsoleHarness, tmp_path: Path) -> None:
    await _seed(harness, tmp_path, harness.team.company_id, "ST-ACME", 1000)
    page = html.unescape((await (await harness.signed_in("viewer@acme.test")).get("/console/")).text)
    day = harness.clock.now().astimezone(BRUSSELS).date()
    for link in (
        "/console/connectors?connection=connected",
        "/console/connectors?connection=offline",
        "/console/connectors?status=Faulted",
        "/console/connectors?status=Charging",
        "/console/sessions?state=active",
        # Brussels' day, its bounds as instants with their offset (+02:00 in July).
        f"/console/sessions?since={day}T00%3A00%3A00%2B02%3A00&until={day + timedelta(days=1)}T00%3A00%3A00%2B02%3A00"
        "&state=completed",
        "/console/webhooks?health=alert",
        "/console/webhooks?health=critical",
    ):
        assert f'href="{link}"' in page, link


async def test_a_days_link_lists_the_sessions_its_figure_counts(harness: ConsoleHarness, tmp_path: Path) -> None:
    await _seed(harness, tmp_path, harness.team.company_id, "ST-ACME", 1000)
    client = await harness.signed_in("viewer@acme.test")
    page = html.unescape((await client.get("/console/")).text)
    found = re.search(r'<dt>Energy delivered today</dt><dd><a href="([^"]+)"', page)
    assert found
    listed = (await client.get(found.group(1))).text
    async with harness.store.read() as session:
        transaction_id = await session.scalar(select(EdgeTransaction.id))
    assert f"/console/sessions/{transaction_id}" in listed


async def test_faulted_connectors_are_listed_with_their_error_codes(harness: ConsoleHarness, tmp_path: Path) -> None:
    await _seed(harness, tmp_path, harness.team.company_id, "ST-ACME", 1000)
    page = (await (await harness.signed_in("viewer@acme.test")).get("/console/")).text
    faults = page.split("Faulted connectors by error code", 1)[1].split("</table>", 1)[0]
    assert re.search(r'<th scope="row">GroundFailure</th><td><a href="[^"]+">1</a></td>', faults)


async def test_the_energy_chart_carries_its_figures_as_text_and_names_the_zone_of_its_days(
    harness: ConsoleHarness, tmp_path: Path
) -> None:
    await _seed(harness, tmp_path, harness.team.company_id, "ST-ACME", 2500)
    page = (await (await harness.signed_in("viewer@acme.test")).get("/console/")).text
    chart = page.split('<figure class="chart" id="energy-chart">', 1)[1].split("</figure>", 1)[0]
    assert 'role="img"' in chart and "(Europe/Brussels days" in chart
    today = harness.clock.now()
    assert f"<title>{today:%d %b}: 2.5 kWh</title>" in chart
    figures = page.split('<table id="energy-figures">', 1)[1].split("</table>", 1)[0]
    assert figures.count("<tr>") == 31  # the header and thirty days
    assert re.search(rf">{today.date()}</a></th><td>1</td><td>2.500</td>", figures)


async def test_the_webhooks_list_filters_by_lane_health(harness: ConsoleHarness, tmp_path: Path) -> None:
    site_id = await _seed(harness, tmp_path, harness.team.company_id, "ST-ACME", 1000)
    cipher = harness.console.credential_cipher
    assert cipher is not None
    await webhooks.create_webhook(
        harness.store.transaction,
        OPERATOR,
        cipher,
        site_id=site_id,
        url="http://127.0.0.1:9/healthy",
        event_types=["Authorize"],
        auth=NoAuth(),
        now=harness.clock.now(),
        allow_private=True,
    )
    client = await harness.signed_in("viewer@acme.test")
    alert = (await client.get("/console/webhooks", params={"health": "alert"})).text
    critical = (await client.get("/console/webhooks", params={"health": "critical"})).text
    assert "http://127.0.0.1:9/ST-ACME" in alert and "/healthy" not in alert
    assert "No webhook matches the filter." in critical


async def test_an_empty_company_shows_zeros_and_an_empty_chart(harness: ConsoleHarness) -> None:
    page = (await (await harness.signed_in("viewer@acme.test")).get("/console/")).text
    assert "no stations yet" in page
    assert _figure(page, "Energy delivered today") == "0.000"
    assert "No connectors yet." in page


async def test_figures_are_kept_a_few_seconds_and_say_when_they_were_counted(
    harness: ConsoleHarness, tmp_path: Path
) -> None:
    viewer = await harness.signed_in("viewer@acme.test")
    counted = harness.clock.now()
    page = (await viewer.get("/console/")).text
    assert _figure(page, "Stations connected") == "0"
    assert f"Figures as of {counted.astimezone(BRUSSELS):%H:%M:%S}:" in page
    # Written without an event (as another process's or the command line's change): shown once the figures age.
    await _seed(harness, tmp_path, harness.team.company_id, "ST-LATER", 1_000)
    assert _figure((await viewer.get("/console/")).text, "Stations connected") == "0"
    harness.clock.advance(5)
    page = (await viewer.get("/console/")).text
    assert _figure(page, "Stations connected") == "1"
    assert f"Figures as of {harness.clock.now().astimezone(BRUSSELS):%H:%M:%S}:" in page
