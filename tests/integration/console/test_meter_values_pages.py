"""A session's meter values on its page (a chart drawn on the server, the numbers in a capped table), and the
meters' poll health, their sessions and their buses: scoped to the operator's company, read by a viewer, escaped."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from xml.etree import ElementTree

from sqlalchemy import insert

from chargenet.store.models import EdgeTransaction, MeterPollHealth, MeterSample, MeterSession
from tests.factories import edge_row, meter_row
from tests.integration.console.conftest import (
    BRUSSELS,
    ConsoleHarness,
    make_meter,
    make_site,
    make_station,
    site_with_station,
)
from tests.integration.console.test_sessions_pages import rows_of
from tests.integration.console.test_sites_pages import HOSTILE_TAG


def plain(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()


def section(html: str, heading_id: str) -> str:
    return html.split(f'id="{heading_id}"', 1)[1].split("<h2", 1)[0]


def chart_of(html: str) -> ElementTree.Element:
    found = re.search(r"<svg.*?</svg>", html, re.S)
    assert found, "no chart on the page"
    return ElementTree.fromstring(found.group(0))


async def ocpp_session(harness: ConsoleHarness, samples: int = 3, **values: object) -> str:
    """Transaction 1 of Acme's station CS-1: 1,000 Wh at the start, 13,345 Wh at the stop 90 minutes later, with
    `samples` meter values a minute apart in between; and station CS-X of the other company."""
    ours = await make_site(harness, harness.team.company_id, "Harbour")
    theirs = await make_site(harness, harness.team.other_company_id, "Elsewhere")
    await make_station(harness, ours.id, "CS-1")
    await make_station(harness, theirs.id, "CS-X")
    start = harness.clock.now() - timedelta(hours=2)
    async with harness.store.transaction() as session:
        await session.execute(insert(EdgeTransaction), [edge_row(1, ours.id, start, **values)])
        if samples:
            await session.execute(
                insert(MeterSample),
                [
                    {
                        "transaction_id": 1,
                        "station_id": "CS-1",
                        "at": start + timedelta(minutes=n + 1),
                        "energy_wh": 1000 + 500 * (n + 1),
                        "power_w": 7400.0,
                    }
                    for n in range(samples)
                ],
            )
    return ours.id


async def test_the_session_page_charts_its_meter_values_with_the_numbers_in_a_table(harness: ConsoleHarness) -> None:
    await ocpp_session(harness)
    viewer = await harness.signed_in("viewer@acme.test")
    response = await viewer.get("/console/sessions/1")
    assert response.status_code == 200
    values = section(response.text, "meter-values")
    svg = chart_of(values)
    assert svg.get("role") == "img" and "Energy delivered by session 1" in (svg.findtext("{*}title") or "")
    assert len(svg.findall(".//{*}circle")) == 5  # start, three samples, stop
    assert rows_of(values) == [
        [
            (harness.clock.now() - timedelta(hours=2, minutes=-n)).astimezone(BRUSSELS).strftime("%Y-%m-%d %H:%M:%S"),
            kwh,
            meter,
            power,
        ]
        for n, kwh, meter, power in [
            (0, "0.000", "1.000", ""),
            (1, "0.500", "1.500", "7.40"),
            (2, "1.000", "2.000", "7.40"),
            (3, "1.500", "2.500", "7.40"),
            (90, "12.345", "13.345", ""),
        ]
    ]


async def test_meter_values_another_station_sent_for_the_transaction_are_not_shown(harness: ConsoleHarness) -> None:
    await ocpp_session(harness, samples=0)
    async with harness.store.transaction() as session:
        await session.execute(
            insert(MeterSample).values(
                transaction_id=1, station_id="CS-X", at=harness.clock.now() - timedelta(hours=1), energy_wh=99_999
            )
        )
    viewer = await harness.signed_in("viewer@acme.test")
    values = section((await viewer.get("/console/sessions/1")).text, "meter-values")
    assert "99.999" not in values and "100.000" not in values
    assert [row[1] for row in rows_of(values)] == ["0.000", "12.345"]


async def test_a_session_in_progress_without_meter_values_says_so_and_draws_no_chart(harness: ConsoleHarness) -> None:
    await ocpp_session(harness, samples=0, stopped_at=None, meter_stop=None)
    viewer = await harness.signed_in("viewer@acme.test")
    values = section((await viewer.get("/console/sessions/1")).text, "meter-values")
    assert "<svg" not in values and "No meter value of this session is stored yet" in values


async def test_a_long_session_s_table_is_capped_and_says_how_many_it_shows(harness: ConsoleHarness) -> None:
    await ocpp_session(harness, samples=85)
    viewer = await harness.signed_in("viewer@acme.test")
    values = section((await viewer.get("/console/sessions/1")).text, "meter-values")
    rows = rows_of(values)
    assert len(rows) == 48 and "(48 of 87, evenly spread)" in values
    assert (rows[0][1], rows[-1][1]) == ("0.000", "12.345")


async def test_another_company_s_session_and_its_meter_values_are_not_found(harness: ConsoleHarness) -> None:
    await ocpp_session(harness)
    stranger = await harness.signed_in("owner@other.test")
    response = await stranger.get("/console/sessions/1")
    assert response.status_code == 404 and "<svg" not in response.text


async def test_a_session_page_with_a_chart_escapes_what_the_station_sent(harness: ConsoleHarness) -> None:
    await ocpp_session(harness, id_tag=HOSTILE_TAG)
    viewer = await harness.signed_in("viewer@acme.test")
    html = (await viewer.get("/console/sessions/1")).text
    assert HOSTILE_TAG not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    chart_of(html)  # still well-formed


async def test_a_meter_session_page_charts_the_meter_s_readings(harness: ConsoleHarness) -> None:
    ours = await make_site(harness, harness.team.company_id, "Harbour")
    await make_station(harness, ours.id, "CS-M")
    start = harness.clock.now() - timedelta(hours=1)
    async with harness.store.transaction() as session:
        await session.execute(insert(MeterSession), [meter_row(3, ours.id, start)])
        await session.execute(
            insert(MeterSample).values(
                transaction_id=3, station_id="CS-M", at=start + timedelta(minutes=2), energy_wh=1500
            )
        )
    viewer = await harness.signed_in("viewer@acme.test")
    values = section((await viewer.get("/console/sessions/3")).text, "meter-values")
    chart_of(values)
    assert "meter readings taken while it charged" in values
    assert [row[1] for row in rows_of(values)] == ["0.000", "1.000"]


# --- meters and buses -------------------------------------------------------------------------------------------


async def health(harness: ConsoleHarness, meter_id: str, bus_key: str, **values: object) -> None:
    row = {
        "meter_id": meter_id,
        "bus_key": bus_key,
        "owner": "host:42:abc",
        "reads": 120,
        "errors": 7,
        "timeouts": 5,
        "crc_errors": 2,
        "last_answer_at": harness.clock.now() - timedelta(seconds=4),
        "last_error": "timeout",
        "dead": False,
        "updated_at": harness.clock.now(),
    }
    async with harness.store.transaction() as session:
        await session.execute(insert(MeterPollHealth).values(**{**row, **values}))


async def test_the_meter_page_shows_its_poll_health(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    meter_id = await make_meter(harness, site_id, "CS-M", 1)
    await health(harness, meter_id, "tcp:192.0.2.7:502")
    viewer = await harness.signed_in("viewer@acme.test")
    text = re.sub(
        r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", (await viewer.get(f"/console/meters/{meter_id}")).text))
    )
    last = (harness.clock.now() - timedelta(seconds=4)).astimezone(BRUSSELS).strftime("%Y-%m-%d %H:%M:%S")
    assert "Timeouts 5 " in text and "CRC errors 2 " in text and f"Last answer {last} " in text
    assert "Polls 120, of which 7 failed" in text and "polled by host:42:abc" in text


async def test_a_meter_never_polled_says_so(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    meter_id = await make_meter(harness, site_id, "CS-M", 1)
    viewer = await harness.signed_in("viewer@acme.test")
    page = (await viewer.get(f"/console/meters/{meter_id}")).text
    assert "Not polled yet" in section(page, "poll-health")
    assert "not polled yet" in (await viewer.get("/console/meters")).text


async def test_the_meters_list_shows_each_meter_s_poll_health(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    meter_id = await make_meter(harness, site_id, "CS-M", 1)
    await health(harness, meter_id, "tcp:192.0.2.7:502", dead=True)
    viewer = await harness.signed_in("viewer@acme.test")
    [row] = rows_of((await viewer.get("/console/meters")).text)
    assert row[-1].startswith("not answering 5 timeouts, 2 CRC errors in 120 polls last answer ")


async def test_the_meter_page_lists_its_latest_sessions_and_links_to_the_rest(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    meter_id = await make_meter(harness, site_id, "CS-M", 1)
    start = harness.clock.now() - timedelta(hours=3)
    async with harness.store.transaction() as session:
        await session.execute(
            insert(MeterSession),
            [
                meter_row(n, site_id, start + timedelta(minutes=n), meter_id=meter_id, stopped_at=None)
                if n == 12
                else meter_row(
                    n,
                    site_id,
                    start + timedelta(minutes=n),
                    meter_id=meter_id,
                    meter_stop_wh=3000,
                    stopped_at=start + timedelta(minutes=n, seconds=30),
                    reason="Other",
                )
                for n in range(1, 13)
            ],
        )
    viewer = await harness.signed_in("viewer@acme.test")
    sessions = section((await viewer.get(f"/console/meters/{meter_id}")).text, "meter-sessions")
    rows = rows_of(sessions)
    assert [row[0] for row in rows] == [str(n) for n in range(12, 2, -1)]
    assert rows[0][2:] == ["in progress", "2.000 so far", ""] and rows[1][3:] == ["2.500", "Other"]
    assert 'href="/console/sessions?station=CS-M&amp;source=meter"' in sessions


async def test_the_buses_page_has_a_row_per_bus_with_its_holder_and_summed_health(harness: ConsoleHarness) -> None:
    site_id = await site_with_station(harness, harness.team.company_id, "CS-M")
    first = await make_meter(harness, site_id, "CS-M", 1)
    second = await make_meter(harness, site_id, "CS-M", 2, connector_id=2)
    third = await make_meter(harness, site_id, "CS-M", 1, tcp="192.0.2.8:502", connector_id=3)
    await health(harness, first, "tcp:192.0.2.7:502")
    await health(harness, second, "tcp:192.0.2.7:502", dead=True, last_answer_at=None)
    await health(harness, third, "tcp:192.0.2.8:502", crc_errors=0)
    other_site = await site_with_station(harness, harness.team.other_company_id, "CS-O")
    await health(
        harness,
        await make_meter(harness, other_site, "CS-O", 1, tcp="192.0.2.9:502", connector_id=1),
        "tcp:192.0.2.9:502",
    )
    viewer = await harness.signed_in("viewer@acme.test")
    page = (await viewer.get("/console/meters/buses")).text
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = [
        [plain(cell) for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]
    assert [row[0] for row in rows] == ["tcp:192.0.2.7:502", "tcp:192.0.2.8:502"]  # not the other company's
    assert rows[0][1:6] == ["host:42:abc", "2 (1 not answering)", "240", "10", "4"]
