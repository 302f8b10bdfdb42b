"""The Sessions pages: OCPP and meter sessions alike, filtered and paged by GET parameters, energy in kWh with
duration and reasons, one session's timeline from the message log, CSV exports of any filtered list (formulas
defused, streamed: 100,000 sessions in bounded memory), idTags escaped, another company's sessions unseen."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import re
import time
from datetime import timedelta
from html import unescape
from typing import Any, cast

import httpx
from sqlalchemy import Table, insert

from chargenet.console.protection import COOKIE_NAME
from chargenet.edge.messagelog import MessageLog
from chargenet.store.models import EdgeTransaction, MeterSession
from tests.factories import edge_row, meter_row
from tests.integration.console.conftest import ConsoleHarness, make_site, make_station, wall
from tests.integration.console.test_sites_pages import HOSTILE_TAG


def rss() -> int:
    """This process's resident memory now, in bytes (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def _sessions(harness: ConsoleHarness) -> tuple[str, str]:
    """Acme's site with OCPP station CS-1 and metered station CS-M; the other company's site with CS-X."""
    ours = await make_site(harness, harness.team.company_id, "Harbour")
    theirs = await make_site(harness, harness.team.other_company_id, "Elsewhere")
    await make_station(harness, ours.id, "CS-1")
    await make_station(harness, ours.id, "CS-M")
    await make_station(harness, theirs.id, "CS-X")
    start = harness.clock.now() - timedelta(hours=5)
    async with harness.store.transaction() as session:
        await session.execute(
            insert(EdgeTransaction),
            [
                edge_row(1, ours.id, start),
                edge_row(2, ours.id, start + timedelta(hours=1), id_tag=HOSTILE_TAG, stop_reason=None),
                edge_row(4, ours.id, start + timedelta(hours=3), id_tag="=2+5", stopped_at=None, meter_stop=None),
                edge_row(5, theirs.id, start, station_id="CS-X", charge_point_id="CS-X", id_tag="THEIRS"),
            ],
        )
        await session.execute(
            insert(MeterSession),
            [
                meter_row(3, ours.id, start + timedelta(hours=2)),
                meter_row(
                    6,
                    ours.id,
                    start + timedelta(hours=4),
                    id_tag="@SUM(A1)",
                    meter_stop_wh=3000,
                    stopped_at=start + timedelta(hours=4, minutes=30),
                    reason="Other",
                ),
            ],
        )
    return ours.id, theirs.id


