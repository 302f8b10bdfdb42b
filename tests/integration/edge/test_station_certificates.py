"""Station certificates over real WebSockets, on SQLite and on PostgreSQL: a 2.0.1 station (the `ocpp` package's own
v201 `ChargePoint`) gets its CSR signed and its certificate in CertificateSigned, the API's certificate commands in
2.0.1's words, and a renewal asked ahead of expiry as the renewal's clock moves; a 1.6 station (the simulator) gets
the commands in 1.6's words; a site that relays CSRs to its upstream keeps them from the edge, and a 2.0.1 upstream
gets them. (A 1.6 station's
SignCertificate story, over TLS at profile 3, is in test_security_profiles.py.)"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
from cryptography import x509
from ocpp.charge_point import snake_to_camel_case
from ocpp.routing import on
from ocpp.v201 import ChargePoint, call, call_result
from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.edge.certificates import CertificateRenewal
from chargenet.edge.core.authorize import UpstreamState
from chargenet.keys import station_ca
from chargenet.services import station_certificates
from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import Payload
from chargenet.store.models import AuditRecord, Site, StationCertificate
from tests.factories import partner_token
from tests.integration.edge.conftest import Served
from tests.integration.edge.test_ocpp201 import station_201
from tests.integration.edge.test_ocpp201_upstream import Csms, Upstream201
from tests.integration.edge.test_upstream import settle
from tests.support.certificates import issue, make_ca, make_csr

HASH_DATA = {"hashAlgorithm": "SHA256", "issuerNameHash": "6f1a", "issuerKeyHash": "9c2b", "serialNumber": "1A2B"}


class CertificateStation(ChargePoint):
    """A 2.0.1 station that takes its certificates and keeps what it was sent, in the payload's own words."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.signed: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def _got(self, action: str, **payload: Any) -> None:
        self.received.append((action, snake_to_camel_case(payload)))

    @on("CertificateSigned")
    def certificate_signed(self, **payload: Any) -> call_result.CertificateSigned:
        self.signed.put_nowait(snake_to_camel_case(payload))
        return call_result.CertificateSigned(status="Accepted")

    @on("InstallCertificate")
    def install(self, **payload: Any) -> call_result.InstallCertificate:
        self._got("InstallCertificate", **payload)
        return call_result.InstallCertificate(status="Accepted")

    @on("GetInstalledCertificateIds")
    def installed(self, **payload: Any) -> call_result.GetInstalledCertificateIds:
        self._got("GetInstalledCertificateIds", **payload)
        hash_data = {"hash_algorithm": "SHA256", "issuer_name_hash": "6f1a", "issuer_key_hash": "9c2b"}
        chain = [
            {"certificate_type": "CSMSRootCertificate", "certificate_hash_data": {**hash_data, "serial_number": "1A2B"}}
        ]
        return call_result.GetInstalledCertificateIds(status="Accepted", certificate_hash_data_chain=chain)

    @on("DeleteCertificate")
    def delete(self, **payload: Any) -> call_result.DeleteCertificate:
        self._got("DeleteCertificate", **payload)
        return call_result.DeleteCertificate(status="Accepted")

    @on("TriggerMessage")
    def trigger(self, **payload: Any) -> call_result.TriggerMessage:
        self._got("TriggerMessage", **payload)
        return call_result.TriggerMessage(status="Accepted")


