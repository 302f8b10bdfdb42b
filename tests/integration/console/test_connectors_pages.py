"""The live connector status page and its event stream, served for real (uvicorn on loopback); the stream on
both backends, the table's rendering on SQLite.

The process's live feed runs on a ManualClock: a status the edge's writer commits in this process wakes it at
once (the outbox signal); what only a poll finds (a connection change, another process's commit) is found when
the test moves the clock past the poll interval. Streams are read as a browser's EventSource reads them."""

from __future__ import annotations

import asyncio
import html
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
import uvicorn
from sqlalchemy import update
from sqlalchemy.dialects import postgresql, sqlite
from starlette.applications import Starlette
from starlette.routing import Mount

from chargenet.clock import ManualClock
from chargenet.console.app import create_console
from chargenet.console.live import LiveFeed
from chargenet.console.pages import Console
from chargenet.console.views import connectors
from chargenet.console.views.connectors import HEARTBEAT
from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus
from chargenet.edge.statuses import record_status
from chargenet.keys import KeyStore
from chargenet.outbox import Outbox
from chargenet.services import companies, sites
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import Operator, StationPresence
from tests.factories import add_station
from tests.support.in_loop import start_serving
from tests.support.operators import PASSWORD, add_operator, cheap_passwords
from tests.support.ports import free_port

pytestmark = pytest.mark.sqlite_only(reason="the live table's rendering, filters and refusals")


@dataclass
class Served:
    store: Store
    clock: ManualClock
    feed: LiveFeed
    url: str  # the console's address
    site_a: str
    site_b: str
    keys: KeyStore
    clients: list[httpx.AsyncClient] = field(default_factory=list)

    def client(self) -> httpx.AsyncClient:
        made = httpx.AsyncClient(base_url=self.url.removesuffix("/console"), timeout=10)
        self.clients.append(made)
        return made

    async def signed_in(self, email: str) -> httpx.AsyncClient:
        client = self.client()
        origin = {"Origin": self.url.removesuffix("/console")}
        response = await client.post("/console/login", data={"email": email, "password": PASSWORD}, headers=origin)
        assert response.status_code == 303, response.text
        return client

    async def status(
        self, station_id: str, connector: int, status: str, *, seconds: float = 1, info: str | None = None
    ) -> None:
        """A StatusNotification as the edge records it (the same writer, in one transaction with its event)."""
        self.clock.advance(seconds)
        async with self.store.transaction() as session:
            await record_status(
                session,
                Outbox(self.clock),
                station_id=station_id,
                ocpp_connector_id=connector,
                status=ConnectorStatus(status),
                error_code=ChargePointErrorCode.NO_ERROR,
                timestamp=self.clock.now(),
                now=self.clock.now(),
                info=info,
            )

    async def presence(self, station_id: str, *, connected: bool) -> None:
        """A station's link as the edge's message log records it."""
        now = self.clock.now()
        fields: dict[str, object] = {"connected": connected, "connected_at" if connected else "disconnected_at": now}
        insert = (postgresql.insert if self.store.dialect == "postgresql" else sqlite.insert)(StationPresence)
        async with self.store.transaction() as session:
            await session.execute(
                insert.values(station_id=station_id, **fields).on_conflict_do_update(
                    index_elements=[StationPresence.station_id], set_=fields
                )
            )


