"""Debian's nginx with deploy/nginx/chargenet.conf (its ports, paths and certificate changed, nothing else) in front
of two `chargenet serve` processes sharing one PostgreSQL database, driven only through the proxy over TLS, as
stations, partners and operators reach a production deployment."""

from __future__ import annotations

import asyncio
import getpass
import html
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from chargenet.app import open_context
from chargenet.config import load_settings
from chargenet.services import applications, companies, groups, sites
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import Payload, SimulatedStation
from chargenet.store.db import Store
from chargenet.store.models import StationCommand, StationPresence
from chargenet.webhooks.outbound_auth import NoAuth
from tests.factories import add_station
from tests.support.deploy import NGINX_SITE, ROOT, self_signed
from tests.support.operators import PASSWORD, add_operator, cheap_passwords
from tests.support.ports import free_port
from tests.support.receiver import Receiver, run_receiver
from tests.support.sse import next_row

NGINX = shutil.which("nginx", path=f"{os.environ.get('PATH', '')}{os.pathsep}/usr/sbin")
STATION_KEYS = {"CS-NORTH": "north-station-key-0001", "CS-SOUTH": "south-station-key-0002"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(NGINX is None, reason="nginx is not installed: `make test` installs Debian's nginx-light"),
]


def site_config(folder: Path, *, http_port: int, https_port: int, upstreams: list[int], cert: Path, key: Path) -> str:
    """The repository's site with only its ports, certificate and log paths changed; each must still be there."""
    text = NGINX_SITE.read_text()
    changes = [
        ("    listen [::]:80;\n", ""),  # loopback only: CI machines may have no IPv6
        ("    listen [::]:443 ssl;\n", ""),
        ("listen 80;", f"listen 127.0.0.1:{http_port};"),
        ("listen 443 ssl;", f"listen 127.0.0.1:{https_port} ssl;"),
        ("server 127.0.0.1:8081;", f"server 127.0.0.1:{upstreams[0]};"),
        ("server 127.0.0.1:8082;", f"server 127.0.0.1:{upstreams[1]};"),
        ("/etc/ssl/chargenet/fullchain.pem", str(cert)),
        ("/etc/ssl/chargenet/privkey.pem", str(key)),
        ("/var/log/nginx/", f"{folder}/"),
    ]
    for old, new in changes:
        assert old in text, f"deploy/nginx/chargenet.conf no longer has {old!r}"
        text = text.replace(old, new)
    return text


def main_config(folder: Path) -> str:
    """What Debian's /etc/nginx/nginx.conf gives a site, with every path in `folder`."""
    # As root, nginx's workers would run as `nobody`, who cannot enter pytest's temporary folder.
    user = f"user {getpass.getuser()};\n" if os.geteuid() == 0 else ""
    temp = "".join(
        f"    {kind}_temp_path {folder / kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}worker_processes 1;\npid {folder / 'nginx.pid'};\nerror_log {folder / 'error.log'};\ndaemon off;\n"
        "events { worker_connections 256; }\n"
        f"http {{\n{temp}    access_log {folder / 'access.log'};\n    include {folder / 'chargenet.conf'};\n}}\n"
    )


async def _until_accepting(port: int, process: asyncio.subprocess.Process, what: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert process.returncode is None, f"{what} exited early"
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            assert time.monotonic() < deadline, f"{what} did not accept connections within 60 s"
            await asyncio.sleep(0.05)
            continue
        writer.close()
        await writer.wait_closed()
        return


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
            await process.wait()


@dataclass
class Deployment:
    origin: str  # the proxy's https:// address, the public URL of both processes
    tls: ssl.SSLContext
    processes: list[asyncio.subprocess.Process]
    store: Store
    company_id: str
    site_id: str
    client_id: str
    client_secret: str
    receiver: Receiver

    def station(self, station_id: str) -> SimulatedStation:
        ws_origin = self.origin.replace("https://", "wss://")
        return SimulatedStation(f"{ws_origin}/ocpp", station_id, password=STATION_KEYS[station_id], tls=self.tls)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.origin, verify=self.tls, timeout=40)