async def test_a_2_0_1_station_gets_its_certificate_signed_managed_and_renewed_ahead_of_expiry(served: Served) -> None:
    station_ca.create(served.context.keys, served.tenant.company_id, "Acme", now=served.context.clock.now())
    ca = station_ca.show(served.context.keys, served.tenant.company_id)
    assert ca is not None
    reader = await partner_token(served.context, served.tenant.company_id, ["charge-points:read"])
    api = httpx.AsyncClient(
        base_url=f"{served.http_url}/api/v1", headers={"Authorization": f"Bearer {served.token}"}, timeout=10
    )
    # The renewal's own clock, moved by the test: the station's connection lives by the served app's.
    clock = ManualClock(served.context.clock.now())
    renewal = CertificateRenewal(served.context.store, clock, served.edge, served.edge.certificates)
    async with api, station_201(served, kind=CertificateStation) as (point, _):
        await point.call(call.BootNotification(charging_station={"vendorName": "V", "model": "M"}, reason="PowerUp"))
        await served.edge.message_log.run_once()  # the store shows it connected over 2.0.1 now

        # SignCertificate -> Accepted, then CertificateSigned with the chain; a V2G CSR is never signed here.
        v2g = await point.call(call.SignCertificate(csr=make_csr("CS-1").pem, certificate_type="V2GCertificate"))
        assert v2g.status == "Rejected"
        csr = make_csr("CS-1")
        assert (await point.call(call.SignCertificate(csr=csr.pem))).status == "Accepted"
        signed: Payload = await asyncio.wait_for(point.signed.get(), 10)
        assert signed["certificateType"] == "ChargingStationCertificate"
        chain = x509.load_pem_x509_certificates(signed["certificateChain"].encode())
        certificate, issuer = chain
        assert issuer == x509.load_pem_x509_certificate(ca.certificate_pem.encode())
        certificate.verify_directly_issued_by(issuer)
        assert certificate.public_key() == x509.load_pem_x509_csr(csr.pem.encode()).public_key()
        assert point.signed.empty()

        listed = await api.get("/stations/CS-1/certificates", headers={"Authorization": f"Bearer {reader}"})
        assert listed.status_code == 200
        serial = format(certificate.serial_number, "X")
        assert [(item["serial"], item["notAfter"]) for item in listed.json()["items"]] == [
            (serial, certificate.not_valid_after_utc.isoformat())
        ]

        # The commands, in 2.0.1's words.
        root = make_ca("Central system root").certificate_pem.decode()
        body = {"certificateType": "CentralSystemRootCertificate", "certificate": root}
        assert (await api.post("/stations/CS-1/install-certificate", json=body)).json() == {"status": "Accepted"}
        garbage = await api.post("/stations/CS-1/install-certificate", json={**body, "certificate": "not a PEM"})
        assert garbage.status_code == 422
        installed = await api.post(
            "/stations/CS-1/installed-certificates", json={"certificateType": "CentralSystemRootCertificate"}
        )
        assert installed.json()["certificateHashDataChain"][0]["certificateHashData"]["serialNumber"] == "1A2B"
        deleted = await api.post("/stations/CS-1/delete-certificate", json={"certificateHashData": HASH_DATA})
        assert deleted.json() == {"status": "Accepted"}
        assert (await api.post("/stations/CS-1/request-csr")).json() == {"status": "Accepted"}
        assert point.received == [
            ("InstallCertificate", {"certificateType": "CSMSRootCertificate", "certificate": root}),
            ("GetInstalledCertificateIds", {"certificateType": ["CSMSRootCertificate"]}),
            ("DeleteCertificate", {"certificateHashData": HASH_DATA}),
            ("TriggerMessage", {"requestedMessage": "SignChargingStationCertificate"}),
        ]
        point.received.clear()

        # Renewal: not asked early, asked once within 30 days of expiry, and counted within 14.
        await renewal.run_once()
        assert point.received == [] and served.edge.certificates.expiring_soon == 0
        clock.set(certificate.not_valid_after_utc - timedelta(days=29))
        await renewal.run_once()
        await renewal.run_once()
        assert point.received == [("TriggerMessage", {"requestedMessage": "SignChargingStationCertificate"})]
        assert served.edge.certificates.expiring_soon == 0
        clock.set(certificate.not_valid_after_utc - timedelta(days=13))
        await renewal.run_once()
        assert len(point.received) == 2 and served.edge.certificates.expiring_soon == 1

        # The station renews (signed by the served app's clock, today): on a look the same day, its new
        # certificate is the latest and nothing is due any more.
        assert (await point.call(call.SignCertificate(csr=make_csr("CS-1").pem))).status == "Accepted"
        await asyncio.wait_for(point.signed.get(), 10)
        clock.set(served.context.clock.now())
        await renewal.run_once()
        assert len(point.received) == 2 and served.edge.certificates.expiring_soon == 0


