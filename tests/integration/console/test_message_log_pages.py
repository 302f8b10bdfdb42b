"""A station's OCPP message log in the console: both directions and both peers, filtered by action, direction,
message id and time, paged newest first, gaps shown with their count, exported whole as NDJSON and CSV (spreadsheet
formulas defused), station-supplied frames escaped, and another company's log not found."""

from __future__ import annotations

import csv
import io
import json
import re
from contextlib import AbstractAsyncContextManager
from datetime import timedelta
from html import unescape

import pytest
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.console.exports import spreadsheet_safe
from chargenet.edge import messagelog
from chargenet.edge.messagelog import MessageLog
from chargenet.services import message_log
from chargenet.services.callers import OPERATOR
from chargenet.store.models import OcppMessage
from tests.integration.console.conftest import ConsoleHarness, make_site, make_station, wall
from tests.integration.console.test_sites_pages import HOSTILE

FORMULAS = ["=cmd|' /C calc'!A0", "+1+2", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]


async def _logged(harness: ConsoleHarness, company_id: str | None = None) -> MessageLog:
    """Station CS-1 and a conversation with it and with the upstream, a second apart each, plus hostile frames."""
    site = await make_site(harness, company_id or harness.team.company_id)
    await make_station(harness, site.id, "CS-1")
    log = MessageLog(harness.store, harness.clock)
    station = log.logger("CS-1", "station")
    upstream = log.logger("CS-1", "upstream")
    for direction, frame, to in (
        ("in", '[2,"b-1","BootNotification",{"chargePointVendor":"V","chargePointModel":"M"}]', station),
        ("out", '[2,"b-1","BootNotification",{"chargePointVendor":"V","chargePointModel":"M"}]', upstream),
        ("in", '[3,"b-1",{"status":"Accepted","currentTime":"2026-07-01T12:00:01Z","interval":300}]', upstream),
        ("out", '[3,"b-1",{"status":"Accepted","currentTime":"2026-07-01T12:00:01Z","interval":300}]', station),
        ("in", '[2,"s-1","StatusNotification",{"connectorId":1,"status":"Available","errorCode":"NoError"}]', station),
        ("out", '[3,"s-1",{}]', station),
        ("out", '[2,"r-1","Reset",{"type":"Soft"}]', station),
        ("in", '[4,"r-1","NotImplemented","' + HOSTILE + '",{}]', station),
    ):
        harness.clock.advance(1)
        to(direction, frame)
    for formula in FORMULAS:  # unreadable frames are logged as they came
        station("in", formula)
    await log.run_once()
    return log