@pytest.fixture
async def deployment(pg_url: str, tmp_path: Path) -> AsyncIterator[Deployment]:
    assert NGINX is not None
    data_dir, proxy_dir = tmp_path / "data", tmp_path / "nginx"
    proxy_dir.mkdir()
    cert, key = self_signed(proxy_dir)
    https_port, http_port = free_port(), free_port()
    origin = f"https://127.0.0.1:{https_port}"
    ports = [free_port(), free_port()]
    async with run_receiver() as receiver:
        context = await open_context(load_settings({"database_url": pg_url, "data_dir": str(data_dir)}, environ={}))
        now = context.clock.now()
        cipher = context.keys.credential_cipher()
        try:
            async with context.store.transaction() as session:
                company = await companies.create_company(session, OPERATOR, name="Acme", now=now)
                site = await sites.create_site(session, OPERATOR, cipher, company_id=company.id, name="Port", now=now)
                for station_id, password in STATION_KEYS.items():
                    await add_station(session, context.keys, site.id, station_id, now, password=password, connectors=1)
                app = await applications.create_application(
                    session, OPERATOR, context.keys.secret_hasher(), company_id=company.id, name="Fleet", now=now
                )
                scopes = ["charge-points:read", "charge-points:write"]
                group = await groups.create_group(
                    session, OPERATOR, company_id=company.id, site_id=None, name="Fleet", scopes=scopes, now=now
                )
                await groups.add_app(session, OPERATOR, group.id, app.client_id, now=now)
            await webhook_service.create_webhook(
                context.store.transaction,
                OPERATOR,
                cipher,
                site_id=site.id,
                url=receiver.url,
                event_types=["ChargePointStatus"],
                auth=NoAuth(),
                now=now,
                allow_private=True,
            )
            await add_operator(
                context.store.transaction, cheap_passwords(), now, company_id=company.id, email="owner@acme.test"
            )
        finally:
            await context.close()
        processes = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                *("-m", "chargenet", "serve", "--port", str(port), "--data-dir", str(data_dir)),
                *("--database-url", pg_url, "--public-url", origin, "--forwarded-allow-ips", "127.0.0.1"),
                *("--webhook-allow-private", "--log-level", "warning"),
                env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'sdk' / 'python'}"},
                stdout=subprocess.DEVNULL,
            )
            for port in ports
        ]
        (proxy_dir / "chargenet.conf").write_text(
            site_config(proxy_dir, http_port=http_port, https_port=https_port, upstreams=ports, cert=cert, key=key)
        )
        (proxy_dir / "nginx.conf").write_text(main_config(proxy_dir))
        nginx = await asyncio.create_subprocess_exec(
            NGINX, "-p", str(proxy_dir), "-c", str(proxy_dir / "nginx.conf"), "-e", str(proxy_dir / "error.log")
        )
        store = Store(pg_url)
        try:
            for process, port in zip(processes, ports, strict=True):
                await _until_accepting(port, process, "chargenet serve")
            await _until_accepting(https_port, nginx, "nginx")
            yield Deployment(
                origin,
                ssl.create_default_context(cafile=cert),
                processes,
                store,
                company.id,
                site.id,
                app.client_id,
                app.client_secret,
                receiver,
            )
        finally:
            await _stop(nginx)
            for process in processes:
                await _stop(process)
            await store.dispose()


async def _relaying_process(store: Store, station_id: str) -> int | None:
    """The process id of the process that claimed a command for `station_id` from another's API; None: none did."""
    async with store.transaction() as session:
        claimed_by = await session.scalar(
            select(StationCommand.claimed_by).where(StationCommand.station_id == station_id)
        )
    return int(claimed_by.split(":")[1]) if claimed_by else None


async def _connected_as_every_process_sees_it(store: Store, station_ids: set[str], within: float = 20) -> None:
    # A process records its stations' connections in the store with its next batch (about once a second); until
    # then, the others answer that the station is not connected.
    async with asyncio.timeout(within):
        while True:
            async with store.transaction() as session:
                connected = set(
                    await session.scalars(
                        select(StationPresence.station_id).where(
                            StationPresence.station_id.in_(station_ids), StationPresence.connected.is_(True)
                        )
                    )
                )
            if connected == station_ids:
                return
            await asyncio.sleep(0.05)


async def _eventually(condition: Callable[[], bool], within: float = 30) -> None:
    async with asyncio.timeout(within):
        while not condition():
            await asyncio.sleep(0.05)


