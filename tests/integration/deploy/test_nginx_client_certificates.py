"""Security profile 3 behind Debian's nginx with deploy/nginx/chargenet.conf: the station's certificate is asked for
by nginx (`ssl_verify_client optional_no_ca`) and forwarded to chargenet in `X-SSL-Client-Cert`, which chargenet
believes from the proxy alone. chargenet runs in the test's own event loop; only nginx is a process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from websockets.exceptions import InvalidStatus

from chargenet.app import AppContext, create_app, open_context
from chargenet.config import load_settings
from chargenet.edge.transport import StationWebSocketProtocol
from chargenet.services import station_ca, stations
from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import SimulatedStation
from tests.factories import make_tenant
from tests.integration.deploy.test_nginx import NGINX, _stop, _until_accepting, main_config, site_config
from tests.support.certificates import Issued, client_context, issue, make_ca
from tests.support.in_loop import start_serving
from tests.support.logs import collected_logs
from tests.support.ports import free_port
from tests.support.templates import prepare_data_dir

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(NGINX is None, reason="nginx is not installed: `make test` installs Debian's nginx-light"),
]

PASSWORD = "0123456789abcdef0123"


@dataclass
class Proxied:
    context: AppContext
    origin: str  # wss:// through nginx
    direct: str  # ws:// to chargenet itself, as from the proxy's machine
    server_ca: Issued
    folder: Path

    def station(self, station_id: str, shown: Issued | None = None, password: str | None = None) -> SimulatedStation:
        return SimulatedStation(
            f"{self.origin}/ocpp", station_id, password, tls=client_context(self.server_ca, self.folder, shown)
        )

    async def refusal(self, station: SimulatedStation) -> int:
        with pytest.raises(InvalidStatus) as caught:
            await station.connect()
        return caught.value.response.status_code


@pytest.fixture
async def proxied(tmp_path: Path) -> AsyncIterator[Proxied]:
    assert NGINX is not None
    proxy_dir = tmp_path / "nginx"
    proxy_dir.mkdir()
    server_ca = make_ca("Test server CA")
    cert, key = issue(server_ca, "localhost", server=True).write(proxy_dir, "server")
    port, https_port, http_port = free_port(), free_port(), free_port()
    prepare_data_dir(tmp_path / "data")
    settings = load_settings(
        {"data_dir": str(tmp_path / "data"), "port": str(port), "forwarded_allow_ips": "127.0.0.1"}, {}
    )
    context = await open_context(settings)
    config = uvicorn.Config(
        create_app(context),
        host="127.0.0.1",
        port=port,
        proxy_headers=True,
        forwarded_allow_ips="127.0.0.1",
        ws=StationWebSocketProtocol,
        lifespan="on",
        log_config=None,
        access_log=False,
    )
    server = uvicorn.Server(config)
    task = await start_serving(server, poll=0.02)
    (proxy_dir / "chargenet.conf").write_text(
        site_config(proxy_dir, http_port=http_port, https_port=https_port, upstreams=[port, port], cert=cert, key=key)
    )
    (proxy_dir / "nginx.conf").write_text(main_config(proxy_dir))
    nginx = await asyncio.create_subprocess_exec(
        NGINX, "-p", str(proxy_dir), "-c", str(proxy_dir / "nginx.conf"), "-e", str(proxy_dir / "error.log")
    )
    try:
        await _until_accepting(https_port, nginx, "nginx")
        yield Proxied(
            context, f"wss://127.0.0.1:{https_port}", f"ws://127.0.0.1:{port}", server_ca, tmp_path / "clients"
        )
    finally:
        await _stop(nginx)
        server.should_exit = True
        await task
        await context.close()


async def test_a_profile_3_station_gets_in_through_nginx_with_its_certificate_and_no_other_way(
    proxied: Proxied,
) -> None:
    context = proxied.context
    tenant = await make_tenant(context.store, context.keys, context.clock.now(), station_id="CS-1", password=PASSWORD)
    async with context.store.transaction() as session:
        made = await station_ca.create_ca(
            session, OPERATOR, context.keys, company_id=tenant.company_id, now=context.clock.now()
        )
        await stations.update_station(
            session,
            OPERATOR,
            context.keys.secret_hasher(),
            context.keys.credential_cipher(),
            "CS-1",
            now=context.clock.now(),
            security_profile=3,
        )
    # The company's CA as the operator holds it: its key from the keys folder, to sign the station's certificate.
    ca = Issued.load(made.certificate.encode(), context.keys.read(f"station-ca/{tenant.company_id}.key"))

    station = proxied.station("CS-1", issue(ca, "CS-1"))
    await station.connect()
    assert (await station.boot())["status"] == "Accepted"
    await station.close()

    assert await proxied.refusal(proxied.station("CS-1", issue(ca, "CS-2"))) == 403
    # A header the client sends itself is replaced by nginx's (none, when no certificate was shown).
    forging = proxied.station("CS-1")
    forging.headers = lambda: {"X-SSL-Client-Cert": "forged"}  # type: ignore[method-assign]
    with collected_logs() as logs:
        assert await proxied.refusal(forging) == 403
        # Plain ws:// to chargenet itself, for a station raised to 3: refused before anything else is looked at.
        plain = SimulatedStation(f"{proxied.direct}/ocpp", "CS-1", None)
        assert await proxied.refusal(plain) == 403
    reasons = [record.fields["reason"] for record in logs if "reason" in getattr(record, "fields", {})]
    assert reasons == ["no_certificate", "plain_ws"]