@pytest.fixture
async def served(store: Store, clock: ManualClock, tmp_path: Path) -> AsyncIterator[Served]:
    passwords = cheap_passwords()
    keys = KeyStore(tmp_path / "keys")
    keys.ensure()
    async with store.transaction() as session:
        acme = await companies.create_company(session, OPERATOR, name="Acme", now=clock.now())
        other = await companies.create_company(session, OPERATOR, name="Other", now=clock.now())
        site_a = await sites.create_site(
            session, OPERATOR, keys.credential_cipher(), company_id=acme.id, name="Harbour", now=clock.now()
        )
        site_b = await sites.create_site(
            session, OPERATOR, keys.credential_cipher(), company_id=other.id, name="Depot", now=clock.now()
        )
        for site_id, station_id in ((site_a.id, "ST-A"), (site_a.id, "ST-A2"), (site_b.id, "ST-B")):
            await add_station(session, keys, site_id, station_id, clock.now(), connectors=2)
    people = ((acme.id, "owner@acme.test", "owner"), (acme.id, "viewer@acme.test", "viewer"))
    for company_id, email, role in (*people, (other.id, "owner@other.test", "owner")):
        await add_operator(store.transaction, passwords, clock.now(), company_id=company_id, email=email, role=role)
    port = free_port()
    public_url = f"http://127.0.0.1:{port}"
    feed = LiveFeed(store.read, clock)
    console = Console(store.transaction, clock, public_url, passwords, read=store.read, live=feed)
    app = Starlette(routes=[Mount("/console", app=create_console(console))])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    stopping = asyncio.Event()
    reader = asyncio.create_task(feed.run(stopping))
    task = await start_serving(server)
    await feed.started.wait()
    served = Served(store, clock, feed, f"{public_url}/console", site_a.id, site_b.id, keys)
    try:
        yield served
    finally:
        for client in served.clients:
            await client.aclose()
        feed.end_all()  # as `chargenet serve` does when asked to stop: the streams end first
        server.should_exit = True
        await task
        stopping.set()
        await reader


@dataclass
class Stream:
    response: httpx.Response
    lines: AsyncIterator[str]
    rows: int = 0  # row events read so far

    async def event(self, within: float = 10.0) -> tuple[str, str]:
        """The next event (its name and data); comments are skipped."""
        name, data = "message", []
        async with asyncio.timeout(within):
            async for line in self.lines:
                if line == "":
                    if data:
                        return name, "\n".join(data)
                    name = "message"
                elif line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    data.append(line.removeprefix("data: "))
        raise AssertionError("the stream ended")

    async def row(self, *containing: str, within: float = 10.0, never: str | None = None) -> str:
        """The first `row` event whose HTML contains each of `containing` (rows before it are other changes, such
        as a station's link or an earlier status, but none may contain `never`); any other event fails."""
        async with asyncio.timeout(within):
            while True:
                name, data = await self.event()
                assert name == "row", (name, data)
                self.rows += 1
                assert never is None or never not in data, data
                if all(text in data for text in containing):
                    return data


@dataclass
class Opened:
    page: str
    stream: Stream


@asynccontextmanager
async def live_page(client: httpx.AsyncClient, query: str = "") -> AsyncIterator[Opened]:
    """The page read, and the stream it names open, as the page's script opens it."""
    page = await client.get(f"/console/connectors{query}")
    assert page.status_code == 200, page.text
    async with client.stream("GET", stream_url(page.text)) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        yield Opened(page.text, Stream(response, response.aiter_lines()))


def stream_url(page: str) -> str:
    found = re.search(r'data-live-stream="([^"]+)"', page)
    assert found, "the page does not follow a stream"
    return html.unescape(found.group(1))


# --- the stream ------------------------------------------------------------------------------------------------