async def test_stations_partners_and_operators_work_through_nginx_in_front_of_two_processes(
    deployment: Deployment,
) -> None:
    north, south = deployment.station("CS-NORTH"), deployment.station("CS-SOUTH")
    # Who holds the station at the moment it is asked: the process that claimed the command, if it was relayed.
    heard_from: dict[str, list[int | None]] = {"CS-NORTH": [], "CS-SOUTH": []}

    def answer_reset(station_id: str) -> Callable[[Payload], object]:
        async def answer(_: Payload) -> Payload:
            heard_from[station_id].append(await _relaying_process(deployment.store, station_id))
            return {"status": "Accepted"}

        return answer

    try:
        for station in (north, south):
            station.answers["Reset"] = answer_reset(station.station_id)
            await station.connect()
            assert (await station.boot())["status"] == "Accepted"
            await station.status(1, "Available")
        await _connected_as_every_process_sees_it(deployment.store, set(heard_from))

        async with deployment.client() as partner:
            issued = await partner.post(
                "/auth/oauth2/token",
                data={"grant_type": "client_credentials"},
                auth=(deployment.client_id, deployment.client_secret),
            )
            assert issued.status_code == 200, issued.text
            partner.headers["Authorization"] = f"Bearer {issued.json()['access_token']}"
            listed = await partner.get("/api/v1/charge-points", headers={"X-Request-ID": "fleet-42"})
            assert listed.status_code == 200
            assert listed.headers["x-request-id"] == "fleet-42"  # the proxy keeps the caller's request id
            assert (await partner.get("/metrics")).status_code == 404  # scraped per process, not through the proxy
            assert {item["id"] for item in listed.json()["items"]} == {"CS-NORTH", "CS-SOUTH"}
            # The proxy spreads requests over both processes, so within a few calls each station is reached from
            # the API of the process that does not hold it.
            for station_id in heard_from:
                for _ in range(6):
                    reset = await partner.post(f"/api/v1/charge-points/{station_id}/reset", json={"type": "Soft"})
                    assert reset.json() == {"status": "Accepted"}
                    if heard_from[station_id][-1] is not None:
                        break
        assert all(any(heard) for heard in heard_from.values()), heard_from
        holders = {station_id: next(pid for pid in heard if pid) for station_id, heard in heard_from.items()}
        assert sorted(holders.values()) == sorted(process.pid for process in deployment.processes)

        async with deployment.client() as browser:
            signed = await browser.post(
                "/console/login",
                data={"email": "owner@acme.test", "password": PASSWORD},
                headers={"Origin": deployment.origin},
            )
            assert signed.status_code == 303, signed.text
            assert "; secure" in signed.headers["set-cookie"].lower()  # the public URL is https
            page = await browser.get("/console/connectors")
            found = re.search(r'data-live-stream="([^"]+)"', page.text)
            assert found
            async with browser.stream("GET", html.unescape(found.group(1))) as stream:
                assert stream.headers["content-type"].startswith("text/event-stream")
                lines = stream.aiter_lines()
                await north.status(1, "Preparing")
                await next_row(lines, 'id="live-CS-NORTH-1"', "status-preparing")
                await south.status(1, "Preparing")
                await next_row(lines, 'id="live-CS-SOUTH-1"', "status-preparing")

        def statuses() -> list[tuple[str, str]]:
            payloads = [json.loads(body)["payload"] for body in deployment.receiver.bodies()]
            return [(payload["stationId"], payload["status"]) for payload in payloads]

        # One lane, in order: once the last status is in, every earlier one has been delivered.
        await _eventually(lambda: ("CS-SOUTH", "Preparing") in statuses())
        assert sorted(statuses()) == [
            ("CS-NORTH", "Available"),
            ("CS-NORTH", "Preparing"),
            ("CS-SOUTH", "Available"),
            ("CS-SOUTH", "Preparing"),
        ]
        event_ids = [json.loads(body)["eventId"] for body in deployment.receiver.bodies()]
        assert len(set(event_ids)) == len(event_ids)
    finally:
        await north.close()
        await south.close()


def test_every_location_that_sets_headers_sets_the_forwarded_ones_too() -> None:
    # nginx drops every server-level proxy_set_header from a location that sets one of its own: a location that
    # forgot them would give chargenet the proxy's address, http and the upstream's name instead of the client's.
    forwarded = {"Host", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host"}
    text = NGINX_SITE.read_text()
    for location in re.findall(r"location[^{]*\{(.*?)\n    \}", text, re.S):
        headers = set(re.findall(r"proxy_set_header\s+(\S+)", location))
        if headers:
            assert forwarded <= headers, location