def cells(html: str) -> list[str]:
    return [unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", html, re.S)]


def rows_of(html: str) -> list[list[str]]:
    body = html.split("<tbody>", 1)[1]
    return [cells(row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


async def test_the_log_shows_both_directions_and_peers_newest_first_escaped(harness: ConsoleHarness) -> None:
    await _logged(harness)
    viewer = await harness.signed_in("viewer@acme.test")
    station = await viewer.get("/console/stations/CS-1")
    assert 'href="/console/stations/CS-1/messages"' in station.text
    response = await viewer.get("/console/stations/CS-1/messages")
    assert response.status_code == 200
    html = response.text
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "station → chargenet" in html and "chargenet → upstream" in html and "upstream → chargenet" in html
    shown = cells(html)
    assert shown.index("Reset") < shown.index("StatusNotification") < shown.index("BootNotification")  # newest first
    assert "CALLERROR" in shown and "CALLRESULT" in shown and "CALL" in shown
    assert 'href="/console/stations/CS-1/messages?message_id=r-1"' in html
    assert (
        'href="/console/stations/CS-1/messages.ndjson"' in html and 'href="/console/stations/CS-1/messages.csv"' in html
    )


async def test_filters_by_action_direction_message_id_and_time_are_get_parameters(harness: ConsoleHarness) -> None:
    await _logged(harness)
    start = harness.clock.now() - timedelta(seconds=8)
    viewer = await harness.signed_in("viewer@acme.test")

    async def frames(**params: str) -> list[str]:
        response = await viewer.get("/console/stations/CS-1/messages", params=params)
        assert response.status_code == 200, response.text
        return [cell for cell in cells(response.text) if cell.startswith("[")]

    boot = await frames(action="BootNotification")
    assert len(boot) == 4  # the CALL and its answer, to and from the station and the upstream
    partial = await viewer.get("/console/stations/CS-1/messages?action=Boot")
    assert 'value="Boot"' in partial.text and "No frame matches the filter." in partial.text  # actions match whole
    from_upstream = await frames(direction="from-upstream")
    assert len(from_upstream) == 1 and from_upstream[0].startswith("[3,")
    reset = await frames(message_id="r-1")
    assert [frame[:2] for frame in reset] == ["[4", "[2"]
    assert len(await frames(action="Reset", direction="to-station")) == 1
    window = await frames(since=wall(start + timedelta(seconds=4)))
    assert len(window) == 5  # the status notification onwards (the unreadable frames have no "[")
    until = await frames(until=wall(start + timedelta(seconds=2)))
    assert len(until) == 1
    bad = await viewer.get("/console/stations/CS-1/messages", params={"since": "yesterday", "action": "Reset"})
    assert bad.status_code == 422 and "From (Europe/Brussels): &#39;yesterday&#39; is not a date and time" in bad.text
    assert 'value="Reset"' in bad.text  # the rest of the filter kept as typed
    wrong = await viewer.get("/console/stations/CS-1/messages", params={"direction": "sideways"})
    assert wrong.status_code == 422
    assert (await viewer.get("/console/stations/CS-1/messages.csv", params={"direction": "x"})).status_code == 422


async def test_a_long_log_is_paged_by_keyset_newest_first(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-1")
    now = harness.clock.now()
    async with harness.store.transaction() as session:
        await session.execute(
            insert(OcppMessage),
            [
                {
                    "station_id": "CS-1",
                    "peer": "station",
                    "direction": "in",
                    "frame": f'[2,"h-{n}","Heartbeat",{{}}]',
                    "at": now + timedelta(seconds=n),
                    "message_type": 2,
                    "message_id": f"h-{n}",
                    "action": "Heartbeat",
                }
                for n in range(250)
            ],
        )
    viewer = await harness.signed_in("viewer@acme.test")
    first = await viewer.get("/console/stations/CS-1/messages", params={"action": "Heartbeat"})
    ids = [row[3] for row in rows_of(first.text)]
    assert ids == [f"h-{n}" for n in range(249, 149, -1)]
    next_url = re.search(r'href="([^"]+)">Next page', first.text)
    assert next_url
    second = await viewer.get(next_url.group(1).replace("&amp;", "&"))
    assert [row[3] for row in rows_of(second.text)] == [f"h-{n}" for n in range(149, 49, -1)]
    assert "action=Heartbeat" in next_url.group(1)  # the filter goes along
    for edited in ("not a cursor", "YWJj"):  # an edited address is the first page
        again = await viewer.get("/console/stations/CS-1/messages", params={"after": edited})
        assert again.status_code == 200 and rows_of(again.text)[0][3] == "h-249", edited


async def test_dropped_frames_show_as_a_gap_with_their_count(
    harness: ConsoleHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-1")
    monkeypatch.setattr(messagelog, "MAX_BUFFERED", 10)
    log = MessageLog(harness.store, harness.clock)
    station = log.logger("CS-1", "station")
    for n in range(25):
        station("in", f'[2,"m-{n}","MeterValues",{{"connectorId":1,"meterValue":[]}}]')
    await log.run_once()
    viewer = await harness.signed_in("viewer@acme.test")
    html = (await viewer.get("/console/stations/CS-1/messages", params={"action": "MeterValues"})).text
    assert "Gap: 15 frames to and from the station missing here" in html
    shown = rows_of(html)
    assert len(shown) == 11 and shown[-2][3] == "m-15" and shown[-1][1].startswith("Gap")  # oldest last: the gap
    exported = (await viewer.get("/console/stations/CS-1/messages.ndjson")).text.splitlines()
    assert json.loads(exported[0])["direction"] == "gap" and json.loads(exported[0])["dropped"] == 15


async def test_exports_hold_the_whole_filtered_log_oldest_first(harness: ConsoleHarness) -> None:
    await _logged(harness)
    viewer = await harness.signed_in("viewer@acme.test")
    ndjson = await viewer.get("/console/stations/CS-1/messages.ndjson")
    assert ndjson.status_code == 200 and ndjson.headers["content-type"].startswith("application/x-ndjson")
    assert "attachment; filename*=UTF-8''ocpp-messages-CS-1-" in ndjson.headers["content-disposition"]
    lines = [json.loads(line) for line in ndjson.text.splitlines()]
    assert len(lines) == 8 + len(FORMULAS) and [line["id"] for line in lines] == sorted(line["id"] for line in lines)
    assert lines[0] == {
        "id": lines[0]["id"],
        "at": "2026-07-01T14:00:01+02:00",  # in the reader's zone, with its offset
        "peer": "station",
        "direction": "in",
        "messageType": 2,
        "messageId": "b-1",
        "action": "BootNotification",
        "frame": '[2,"b-1","BootNotification",{"chargePointVendor":"V","chargePointModel":"M"}]',
    }
    assert HOSTILE in lines[7]["frame"]  # an export holds the frame exactly as it came
    filtered = await viewer.get("/console/stations/CS-1/messages.ndjson", params={"action": "Reset"})
    assert [json.loads(line)["messageType"] for line in filtered.text.splitlines()] == [2, 4]
    exported = await viewer.get("/console/stations/CS-1/messages.csv")
    assert exported.status_code == 200 and exported.headers["content-type"] == "text/csv; charset=utf-8"
    table = list(csv.reader(io.StringIO(exported.text)))
    assert table[0] == ["id", "at", "peer", "direction", "messageType", "messageId", "action", "dropped", "frame"]
    assert len(table) == 1 + 8 + len(FORMULAS)
    frames = [row[-1] for row in table[1:]]
    for formula in FORMULAS:
        assert "'" + formula in frames, formula  # defused, and otherwise exactly as it came
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in table for cell in row)


def test_a_cell_a_spreadsheet_would_run_gets_a_leading_quote() -> None:
    for formula in FORMULAS:
        assert spreadsheet_safe(formula) == "'" + formula
    for harmless in ("CS-1", "Charging", "", "'=already", " =spaced", "12.5"):
        assert spreadsheet_safe(harmless) == harmless


async def test_another_companys_log_is_not_found_anywhere(harness: ConsoleHarness) -> None:
    await _logged(harness, harness.team.other_company_id)
    admin = await harness.signed_in("admin@acme.test")
    for path in (
        "/console/stations/CS-1/messages",
        "/console/stations/CS-1/messages.ndjson",
        "/console/stations/CS-1/messages.csv",
    ):
        response = await admin.get(path)
        assert response.status_code == 404 and "belongs to another company" in response.text, path
    anonymous = harness.client()
    assert (await anonymous.get("/console/stations/CS-1/messages.csv")).status_code == 303


async def test_an_export_reads_the_log_in_batches_of_its_own(harness: ConsoleHarness) -> None:
    await _logged(harness)
    opened = 0
    reading = harness.console.reading

    def counting() -> AbstractAsyncContextManager[AsyncSession]:
        nonlocal opened
        opened += 1
        return reading()

    rows = [
        row.id
        async for row in message_log.export_messages(counting, OPERATOR, "CS-1", message_log.MessageFilter(), batch=5)
    ]
    assert len(rows) == 14 and rows == sorted(rows)
    assert opened == 1 + 3  # the reach check, then three batches of at most five