@pytest.mark.both_stores(reason="the live feed is woken by each store's own signal")
async def test_a_status_committed_by_the_edge_reaches_the_open_stream_of_its_company_only(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    other = await served.signed_in("owner@other.test")
    await served.presence("ST-A", connected=True)
    await served.presence("ST-B", connected=True)
    async with live_page(acme) as ours, live_page(other) as theirs:
        await served.status("ST-A", 1, "Available")
        await ours.stream.row('id="live-ST-A-1"', "Available")
        await served.status("ST-B", 1, "Faulted")
        # The other company's first row is its own station's: ST-A's never reached it.
        await theirs.stream.row('id="live-ST-B-1"', "Faulted", never="/stations/ST-A")
        await served.status("ST-A", 1, "Charging")
        await ours.stream.row('id="live-ST-A-1"', "status-charging")


@pytest.mark.both_stores(reason="the live feed is woken by each store's own signal")
async def test_a_row_sent_to_several_streams_is_rendered_once(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    await served.presence("ST-A", connected=True)
    # The feed knows the connection before the first page opens: the read its first browser wakes then finds
    # nothing for that stream alone, and both streams get the same rows.
    await served.feed.run_once()
    async with live_page(acme) as first, live_page(acme) as second:
        before = len(connectors.rendered_rows)
        await served.status("ST-A", 1, "Charging")
        await first.stream.row('id="live-ST-A-1"', "status-charging")
        await second.stream.row('id="live-ST-A-1"', "status-charging")
        assert first.stream.rows == second.stream.rows
        assert len(connectors.rendered_rows) == before + first.stream.rows


@pytest.mark.both_stores(reason="the live feed is woken by each store's own signal")
async def test_a_streamed_row_names_its_site_like_the_page_does(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    await served.presence("ST-A", connected=True)
    async with live_page(acme) as opened:
        await served.status("ST-A", 1, "Charging")
        row = await opened.stream.row('id="live-ST-A-1"', "status-charging")
        assert f'<a href="/console/sites/{served.site_a}">Harbour</a>' in row
        assert f'<code class="hint" title="Site ID">{served.site_a}</code>' in row


@pytest.mark.both_stores(reason="the live feed polls each store for presence")
async def test_a_disconnected_station_turns_offline_in_the_stream_with_its_last_status(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    await served.presence("ST-A", connected=True)
    await served.status("ST-A", 2, "Available")
    async with live_page(acme) as opened:
        await served.status("ST-A", 2, "Charging")
        await opened.stream.row('id="live-ST-A-2"', "status-charging")
        await served.presence("ST-A", connected=False)  # written by the message log: no event, found by a poll
        served.clock.advance(1)
        await opened.stream.row('id="live-ST-A-2"', "status-offline", "last reported Charging")


@pytest.mark.both_stores(reason="what the feed reads after the page differs in each store's snapshots")
async def test_a_change_committed_between_the_page_and_its_stream_is_not_lost(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    await served.presence("ST-A", connected=True)
    page = await acme.get("/console/connectors")
    await served.status("ST-A", 1, "Available")
    await served.feed.run_once()  # the feed has published it before the browser opens the stream
    async with acme.stream("GET", stream_url(page.text)) as response:
        stream = Stream(response, response.aiter_lines())
        await stream.row('id="live-ST-A-1"', "status-available")


async def test_station_supplied_info_is_sent_as_text(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    await served.presence("ST-A", connected=True)
    async with live_page(acme) as opened:
        await served.status("ST-A", 1, "Available", info="<img src=x>")
        data = await opened.stream.row('id="live-ST-A-1"', "status-available")
        assert "<img" not in data
        assert "&lt;img src=x&gt;" in data


@pytest.mark.both_stores(reason="the live feed is woken by each store's own signal")
async def test_a_stream_that_falls_behind_is_told_to_resync(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    served.feed.capacity = 1
    await served.presence("ST-A", connected=True)
    async with live_page(acme) as opened:
        served.clock.advance(1)
        await served.presence("ST-A", connected=False)  # both connectors of ST-A change at once
        served.clock.advance(1)
        await served.feed.run_once()
        name, _ = await opened.stream.event()
        assert name == "resync"


async def test_signing_out_ends_the_stream(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    async with live_page(acme) as opened:
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', opened.page).group(1)  # type: ignore[union-attr]
        origin = {"Origin": served.url.removesuffix("/console")}
        ended = await acme.post("/console/logout", data={"csrf_token": csrf}, headers=origin)
        assert ended.status_code == 303
        name, _ = await opened.stream.event()
        assert name == "end"


async def test_a_stream_whose_session_expired_ends_at_its_next_heartbeat(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    async with live_page(acme) as opened:
        await asyncio.sleep(0)  # the stream is waiting for its heartbeat
        served.clock.advance(timedelta(hours=13).total_seconds())  # beyond the absolute lifetime (12 h)
        name, _ = await opened.stream.event()
        assert name == "end"


async def test_a_disabled_operators_stream_ends_within_a_heartbeat_while_rows_keep_coming(served: Served) -> None:
    viewer = await served.signed_in("viewer@acme.test")
    await served.presence("ST-A", connected=True)
    async with live_page(viewer) as opened:
        await served.status("ST-A", 1, "Available")
        await opened.stream.row('id="live-ST-A-1"', "status-available")
        async with served.store.transaction() as session:
            await session.execute(update(Operator).where(Operator.email == "viewer@acme.test").values(enabled=False))
        # A busy network: a row every two thirds of a heartbeat, so the stream is never quiet for a whole one.
        ended = None
        for status in ("Preparing", "Charging", "SuspendedEV"):
            served.clock.advance(HEARTBEAT * 2 / 3)
            await served.status("ST-A", 1, status)
            name, data = await opened.stream.event()
            if name != "row":
                ended = (name, data)
                break
        assert ended == ("end", "signed out")


async def test_a_viewer_follows_the_live_table_too(served: Served) -> None:
    viewer = await served.signed_in("viewer@acme.test")
    await served.presence("ST-A", connected=True)
    async with live_page(viewer) as opened:
        await served.status("ST-A", 1, "Available")
        await opened.stream.row('id="live-ST-A-1"', "status-available")


async def test_the_stream_needs_a_signed_in_operator(served: Served) -> None:
    response = await served.client().get("/console/connectors/stream")
    assert response.status_code == 303
    assert "/console/login" in response.headers["location"]


@pytest.mark.both_stores(reason="another process's commit reaches the feed by each store's own way")
async def test_a_change_committed_by_another_process_reaches_the_stream(served: Served, database_url: str) -> None:
    acme = await served.signed_in("owner@acme.test")
    await served.presence("ST-A2", connected=True)
    async with live_page(acme) as opened:
        at = served.clock.now() + timedelta(seconds=5)
        # Another OS process records the status through its own store: nothing here is told; the poll finds it.
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", OTHER_PROCESS, database_url, at.isoformat(), cwd=Path(__file__).parents[3]
        )
        assert await child.wait() == 0
        served.clock.advance(1)
        await opened.stream.row('id="live-ST-A2-1"', "status-available")


OTHER_PROCESS = """
import asyncio, sys
from datetime import datetime
from chargenet.clock import ManualClock
from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus
from chargenet.edge.statuses import record_status
from chargenet.outbox import Outbox
from chargenet.store.db import Store

async def main():
    store = Store(sys.argv[1])
    clock = ManualClock(datetime.fromisoformat(sys.argv[2]))
    try:
        async with store.transaction() as session:
            await record_status(session, Outbox(clock), station_id="ST-A2", ocpp_connector_id=1,
                status=ConnectorStatus.AVAILABLE, error_code=ChargePointErrorCode.NO_ERROR,
                timestamp=clock.now(), now=clock.now())
    finally:
        await store.dispose()

asyncio.run(main())
"""


# --- the page --------------------------------------------------------------------------------------------------


def shown_rows(page: str) -> list[str]:
    return re.findall(r'<tr id="live-([^"]+)">', page)


async def test_the_table_lists_the_connectors_of_the_operators_company_only(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    page = await acme.get("/console/connectors")
    assert shown_rows(page.text) == ["ST-A-1", "ST-A-2", "ST-A2-1", "ST-A2-2"]
    assert "ST-B" not in page.text


async def test_the_table_shows_the_sites_name_with_its_id_below_to_copy(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    page = await acme.get("/console/connectors")
    row = page.text.split('<tr id="live-ST-A-1">')[1].split("</tr>")[0]
    site_cell = row.split("</td>")[0]
    assert f'<a href="/console/sites/{served.site_a}">Harbour</a>' in site_cell
    assert f'<code class="hint" title="Site ID">{served.site_a}</code>' in site_cell


async def test_a_station_not_connected_is_shown_offline_whatever_it_last_reported(served: Served) -> None:
    await served.presence("ST-A", connected=True)
    await served.status("ST-A", 1, "Charging")
    await served.presence("ST-A", connected=False)
    acme = await served.signed_in("owner@acme.test")
    page = await acme.get("/console/connectors")
    row = page.text.split('<tr id="live-ST-A-1">')[1].split("</tr>")[0]
    assert "status-offline" in row
    assert "last reported Charging" in row
    assert "status-charging" not in row


async def test_a_connected_station_shows_its_status_source_and_heartbeat(served: Served) -> None:
    await served.presence("ST-A", connected=True)
    await served.status("ST-A", 1, "Charging")
    acme = await served.signed_in("owner@acme.test")
    page = await acme.get("/console/connectors")
    row = page.text.split('<tr id="live-ST-A-1">')[1].split("</tr>")[0]
    assert "status-charging" in row
    assert "StatusNotification" in row
    assert "connected" in row


async def test_the_status_filter_shows_connectors_of_connected_stations_with_that_status(served: Served) -> None:
    await served.presence("ST-A", connected=True)
    await served.status("ST-A", 1, "Available")
    await served.status("ST-A2", 1, "Available")  # not connected: shown offline, so not "Available"
    acme = await served.signed_in("owner@acme.test")
    page = await acme.get("/console/connectors?status=Available")
    assert shown_rows(page.text) == ["ST-A-1"]


async def test_the_connection_filter_separates_connected_and_offline_stations(served: Served) -> None:
    await served.presence("ST-A", connected=True)
    acme = await served.signed_in("owner@acme.test")
    connected = await acme.get("/console/connectors?connection=connected")
    offline = await acme.get("/console/connectors?connection=offline")
    assert shown_rows(connected.text) == ["ST-A-1", "ST-A-2"]
    assert shown_rows(offline.text) == ["ST-A2-1", "ST-A2-2"]


@pytest.mark.both_stores(reason="matching in any case is each store's own")
async def test_the_station_search_matches_part_of_a_station_id_in_any_case(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    page = await acme.get("/console/connectors?station=a2")
    assert shown_rows(page.text) == ["ST-A2-1", "ST-A2-2"]


async def test_the_site_filter_offers_the_companys_sites_by_name_and_no_other_companys(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    page = (await acme.get(f"/console/connectors?site={served.site_a}")).text
    assert f'<option value="{served.site_a}" selected>Harbour</option>' in page
    assert served.site_b not in page and "Depot" not in page


async def test_the_site_filter_of_another_companys_site_shows_nothing(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    ours = await acme.get(f"/console/connectors?site={served.site_a}")
    theirs = await acme.get(f"/console/connectors?site={served.site_b}")
    assert len(shown_rows(ours.text)) == 4
    assert shown_rows(theirs.text) == []


async def test_an_unknown_status_filter_is_refused_naming_the_field(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    page = await acme.get("/console/connectors?status=Sleeping")
    assert page.status_code == 422
    assert 'aria-invalid="true"' in page.text


async def test_a_filter_holding_text_no_id_can_hold_is_refused_naming_the_field(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    page = await acme.get("/console/connectors", params={"station": "A\x00B"})
    assert page.status_code == 422
    assert 'aria-invalid="true"' in page.text


@pytest.mark.both_stores(reason="keyset order is each store's")
async def test_the_table_is_paged_by_keyset_fifty_rows_at_a_time(served: Served) -> None:
    async with served.store.transaction() as session:
        await add_station(
            session, served.keys, served.site_a, "BIG", served.clock.now(), charge_points=10, connectors=12
        )
    acme = await served.signed_in("owner@acme.test")
    seen: list[str] = []
    sizes: list[int] = []
    path: str | None = "/console/connectors"
    while path is not None:
        page = await acme.get(path)
        rows = shown_rows(page.text)
        sizes.append(len(rows))
        seen += rows
        following = re.search(r'<a href="([^"]+)">Next page</a>', page.text)
        path = html.unescape(following.group(1)) if following else None
    assert sizes == [50, 50, 24]  # 120 + 4 connectors
    assert len(set(seen)) == 124


async def test_an_edited_cursor_is_the_first_page(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    page = await acme.get("/console/connectors?after=bm9wZQ")
    assert page.status_code == 200
    assert shown_rows(page.text)[0] == "ST-A-1"


async def test_connector_zero_is_explained_where_it_appears(served: Served) -> None:
    await served.presence("ST-A", connected=True)
    await served.status("ST-A", 0, "Unavailable")
    acme = await served.signed_in("owner@acme.test")
    page = await acme.get("/console/connectors")
    assert "ST-A-0" in shown_rows(page.text)
    assert "(whole charge point)" in page.text
    assert "Connector 0 stands for the whole charge point" in page.text


async def test_the_live_page_is_in_the_navigation(served: Served) -> None:
    acme = await served.signed_in("owner@acme.test")
    page = await acme.get("/console/")
    assert 'href="/console/connectors"' in page.text
