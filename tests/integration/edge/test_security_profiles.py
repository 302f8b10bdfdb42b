"""Security profiles 2 and 3 over chargenet's own TLS on loopback: real certificates, a real WebSocket client
showing its certificate, one served app for the module's facts; a profile 3 station renewing its certificate."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import select
from websockets.exceptions import InvalidStatus

from chargenet.app import AppContext, create_app, open_context
from chargenet.config import load_settings
from chargenet.edge.tls import station_context_factory
from chargenet.edge.transport import StationWebSocketProtocol
from chargenet.services import companies, station_ca, station_certificates, stations
from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import Payload, SimulatedStation
from chargenet.store.models import AuditRecord, Site, Station, StationCertificate
from tests.factories import make_tenant
from tests.support.certificates import Issued, client_context, issue, make_ca, make_csr
from tests.support.in_loop import start_serving
from tests.support.logs import collected_logs
from tests.support.ports import free_port
from tests.support.scrape import Scrape
from tests.support.templates import prepare_data_dir

PASSWORD = "0123456789abcdef0123"


@dataclass
class TlsServed:
    context: AppContext
    port: int
    company_id: str
    server_ca: Issued
    folder: Path

    def station(self, station_id: str, shown: Issued | None = None, password: str | None = None) -> SimulatedStation:
        tls = client_context(self.server_ca, self.folder, shown)
        return SimulatedStation(f"wss://127.0.0.1:{self.port}/ocpp", station_id, password, tls=tls)

    async def refusal(self, station: SimulatedStation) -> int:
        with pytest.raises(InvalidStatus) as caught:
            await station.connect()
        return caught.value.response.status_code

    async def import_ca(self, ca: Issued) -> None:
        async with self.context.store.transaction() as session:
            await station_ca.import_ca(
                session,
                OPERATOR,
                self.context.keys,
                company_id=self.company_id,
                certificate_pem=ca.certificate_pem,
                key_pem=ca.key_pem,
                now=self.context.clock.now(),
            )

    async def set_profile(self, station_id: str, profile: int) -> None:
        async with self.context.store.transaction() as session:
            await stations.update_station(
                session,
                OPERATOR,
                self.context.keys.secret_hasher(),
                self.context.keys.credential_cipher(),
                station_id,
                now=self.context.clock.now(),
                security_profile=profile,
            )


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[TlsServed]:
    server_ca = make_ca("Test server CA")
    certificate, key = issue(server_ca, "localhost", server=True).write(tmp_path / "tls", "server")
    port = free_port()
    prepare_data_dir(tmp_path / "data")
    # A proxy elsewhere is trusted; this test's own connections come from 127.0.0.1, which is not.
    flags = {
        "data_dir": str(tmp_path / "data"),
        "port": str(port),
        "tls_cert": str(certificate),
        "tls_key": str(key),
        "forwarded_allow_ips": "192.0.2.1",
    }
    settings = load_settings(flags, {})
    context = await open_context(settings)
    config = uvicorn.Config(
        create_app(context),
        host="127.0.0.1",
        port=port,
        ssl_certfile=str(certificate),
        ssl_keyfile=str(key),
        ssl_context_factory=station_context_factory,
        ws=StationWebSocketProtocol,
        lifespan="on",
        log_config=None,
        access_log=False,
    )
    server = uvicorn.Server(config)
    task = await start_serving(server, poll=0.02)
    tenant = await make_tenant(context.store, context.keys, context.clock.now(), station_id="CS-1", password=PASSWORD)
    try:
        yield TlsServed(context, port, tenant.company_id, server_ca, tmp_path / "clients")
    finally:
        server.should_exit = True
        await task
        await context.close()


async def test_profile_3_lets_in_only_a_certificate_of_the_companys_station_ca_naming_the_station(
    served: TlsServed,
) -> None:
    own = make_ca("Acme station CA")
    valid = issue(own, "CS-1")
    await served.set_profile("CS-1", 3)

    # Before the company has a CA, no certificate chains to it; an import counts for the next handshake.
    assert await served.refusal(served.station("CS-1", valid)) == 403
    await served.import_ca(own)
    station = served.station("CS-1", valid)
    await station.connect()
    assert (await station.boot())["status"] == "Accepted"
    await station.close()

    with collected_logs() as logs:
        refused = {
            "foreign": await served.refusal(served.station("CS-1", issue(make_ca("Elsewhere"), "CS-1"))),
            "expired": await served.refusal(served.station("CS-1", issue(own, "CS-1", expired=True))),
            "wrong CN": await served.refusal(served.station("CS-1", issue(own, "CS-2"))),
            "password": await served.refusal(served.station("CS-1", password=PASSWORD)),
            "nothing": await served.refusal(served.station("CS-1")),
        }
    assert refused == {"foreign": 403, "expired": 403, "wrong CN": 403, "password": 403, "nothing": 403}
    reasons = [record.fields["reason"] for record in logs if "reason" in getattr(record, "fields", {})]
    assert reasons == [
        "unknown_ca",
        "expired",
        "wrong_common_name",
        "password_instead_of_certificate",
        "no_certificate",
    ]

    async with httpx.AsyncClient(verify=client_context(served.server_ca, served.folder)) as http:
        scrape = Scrape((await http.get(f"https://127.0.0.1:{served.port}/metrics")).text)
    name = "chargenet_ocpp_handshakes_refused_total"
    assert scrape.value(name, reason="unknown_ca") == 2
    assert scrape.value(name, reason="no_certificate") == 1
    assert "CS-1" not in scrape.label_values()
    async with served.context.store.read() as session:
        view = await stations.get_station(session, OPERATOR, "CS-1")
    assert view.security_profile == 3 and view.last_refusal == "no_certificate"

    # A serial number on the record stands for the id in the CN; an organisation name set is the O asked for.
    async with served.context.store.transaction() as session:
        await stations.update_station(
            session,
            OPERATOR,
            served.context.keys.secret_hasher(),
            served.context.keys.credential_cipher(),
            "CS-1",
            now=served.context.clock.now(),
            serial_number="SN-0042",
        )
        await companies.set_organisation_name(
            session, OPERATOR, served.company_id, organisation_name="Acme NV", now=served.context.clock.now()
        )
    assert await served.refusal(served.station("CS-1", issue(own, "CS-1", organisation="Acme NV"))) == 403
    assert await served.refusal(served.station("CS-1", issue(own, "SN-0042", organisation="Other NV"))) == 403
    station = served.station("CS-1", issue(own, "SN-0042", organisation="Acme NV"))
    await station.connect()
    await station.close()


async def test_profile_2_takes_the_password_over_tls_and_a_certificate_header_from_anyone_but_a_proxy_is_ignored(
    served: TlsServed,
) -> None:
    await served.set_profile("CS-1", 2)
    assert await served.refusal(served.station("CS-1", password="wrong-key-wrong-key")) == 401
    station = served.station("CS-1", password=PASSWORD)
    await station.connect()
    assert (await station.heartbeat())["currentTime"]
    await station.close()

    own = make_ca("Acme station CA")
    await served.import_ca(own)
    await served.set_profile("CS-1", 3)
    forging = served.station("CS-1")
    forged = quote(issue(own, "CS-1").certificate_pem.decode())
    original = forging.headers
    forging.headers = lambda: {**original(), "X-SSL-Client-Cert": forged}  # type: ignore[method-assign]
    with collected_logs() as logs:
        assert await served.refusal(forging) == 403
    assert any("not a trusted proxy" in record.getMessage() for record in logs)


async def test_a_profile_3_station_renews_its_certificate_through_sign_certificate(served: TlsServed) -> None:
    own = make_ca("Acme station CA")
    await served.import_ca(own)
    await served.set_profile("CS-1", 3)
    station = served.station("CS-1", issue(own, "CS-1"))
    signed: asyncio.Future[Payload] = asyncio.get_running_loop().create_future()

    def take(payload: Payload) -> Payload:
        signed.set_result(payload)
        return {"status": "Accepted"}

    station.answers["CertificateSigned"] = take
    await station.connect()
    with collected_logs() as logs:
        refused = {
            "wrong CN": await station.call("SignCertificate", {"csr": make_csr("CS-2").pem}),
            "weak key": await station.call(
                "SignCertificate", {"csr": make_csr("CS-1", key=rsa.generate_private_key(65537, 1024)).pem}
            ),
            "garbage": await station.call("SignCertificate", {"csr": "not a CSR"}),
        }
    assert refused == {reason: {"status": "Rejected"} for reason in refused}
    reasons = [record.fields["reason"] for record in logs if "reason" in getattr(record, "fields", {})]
    assert reasons == ["wrong_common_name", "weak_key", "unreadable"]

    csr = make_csr("CS-1")
    assert await station.call("SignCertificate", {"csr": csr.pem}) == {"status": "Accepted"}
    chain = (await asyncio.wait_for(signed, 10))["certificateChain"]
    renewed = csr.issued(chain)
    renewed.certificate.verify_directly_issued_by(own.certificate)
    await station.close()

    # The new certificate lets the station in; a password still does not.
    station = served.station("CS-1", renewed)
    await station.connect()
    assert (await station.boot())["status"] == "Accepted"
    await station.close()
    assert await served.refusal(served.station("CS-1", password=PASSWORD)) == 403

    async with served.context.store.read() as session:
        kept = list(await session.scalars(select(StationCertificate)))
        audited = list(
            await session.scalars(select(AuditRecord).where(AuditRecord.action == "station.certificate-signed"))
        )
    serial = format(renewed.certificate.serial_number, "X")
    assert [(row.station_id, row.serial, row.not_after) for row in kept] == [
        ("CS-1", serial, renewed.certificate.not_valid_after_utc)
    ]
    assert [(row.actor, row.face, row.object_id) for row in audited] == [("station CS-1", "ocpp", "CS-1")]
    assert serial in audited[0].detail


async def test_a_site_relaying_its_csrs_trusts_its_upstreams_ca_for_its_stations(served: TlsServed) -> None:
    upstream_ca, own = make_ca("Upstream CPO CA"), make_ca("Acme station CA")
    await served.import_ca(own)
    await served.set_profile("CS-1", 3)
    by_upstream = issue(upstream_ca, "CS-1")
    async with served.context.store.transaction() as session:
        record = await session.get(Station, "CS-1")
        assert record is not None
        site = await session.get(Site, record.site_id)
        assert site is not None
        site.upstream_url = "ws://127.0.0.1:9/ocpp"  # away: nobody listens there
        await station_ca.import_upstream_ca(
            session,
            OPERATOR,
            served.context.keys,
            site_id=site.id,
            certificate_pem=upstream_ca.certificate_pem,
            now=served.context.clock.now(),
        )
        site_id = site.id
    # Signing its CSRs itself, the site trusts its company's CA alone.
    assert await served.refusal(served.station("CS-1", by_upstream)) == 403
    async with served.context.store.transaction() as session:
        await station_certificates.set_csr_handling(
            session, OPERATOR, site_id=site_id, handling="relay", now=served.context.clock.now()
        )
    for shown in (by_upstream, issue(own, "CS-1")):
        station = served.station("CS-1", shown)
        await station.connect()
        await station.close()
    assert await served.refusal(served.station("CS-1", issue(upstream_ca, "CS-2"))) == 403