async def test_a_1_6_station_is_sent_the_certificate_commands_in_its_words_and_a_relaying_site_keeps_them(
    served: Served,
) -> None:
    station = served.station()
    station.answers.update(
        {
            "InstallCertificate": lambda _: {"status": "Accepted"},
            "GetInstalledCertificateIds": lambda _: {"status": "Accepted", "certificateHashData": [HASH_DATA]},
            "DeleteCertificate": lambda _: {"status": "Accepted"},
            "ExtendedTriggerMessage": lambda _: {"status": "Accepted"},
        }
    )
    api = httpx.AsyncClient(
        base_url=f"{served.http_url}/api/v1", headers={"Authorization": f"Bearer {served.token}"}, timeout=10
    )
    root = make_ca("Central system root").certificate_pem.decode()
    async with api:
        await station.connect()
        body = {"certificateType": "CentralSystemRootCertificate", "certificate": root}
        assert (await api.post("/stations/CS-1/install-certificate", json=body)).json() == {"status": "Accepted"}
        v2g_root = await api.post(
            "/stations/CS-1/install-certificate", json={**body, "certificateType": "V2GRootCertificate"}
        )
        leaf = await api.post(
            "/stations/CS-1/install-certificate",
            json={**body, "certificate": issue(make_ca(), "CS-9").certificate_pem.decode()},
        )
        assert (v2g_root.status_code, leaf.status_code) == (422, 422)
        installed = await api.post(
            "/stations/CS-1/installed-certificates", json={"certificateType": "ManufacturerRootCertificate"}
        )
        assert installed.json() == {"status": "Accepted", "certificateHashData": [HASH_DATA]}
        await api.post("/stations/CS-1/delete-certificate", json={"certificateHashData": HASH_DATA})
        assert (await api.post("/stations/CS-1/request-csr")).json() == {"status": "Accepted"}
        assert station.received_calls == [
            ("InstallCertificate", {"certificateType": "CentralSystemRootCertificate", "certificate": root}),
            ("GetInstalledCertificateIds", {"certificateType": "ManufacturerRootCertificate"}),
            ("DeleteCertificate", {"certificateHashData": HASH_DATA}),
            ("ExtendedTriggerMessage", {"requestedMessage": "SignChargePointCertificate"}),
        ]
        async with served.context.store.read() as session:
            audited = list(
                await session.scalars(
                    select(AuditRecord.detail).where(AuditRecord.action == "station.install-certificate")
                )
            )
        assert len(audited) == 2 and "refused" in audited[1] and "fingerprint" in audited[0]
        await station.close()

        # A site relaying its stations' CSRs to its upstream: away, the CSR is refused; the upstream manages them.
        async with served.context.store.transaction() as session:
            site = await session.get(Site, served.tenant.site_id)
            assert site is not None
            site.upstream_url = "ws://127.0.0.1:9/ocpp"  # nobody listens there
            await station_certificates.set_csr_handling(
                session, OPERATOR, site_id=site.id, handling="relay", now=served.context.clock.now()
            )
        station_ca.create(served.context.keys, served.tenant.company_id, "Acme", now=served.context.clock.now())
        station = served.station()
        await station.connect()
        assert await station.call("SignCertificate", {"csr": make_csr("CS-1").pem}) == {"status": "Rejected"}
        assert (await api.post("/stations/CS-1/request-csr")).status_code == 409
        await station.close()
    async with served.context.store.read() as session:
        assert list(await session.scalars(select(StationCertificate))) == []


class SigningCsms(Csms):
    """An upstream CSMS with its own CA: it takes a station's CSR and sends CertificateSigned after its answer."""

    @on("SignCertificate")
    async def on_sign_certificate(self, csr: str, **fields: Any) -> call_result.SignCertificate:
        self.upstream.received.append(("SignCertificate", fields.get("certificate_type")))
        return call_result.SignCertificate(status="Accepted")


async def test_a_2_0_1_stations_csrs_go_to_the_upstream_where_the_site_relays_them_and_v2g_ones_always(
    served: Served,
) -> None:
    upstream = Upstream201(point_kind=SigningCsms)
    await upstream.start()
    await served.set_upstream(upstream.url, "upstream-secret-201", ocpp_versions=["ocpp2.0.1"])
    station_ca.create(served.context.keys, served.tenant.company_id, "Acme", now=served.context.clock.now())
    try:
        async with station_201(served, kind=CertificateStation) as (point, _):
            await settle(lambda: _linked(served))
            v2g = await point.call(call.SignCertificate(csr=make_csr("CS-1").pem, certificate_type="V2GCertificate"))
            assert v2g.status == "Accepted" and upstream.sent("SignCertificate") == ["V2GCertificate"]
        async with served.context.store.transaction() as session:
            await station_certificates.set_csr_handling(
                session, OPERATOR, site_id=served.tenant.site_id, handling="relay", now=served.context.clock.now()
            )
        async with station_201(served, kind=CertificateStation) as (point, _):
            await settle(lambda: _linked(served))
            assert (await point.call(call.SignCertificate(csr=make_csr("CS-1").pem))).status == "Accepted"
            assert upstream.sent("SignCertificate") == ["V2GCertificate", None]
            # The upstream's CertificateSigned reaches the station as any of its CALLs does.
            csms = upstream.points["CS-1"]
            chain = make_ca("Upstream CA").certificate_pem.decode()
            taken = await csms.call(call.CertificateSigned(certificate_chain=chain))
            assert taken.status == "Accepted" and (await point.signed.get())["certificateChain"] == chain
    finally:
        await upstream.stop()
    async with served.context.store.read() as session:
        assert list(await session.scalars(select(StationCertificate))) == []  # nothing signed here


async def _linked(served: Served) -> bool:
    link = served.edge._links.get("CS-1")
    return link is not None and link.upstream_state is UpstreamState.CONNECTED