def rows_of(html: str) -> list[list[str]]:
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [
            re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", cell))).strip()
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


async def test_the_list_shows_ocpp_and_meter_sessions_newest_first_with_energy_and_reasons(
    harness: ConsoleHarness,
) -> None:
    ours, _ = await _sessions(harness)
    viewer = await harness.signed_in("viewer@acme.test")
    home = await viewer.get("/console/")
    assert 'href="/console/sessions"' in home.text  # in the navigation
    assert 'href="/console/sessions?site=' in (await viewer.get(f"/console/sites/{ours}")).text
    response = await viewer.get("/console/sessions")
    assert response.status_code == 200
    assert HOSTILE_TAG not in response.text and "&lt;b&gt;x&lt;/b&gt;" in response.text
    rows = rows_of(response.text)
    assert [row[0].split()[0] for row in rows] == ["6", "4", "3", "2", "1"]  # not the other company's 5
    six, four, three, two, one = rows
    assert one[5] == "12.345" and one[4] == "1 h 30 min"
    assert one[6] == "StartTransaction from the station; idTag Accepted stopped: EVDisconnected" and one[0] == "1 OCPP"
    assert two[6].endswith("stopped: Local")  # a station that gives no reason stopped locally (decisions.md)
    assert four[3].endswith("in progress") and four[5] == "at the stop" and four[4] == "2 h 00 min"
    assert three[5] == "2.000 so far" and three[0] == "3 meter" and "charging detected" in three[6]
    assert six[5] == "2.500" and six[6].endswith("stopped: Other") and six[4] == "30 min 00 s"
    assert 'href="/console/sessions/2"' in response.text and 'href="/console/stations/CS-M"' in response.text


async def test_filters_are_get_parameters_and_a_bad_one_is_422_naming_it(harness: ConsoleHarness) -> None:
    ours, theirs = await _sessions(harness)
    viewer = await harness.signed_in("viewer@acme.test")

    async def ids(**params: str) -> list[str]:
        response = await viewer.get("/console/sessions", params=params)
        assert response.status_code == 200, response.text
        return [row[0].split()[0] for row in rows_of(response.text) if row[0][:1].isdigit()]

    assert await ids(site=ours) == ["6", "4", "3", "2", "1"]
    assert await ids(site=theirs) == []  # another company's site: nothing, as if it had none
    assert await ids(station="CS-M") == ["6", "3"]
    assert await ids(id_tag="TAG-1") == ["1"]
    assert await ids(state="active") == ["4", "3"]
    assert await ids(state="completed", source="ocpp") == ["2", "1"]
    assert await ids(source="meter") == ["6", "3"]
    start = harness.clock.now() - timedelta(hours=5)
    assert await ids(
        since=wall(start + timedelta(hours=1), seconds=False),
        until=wall(start + timedelta(hours=3), seconds=False),
    ) == ["3", "2"]
    kept = await viewer.get("/console/sessions", params={"station": "CS-1", "state": "active"})
    assert 'value="CS-1"' in kept.text and '<option value="active" selected>' in kept.text
    bad = await viewer.get("/console/sessions", params={"since": "last week", "station": "CS-1"})
    assert (
        bad.status_code == 422
        and "Started from (Europe/Brussels): &#39;last week&#39; is not a date and time" in bad.text
    )
    assert 'value="CS-1"' in bad.text
    assert (await viewer.get("/console/sessions", params={"state": "sleeping"})).status_code == 422
    assert (await viewer.get("/console/sessions.csv", params={"state": "sleeping"})).status_code == 422


async def test_a_long_list_is_paged_by_keyset_with_its_filter(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-1")
    start = harness.clock.now() - timedelta(days=10)
    async with harness.store.transaction() as session:
        await session.execute(
            insert(EdgeTransaction), [edge_row(n, site.id, start + timedelta(minutes=n)) for n in range(1, 121)]
        )
    viewer = await harness.signed_in("viewer@acme.test")
    first = await viewer.get("/console/sessions", params={"station": "CS-1"})
    assert [row[0].split()[0] for row in rows_of(first.text)] == [str(n) for n in range(120, 70, -1)]
    next_url = re.search(r'href="([^"]+)">Next page', first.text)
    assert next_url and "station=CS-1" in next_url.group(1)
    second = await viewer.get(next_url.group(1).replace("&amp;", "&"))
    assert [row[0].split()[0] for row in rows_of(second.text)] == [str(n) for n in range(70, 20, -1)]
    for edited in ("not a cursor", "YWJj", "OTk5OTk5OTk5OTk5"):  # garbage, "abc", "999999999999"
        again = await viewer.get("/console/sessions", params={"station": "CS-1", "after": edited})
        assert again.status_code == 200 and rows_of(again.text)[0][0].split()[0] == "120", edited


async def test_a_session_shows_its_timeline_from_the_message_log(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-1", connectors=2)
    log = MessageLog(harness.store, harness.clock)
    station = log.logger("CS-1", "station")
    upstream = log.logger("CS-1", "upstream")
    start = harness.clock.now()
    frames = [
        (station, "in", '[2,"a","Authorize",{"idTag":"TAG-7"}]', True),
        (station, "out", '[3,"a",{"idTagInfo":{"status":"Accepted"}}]', True),
        (station, "in", '[2,"h","Heartbeat",{}]', False),
        (
            station,
            "in",
            '[2,"st","StartTransaction",{"connectorId":1,"idTag":"TAG-7","meterStart":1000,"timestamp":"2026-07-01T12:00:03Z"}]',
            True,
        ),
        (
            upstream,
            "out",
            '[2,"u1","StartTransaction",{"connectorId":1,"idTag":"TAG-7","meterStart":1000,"timestamp":"2026-07-01T12:00:03Z"}]',
            True,
        ),
        (upstream, "in", '[3,"u1",{"transactionId":900,"idTagInfo":{"status":"Accepted"}}]', True),
        (station, "out", '[3,"st",{"transactionId":7,"idTagInfo":{"status":"Accepted"}}]', True),
        (
            station,
            "in",
            '[2,"s1","StatusNotification",{"connectorId":1,"status":"Charging","errorCode":"NoError"}]',
            True,
        ),
        (
            station,
            "in",
            '[2,"s2","StatusNotification",{"connectorId":2,"status":"Faulted","errorCode":"OtherError"}]',
            False,
        ),
        (station, "out", '[3,"s2",{}]', False),
        (station, "in", '[2,"mv","MeterValues",{"connectorId":1,"transactionId":7,"meterValue":[]}]', True),
        (station, "in", '[2,"mv8","MeterValues",{"connectorId":2,"transactionId":8,"meterValue":[]}]', False),
        (
            station,
            "in",
            '[2,"sp","StopTransaction",{"transactionId":7,"meterStop":4000,"timestamp":"2026-07-01T12:00:13Z"}]',
            True,
        ),
        (
            upstream,
            "out",
            '[2,"u2","StopTransaction",{"transactionId":900,"meterStop":4000,"timestamp":"2026-07-01T12:00:13Z"}]',
            True,
        ),
        (station, "out", '[3,"sp",{}]', True),
    ]
    for logger, direction, frame, _ in frames:
        harness.clock.advance(1)
        logger(direction, frame)
    await log.run_once()
    async with harness.store.transaction() as session:
        await session.execute(
            insert(EdgeTransaction).values(
                edge_row(
                    7,
                    site.id,
                    start + timedelta(seconds=3),
                    id_tag="TAG-7",
                    stopped_at=start + timedelta(seconds=13),
                    meter_stop=4000,
                    upstream_id=900,
                )
            )
        )
    viewer = await harness.signed_in("viewer@acme.test")
    response = await viewer.get("/console/sessions/7")
    assert response.status_code == 200
    html = response.text
    assert "Session 7" in html and "3.000 kWh" in html and "EVDisconnected" in html
    shown = [unescape(frame) for frame in re.findall(r'<code class="frame">(.*?)</code>', html)]
    assert shown == [frame for _, _, frame, wanted in frames if wanted]
    # The window as instants with their offset, which the message log reads exactly.
    assert 'href="/console/stations/CS-1/messages?since=2026-07-01T13%3A58%3A03%2B02%3A00' in html


async def test_a_meter_session_has_no_ocpp_timeline_and_another_companys_is_not_found(
    harness: ConsoleHarness,
) -> None:
    await _sessions(harness)
    viewer = await harness.signed_in("viewer@acme.test")
    metered = await viewer.get("/console/sessions/3")
    assert metered.status_code == 200 and "detected from a meter" in metered.text and "2.000 kWh so far" in metered.text
    for missing in ("5", "99", "0", "abc", "99999999999"):
        response = await viewer.get(f"/console/sessions/{missing}")
        assert response.status_code == 404, missing
    assert (await viewer.get("/console/sessions/2")).status_code == 200
    assert HOSTILE_TAG not in (await viewer.get("/console/sessions/2")).text


async def test_a_session_names_its_site_with_its_id_beside_to_copy(harness: ConsoleHarness) -> None:
    ours, _ = await _sessions(harness)
    viewer = await harness.signed_in("viewer@acme.test")
    shown = (await viewer.get("/console/sessions/1")).text
    site = (
        f'<dt>Site</dt><dd><a href="/console/sites/{ours}">Harbour</a> <code class="hint" title="Site ID">{ours}</code>'
    )
    assert site in shown


async def test_the_csv_export_holds_every_filtered_session_with_formulas_defused(harness: ConsoleHarness) -> None:
    await _sessions(harness)
    viewer = await harness.signed_in("viewer@acme.test")
    listing = await viewer.get("/console/sessions", params={"station": "CS-1"})
    assert 'href="/console/sessions.csv?station=CS-1"' in listing.text
    exported = await viewer.get("/console/sessions.csv")
    assert exported.status_code == 200 and exported.headers["content-type"] == "text/csv; charset=utf-8"
    assert exported.headers["content-disposition"] == "attachment; filename*=UTF-8''sessions-20260701T120000Z.csv"
    table = list(csv.reader(io.StringIO(exported.text)))
    header, *rows = table
    assert header[:8] == [
        "transactionId",
        "source",
        "siteId",
        "stationId",
        "chargePointId",
        "connectorId",
        "idTag",
        "state",
    ]
    assert [row[0] for row in rows] == ["1", "2", "3", "4", "6"]  # oldest first; not the other company's
    one = dict(zip(header, rows[0], strict=True))
    assert one["energyKwh"] == "12.345" and one["meterStartKwh"] == "1.0" and one["durationSeconds"] == "5400"
    assert one["stopReason"] == "EVDisconnected" and one["startedAt"] == "2026-07-01T09:00:00+02:00"
    tags = {row[0]: row[6] for row in rows}
    assert tags["4"] == "'=2+5" and tags["6"] == "'@SUM(A1)" and tags["2"] == HOSTILE_TAG
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in table for cell in row)
    metered = await viewer.get("/console/sessions.csv", params={"source": "meter", "state": "active"})
    assert [row[0] for row in list(csv.reader(io.StringIO(metered.text)))[1:]] == ["3"]


async def test_a_hundred_thousand_sessions_export_streamed_in_bounded_memory(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-1")
    start = harness.clock.now() - timedelta(days=365)
    count = 100_000
    async with harness.store.transaction() as session:
        for first in range(1, count + 1, 10_000):
            await session.execute(
                insert(cast(Table, EdgeTransaction.__table__)),
                [edge_row(n, site.id, start + timedelta(minutes=5 * n)) for n in range(first, first + 10_000)],
            )
    viewer = await harness.signed_in("viewer@acme.test")
    cookie = viewer.cookies.get(COOKIE_NAME)
    assert cookie

    received = 0
    chunks = 0
    lines = 0
    last = b""
    resident = peak = rss()

    requested = False
    finished = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await finished.wait()  # the browser stays until the download is done
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal received, chunks, lines, last, peak
        if message["type"] == "http.response.start":
            assert message["status"] == 200
        elif message["type"] == "http.response.body" and message.get("body"):
            body = message["body"]
            received += len(body)
            chunks += 1
            lines += body.count(b"\r\n")
            last = body  # only the last chunk is kept: the test holds no more than the app does
            peak = max(peak, rss())

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/console/sessions.csv",
        "raw_path": b"/console/sessions.csv",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"console.test"), (b"cookie", f"{COOKIE_NAME}={cookie}".encode())],
        "client": ("192.0.2.10", 40000),
        "server": ("console.test", 80),
    }
    began = time.perf_counter()
    await harness.app(scope, receive, send)  # type: ignore[arg-type]
    finished.set()
    took = time.perf_counter() - began
    assert lines == count + 1 and last.rstrip().split(b"\r\n")[-1].startswith(b"100000,ocpp,")
    assert chunks > 100  # written as it was read, in chunks of 64 KiB
    # The file is 20 MB, its rows as objects several times that; the process grew by a few batches (4 MB here).
    grown = peak - resident
    assert received > 15_000_000 and grown < 16_000_000, (received, grown)
    print(
        f"exported {count} sessions ({received / 1e6:.1f} MB) in {took:.1f} s; "
        f"resident memory grew {grown / 1e6:.1f} MB"
    )


async def test_another_companys_viewer_sees_none_of_it(harness: ConsoleHarness) -> None:
    await _sessions(harness)
    stranger = await harness.signed_in("owner@other.test")
    listing = await stranger.get("/console/sessions")
    assert [row[0].split()[0] for row in rows_of(listing.text)] == ["5"]
    exported = await stranger.get("/console/sessions.csv")
    assert [row[0] for row in list(csv.reader(io.StringIO(exported.text)))[1:]] == ["5"]
    for ours in ("1", "3"):
        assert (await stranger.get(f"/console/sessions/{ours}")).status_code == 404
    anonymous: httpx.AsyncClient = harness.client()
    assert (await anonymous.get("/console/sessions.csv")).status_code == 303
