"""The station page: identity and connection (offline whatever the connectors last said), commands through the
services the API uses with the station's answer, CALLERROR, silence or refusal shown, central-system commands
disabled on a site with an upstream, a viewer who only sees, another company's station not found, and
everything the station supplies escaped."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert, select, update

from chargenet.edge.ocpp16.frames import Payload
from chargenet.errors import StationAnswerFailed, StationDidNotAnswer, StationNotConnected
from chargenet.store.models import (
    Connector,
    EdgeTransaction,
    LogUploadSlot,
    Site,
    StationCertificate,
    StationLog,
    StationNotice,
    StationPresence,
)
from tests.integration.console.conftest import (
    ORIGIN,
    ConsoleHarness,
    make_meter,
    make_site,
    make_station,
    post,
    token_of,
)
from tests.integration.console.test_sites_pages import HOSTILE

HX = {**ORIGIN, "HX-Request": "true"}


class FakeStations:
    """`ports.StationCommands` with stations that answer as a test tells them to."""

    def __init__(self) -> None:
        self.connected: set[str] = set()
        self.sent: list[tuple[str, str, Payload]] = []
        self.answers: dict[str, Payload | Exception] = {}

    async def command(self, station_id: str, action: str, payload: dict[str, Any]) -> dict[str, Any]:
        if station_id not in self.connected:
            raise StationNotConnected(station_id, "no chargenet serve process holds its connection")
        self.sent.append((station_id, action, payload))
        answer = self.answers.get(action, {"status": "Accepted"})
        if isinstance(answer, Exception):
            raise answer
        return answer

    def is_connected(self, station_id: str) -> bool:
        return station_id in self.connected


async def _station(harness: ConsoleHarness, company_id: str | None = None, **site: str) -> FakeStations:
    """Station CS-1 (one charge point, two connectors) on a site of `company_id`, and the fake edge."""
    made = await make_site(harness, company_id or harness.team.company_id, "Depot", **site)
    await make_station(harness, made.id, "CS-1", connectors=2)
    fake = FakeStations()
    harness.console.stations = fake
    return fake


async def command(client: httpx.AsyncClient, data: dict[str, str], *, htmx: bool = True) -> httpx.Response:
    fields = {"region": "answer-cp1-c1", "charge_point": "CS-1", "connector": "1", **data}
    fields["csrf_token"] = await token_of(client)
    return await client.post("/console/stations/CS-1/commands", data=fields, headers=HX if htmx else ORIGIN)


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


# --- what the page shows ----------------------------------------------------------------------------------------


async def test_an_offline_station_shows_offline_connectors_its_identity_escaped_and_commands_off(
    harness: ConsoleHarness,
) -> None:
    fake = await _station(harness)
    now = harness.clock.now()
    async with harness.store.transaction() as session:
        await session.execute(
            insert(StationPresence).values(
                station_id="CS-1",
                connected=False,
                connected_at=now,
                disconnected_at=now,
                last_seen_at=now,
                last_heartbeat_at=now,
                vendor="<i>Vend</i>",
                model=HOSTILE[:20],
                firmware_version="1.2.3",
                booted_at=now,
            )
        )
        await session.execute(
            update(Connector)
            .where(Connector.charge_point_id == "CS-1", Connector.connector_id == 1)
            .values(status="Charging", error_code="NoError", info=HOSTILE, status_at=now)
        )
        await session.execute(
            insert(Connector).values(
                charge_point_id="CS-1", connector_id=0, status="Available", error_code="NoError", status_at=now
            )
        )
    admin = await harness.signed_in("admin@acme.test")
    response = await admin.get("/console/stations/CS-1")
    assert response.status_code == 200
    html = response.text
    assert "<i>Vend</i>" not in html and "&lt;i&gt;Vend&lt;/i&gt;" in html
    assert HOSTILE not in html and HOSTILE[:20] not in html and "&lt;script&gt;" in html
    assert "Offline: not connected to chargenet since 2026-07-01 14:00:00." in html
    assert "1.2.3" in html and "Booted" in html
    shown = text_of(html)
    assert "Offline (last reported Charging)" in shown and "Connector 0 stands for the whole charge point" in shown
    assert 'class="status status-charging"' not in html  # never its last status as if it were now
    assert "Commands are off: station CS-1 is not connected to chargenet" in html
    assert 'value="remote-start" disabled aria-describedby="commands-off"' in html
    assert 'href="/console/stations/CS-1/messages"' in html and 'href="/console/sessions?station=CS-1"' in html
    # Sent anyway (a page opened before it went away): refused with the reason, nothing sent.
    refused = await command(admin, {"command": "remote-start", "id_tag": "TAG-1"})
    assert refused.status_code == 503 and "not sent" in refused.text and "is not connected" in refused.text
    assert fake.sent == []


async def test_a_connected_stations_page_enables_its_commands(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    viewer = await harness.signed_in("admin@acme.test")
    html = (await viewer.get("/console/stations/CS-1")).text
    assert "Connected." in html and "Commands are off" not in html
    assert 'value="remote-start">Start charging' in html and html.count('name="connector" value=') == 2
    assert 'value="clear-cache" class="secondary">' in html  # no upstream: chargenet is the central system


async def test_a_station_held_by_another_process_is_connected_and_takes_commands(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    async with harness.store.transaction() as session:
        await session.execute(insert(StationPresence).values(station_id="CS-1", connected=True))
    admin = await harness.signed_in("admin@acme.test")
    html = (await admin.get("/console/stations/CS-1")).text
    assert "Connected to another chargenet process" in html and "Commands are off" not in html
    assert "Offline" not in html
    fake.connected.add("CS-1")  # what the relay reaches
    assert (await command(admin, {"command": "unlock"})).status_code == 200


async def test_a_station_known_only_through_meters_says_so_and_takes_no_command(harness: ConsoleHarness) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-M")
    await make_meter(harness, site.id, "CS-M", 1)
    harness.console.stations = FakeStations()
    admin = await harness.signed_in("admin@acme.test")
    html = (await admin.get("/console/stations/CS-M")).text
    assert "Known only through its meters" in html
    assert "has no OCPP connection; chargenet knows it only through its meters" in html
    assert 'value="unlock" class="secondary" disabled' in html


# --- commands and their outcomes --------------------------------------------------------------------------------


async def test_remote_start_shows_the_stations_answer_accepted_or_rejected(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    admin = await harness.signed_in("admin@acme.test")
    accepted = await command(admin, {"command": "remote-start", "id_tag": "TAG-1", "connector": "2"})
    assert accepted.status_code == 200
    assert "<html" not in accepted.text  # htmx gets the outcome only
    shown = text_of(accepted.text)
    assert "Start charging (RemoteStartTransaction) to connector 2 of charge point CS-1" in shown
    assert "the station answered Accepted" in shown
    assert fake.sent == [("CS-1", "RemoteStartTransaction", {"connectorId": 2, "idTag": "TAG-1"})]
    fake.answers["RemoteStartTransaction"] = {"status": "Rejected"}
    rejected = await command(admin, {"command": "remote-start", "id_tag": "TAG-1"})
    assert rejected.status_code == 200 and "the station answered Rejected" in text_of(rejected.text)


async def test_a_callerror_silence_and_a_disconnect_are_shown_as_such(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    admin = await harness.signed_in("admin@acme.test")
    fake.answers["UnlockConnector"] = StationAnswerFailed("CS-1", "UnlockConnector", "NotImplemented", HOSTILE)
    failed = await command(admin, {"command": "unlock"})
    assert failed.status_code == 502
    assert "the station answered with CALLERROR NotImplemented" in text_of(failed.text)
    assert HOSTILE not in failed.text and "&lt;script&gt;" in failed.text
    fake.answers["UnlockConnector"] = StationDidNotAnswer("CS-1", "UnlockConnector", "timed out")
    silent = await command(admin, {"command": "unlock"})
    assert silent.status_code == 504 and "the station did not answer (timed out)" in text_of(silent.text)
    fake.connected.clear()
    gone = await command(admin, {"command": "unlock"})
    assert gone.status_code == 503 and "not sent" in gone.text and "is not connected" in gone.text


async def test_every_command_reaches_the_station_as_the_api_sends_it(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    admin = await harness.signed_in("admin@acme.test")
    station = {"region": "answer-station"}
    for data in (
        {"command": "unlock", "connector": "2"},
        {"command": "availability", "type": "Inoperative"},
        {"command": "trigger", "message": "MeterValues"},
        {**station, "command": "reset", "type": "Hard"},
        {**station, "command": "station-availability", "type": "Operative"},
        {**station, "command": "station-trigger", "message": "Heartbeat"},
        {**station, "command": "clear-cache"},
        {**station, "command": "change-configuration", "key": "HeartbeatInterval", "value": "60"},
    ):
        response = await command(admin, data)
        assert response.status_code == 200 and "the station answered Accepted" in text_of(response.text), data
    assert fake.sent == [
        ("CS-1", "UnlockConnector", {"connectorId": 2}),
        ("CS-1", "ChangeAvailability", {"connectorId": 1, "type": "Inoperative"}),
        ("CS-1", "TriggerMessage", {"requestedMessage": "MeterValues", "connectorId": 1}),
        ("CS-1", "Reset", {"type": "Hard"}),
        ("CS-1", "ChangeAvailability", {"connectorId": 0, "type": "Operative"}),
        ("CS-1", "TriggerMessage", {"requestedMessage": "Heartbeat"}),
        ("CS-1", "ClearCache", {}),
        ("CS-1", "ChangeConfiguration", {"key": "HeartbeatInterval", "value": "60"}),
    ]


async def test_the_configuration_is_read_on_demand_and_shown_escaped(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    fake.answers["GetConfiguration"] = {
        "configurationKey": [
            {"key": "HeartbeatInterval", "readonly": False, "value": "300"},
            {"key": "Vendor<b>Key</b>", "readonly": True, "value": HOSTILE},
            {"key": "NoValue", "readonly": True},
        ],
        "unknownKey": ["Missing<i>"],
    }
    admin = await harness.signed_in("admin@acme.test")
    page = (await admin.get("/console/stations/CS-1")).text
    assert "HeartbeatInterval" not in page  # nothing is asked of the station until the operator asks
    everything = await command(admin, {"region": "answer-config", "command": "get-configuration"})
    assert everything.status_code == 200
    shown = text_of(everything.text)
    assert "the station listed 3 keys; it does not know Missing<i>" in shown.replace("&lt;", "<").replace("&gt;", ">")
    assert "HeartbeatInterval 300 yes" in shown and "no value" in shown and "no (read-only)" in shown
    assert HOSTILE not in everything.text and "<b>Key</b>" not in everything.text and "<i>" not in everything.text
    some = await command(admin, {"region": "answer-config", "command": "get-configuration", "keys": "A, B"})
    assert some.status_code == 200
    assert fake.sent[-1] == ("CS-1", "GetConfiguration", {"key": ["A", "B"]})
    assert fake.sent[0] == ("CS-1", "GetConfiguration", {})


async def test_remote_stop_ends_the_transaction_in_progress_on_its_connector(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    now = harness.clock.now()
    async with harness.store.transaction() as session:
        site_id = await session.scalar(Site.__table__.select().with_only_columns(Site.id))
        await session.execute(
            insert(EdgeTransaction).values(
                id=41,
                station_id="CS-1",
                site_id=site_id,
                charge_point_id="CS-1",
                connector_id=1,
                ocpp_connector_id=1,
                id_tag="TAG-1",
                started_at=now,
                meter_start=1000,
                created_at=now,
            )
        )
    admin = await harness.signed_in("admin@acme.test")
    page = (await admin.get("/console/stations/CS-1")).text
    assert 'Transaction <a href="/console/sessions/41">41</a> in progress' in page and "Stop transaction 41" in page
    stopped = await command(admin, {"command": "remote-stop", "transaction_id": "41"})
    assert stopped.status_code == 200 and "the station answered Accepted" in text_of(stopped.text)
    assert fake.sent == [("CS-1", "RemoteStopTransaction", {"transactionId": 41})]
    other = await command(admin, {"command": "remote-stop", "transaction_id": "42"})
    assert other.status_code == 409 and "not in progress on station CS-1" in other.text
    assert len(fake.sent) == 1


async def test_a_bad_command_is_422_and_names_what_is_missing(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    admin = await harness.signed_in("admin@acme.test")
    no_tag = await command(admin, {"command": "remote-start", "id_tag": " "})
    assert no_tag.status_code == 422 and "type the idTag" in no_tag.text
    long_tag = await command(admin, {"command": "remote-start", "id_tag": "T" * 21})
    assert long_tag.status_code == 422
    bad_reset = await command(admin, {"command": "reset", "type": "Sideways"})
    assert bad_reset.status_code == 422 and "Soft, Hard" in bad_reset.text
    unchosen = await command(admin, {"command": "availability", "type": ""})  # the select starts on "Choose…"
    assert unchosen.status_code == 422 and "Inoperative, Operative" in unchosen.text
    unknown = await command(admin, {"command": "self-destruct"})
    assert unknown.status_code == 422
    not_ours = await command(admin, {"command": "unlock", "charge_point": "CS-9"})
    assert not_ours.status_code == 404
    assert fake.sent == []


async def test_a_plain_form_post_shows_the_page_with_the_outcome_beside_its_form(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    admin = await harness.signed_in("admin@acme.test")
    response = await command(admin, {"command": "unlock", "region": "answer-cp1-c2", "connector": "2"}, htmx=False)
    assert response.status_code == 200 and "<h1>Station CS-1</h1>" in response.text
    region = response.text.split('id="answer-cp1-c2"', 1)[1].split("</form>", 1)[0]
    assert "the station answered" in region and "Accepted" in region
    assert "the station answered" not in response.text.split('id="answer-cp1-c2"', 1)[0]


async def test_central_system_commands_on_a_site_with_an_upstream_are_off_with_the_reason(
    harness: ConsoleHarness,
) -> None:
    fake = await _station(harness, upstream_url="wss://cpo.example/ocpp")
    fake.connected.add("CS-1")
    admin = await harness.signed_in("admin@acme.test")
    html = (await admin.get("/console/stations/CS-1")).text
    assert "belong to the site&#39;s upstream central system" in html
    assert 'value="clear-cache" class="secondary" disabled aria-describedby="central-off"' in html
    assert 'value="get-configuration" disabled aria-describedby="config-off"' in html
    assert 'value="remote-start">Start charging' in html  # the station's own commands stay on
    for data in ({"command": "clear-cache"}, {"command": "get-configuration"}):
        refused = await command(admin, {**data, "region": "answer-station"})
        assert refused.status_code == 409 and "upstream central system" in refused.text
    assert fake.sent == []
    assert (await command(admin, {"command": "reset", "type": "Soft"})).status_code == 200


async def test_a_2_0_1_station_shows_its_version_its_reports_escaped_and_who_answers_it(
    harness: ConsoleHarness,
) -> None:
    fake = await _station(harness, upstream_url="wss://cpo.example/ocpp")
    fake.connected.add("CS-1")
    now = harness.clock.now()
    event = {"type": "<b>TamperDetectionActivated</b>", "timestamp": "2026-07-01T12:00:00Z", "techInfo": "lid"}
    async with harness.store.transaction() as session:
        await session.execute(
            insert(StationPresence).values(
                station_id="CS-1", connected=True, connected_at=now, ocpp_version="ocpp2.0.1"
            )
        )
        session.add(
            StationNotice(
                station_id="CS-1", action="SecurityEventNotification", payload=json.dumps(event), received_at=now
            )
        )
    admin = await harness.signed_in("admin@acme.test")
    html = (await admin.get("/console/stations/CS-1")).text
    assert '<dd id="ocpp-version">2.0.1</dd>' in html and "ocpp2.0.1, ocpp1.6" in html
    assert "chargenet answers it as its central system itself" in html and 'id="upstream-link"' not in html
    assert "&lt;b&gt;TamperDetectionActivated&lt;/b&gt;: lid" in html and "<b>Tamper" not in html
    log_page = (await admin.get("/console/stations/CS-1/messages")).text
    assert "Its latest connection speaks OCPP 2.0.1." in log_page


async def test_a_station_page_lists_the_certificates_signed_for_it_with_their_expiry(harness: ConsoleHarness) -> None:
    await _station(harness)
    now = harness.clock.now()
    async with harness.store.transaction() as session:
        session.add(
            StationCertificate(
                station_id="CS-1",
                serial="5A1B",
                subject="CN=CS-1",
                fingerprint="AB:CD",
                not_after=now + timedelta(days=365),
                issued_at=now,
            )
        )
    viewer = await harness.signed_in("viewer@acme.test")
    html = (await viewer.get("/console/stations/CS-1")).text
    assert 'id="station-certificates"' in html and "<code>5A1B</code>" in html and "CN=CS-1" in html


async def test_a_station_is_asked_for_a_new_certificate_in_its_generations_words(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    admin = await harness.signed_in("admin@acme.test")
    asked = await command(admin, {"region": "answer-station", "command": "request-csr"})
    assert asked.status_code == 200 and "the station answered Accepted" in text_of(asked.text)
    assert fake.sent == [("CS-1", "ExtendedTriggerMessage", {"requestedMessage": "SignChargePointCertificate"})]


# --- who may see and do what ------------------------------------------------------------------------------------


async def test_a_viewer_sees_the_station_and_is_refused_its_commands(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    viewer = await harness.signed_in("viewer@acme.test")
    html = (await viewer.get("/console/stations/CS-1")).text
    assert "Connected." in html and "Start charging" not in html and "Read configuration" not in html
    assert "Your role (viewer) sees this station but does not send it commands." in html
    for data in ({"command": "remote-start", "id_tag": "T"}, {"command": "reset", "type": "Hard"}):
        refused = await command(viewer, data)
        assert refused.status_code == 403 and "this needs the admin role" in refused.text
    assert fake.sent == []


async def test_commands_need_the_token_and_the_consoles_own_origin(harness: ConsoleHarness) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    admin = await harness.signed_in("admin@acme.test")
    data = {"command": "reset", "type": "Hard", "region": "answer-reset"}
    assert (await admin.post("/console/stations/CS-1/commands", data=data, headers=ORIGIN)).status_code == 403
    token = await token_of(admin)
    foreign = {"Origin": "https://evil.example"}
    forged = await admin.post("/console/stations/CS-1/commands", data={**data, "csrf_token": token}, headers=foreign)
    assert forged.status_code == 403
    assert fake.sent == []


async def test_another_companys_station_is_not_found_and_takes_no_command(harness: ConsoleHarness) -> None:
    fake = await _station(harness, harness.team.other_company_id)
    fake.connected.add("CS-1")
    admin = await harness.signed_in("admin@acme.test")
    assert (await admin.get("/console/stations/CS-1")).status_code == 404
    response = await command(admin, {"command": "reset", "type": "Hard"})
    assert response.status_code == 404 and "belongs to another company" in response.text
    assert (await post(admin, "/console/stations/CS-1/delete")).status_code == 404
    assert fake.sent == []


async def test_a_station_is_asked_for_its_log_and_the_logs_it_uploaded_are_listed_and_downloaded(
    harness: ConsoleHarness, tmp_path: Path
) -> None:
    fake = await _station(harness)
    fake.connected.add("CS-1")
    fake.answers["GetDiagnostics"] = {"fileName": "diag.log"}
    harness.console.upload_url = "https://uploads.example.com"
    harness.console.data_dir = tmp_path
    admin = await harness.signed_in("admin@acme.test")
    asked = await command(admin, {"region": "answer-station", "command": "request-log"})
    assert asked.status_code == 200 and "it will upload diag.log" in text_of(asked.text)
    [(_, action, payload)] = fake.sent
    assert action == "GetDiagnostics" and payload["location"].startswith("https://uploads.example.com/uploads/")

    (tmp_path / "station-logs" / "CS-1").mkdir(parents=True)
    (tmp_path / "station-logs" / "CS-1" / "1-diag.log").write_bytes(b"all nominal\n")
    now = harness.clock.now()
    async with harness.store.transaction() as session:
        slot = await session.scalar(select(LogUploadSlot))
        assert slot is not None
        session.add(
            StationLog(
                station_id="CS-1",
                request_id=slot.id,
                file_name="diag.log",
                size=12,
                sha256="ab" * 32,
                received_at=now,
                path="station-logs/CS-1/1-diag.log",
            )
        )
    viewer = await harness.signed_in("viewer@acme.test")
    html = (await viewer.get("/console/stations/CS-1")).text
    link = re.search(r'href="(/console/stations/CS-1/logs/\d+)" download>diag.log<', html)
    assert 'id="station-logs"' in html and link is not None
    downloaded = await viewer.get(link.group(1))
    assert downloaded.status_code == 200 and downloaded.content == b"all nominal\n"
    assert "attachment" in downloaded.headers["content-disposition"]
