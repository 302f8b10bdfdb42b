"""The link to an upstream that demands a client certificate (profile 3 towards the upstream), over real TLS on
loopback: the upstream is a `websockets` server whose context requires a certificate of its own CA."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chargenet.services import charge_points, upstream_tls
from chargenet.services.callers import OPERATOR
from chargenet.simulators.cpo import SimulatedCentralSystem
from tests.integration.edge.conftest import Served
from tests.support.certificates import Issued, issue, make_ca
from tests.support.logs import collected_logs

pytestmark = pytest.mark.sqlite_only(reason="the upstream link's TLS: the store plays no part here")


@pytest.fixture
async def upstream_ca() -> Issued:
    return make_ca("Upstream CA")


@pytest.fixture
async def demanding_cpo(tmp_path: Path, upstream_ca: Issued) -> AsyncIterator[SimulatedCentralSystem]:
    """An upstream on wss:// that refuses any client without a certificate its CA issued."""
    certificate, key = issue(upstream_ca, "upstream", server=True).write(tmp_path / "upstream", "server")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    context.load_verify_locations(cadata=upstream_ca.certificate_pem.decode())
    context.verify_mode = ssl.CERT_REQUIRED
    central = SimulatedCentralSystem(tls=context)
    await central.start()
    try:
        yield central
    finally:
        await central.stop()


async def use_client_certificate(served: Served, client: Issued, upstream_ca: Issued) -> None:
    async with served.context.store.transaction() as session:
        await upstream_tls.set_upstream_tls(
            session,
            OPERATOR,
            served.context.keys,
            served.tenant.site_id,
            now=served.context.clock.now(),
            profile=3,
            client_certificate_pem=client.certificate_pem,
            client_key_pem=client.key_pem,
            ca_bundle_pem=upstream_ca.certificate_pem,
        )


async def link_state(served: Served) -> charge_points.StationStateView:
    await served.edge.message_log.run_once()
    async with served.context.store.read() as session:
        return await charge_points.station_state(session, OPERATOR, None, "CS-1")


async def test_an_upstream_demanding_a_client_certificate_takes_the_sites_and_refuses_a_foreign_one(
    served: Served, demanding_cpo: SimulatedCentralSystem, upstream_ca: Issued
) -> None:
    await served.set_upstream(demanding_cpo.url)
    await use_client_certificate(served, issue(upstream_ca, "Depot"), upstream_ca)

    station = served.station()
    await station.connect()
    assert (await station.boot())["status"] == "Accepted"
    await demanding_cpo.wait_for("CS-1", "BootNotification")
    await station.status(1, "Available")
    await demanding_cpo.wait_for("CS-1", "StatusNotification")
    state = await link_state(served)
    assert (state.upstream_connected, state.upstream_failure) == (True, None)
    await station.close()

    await use_client_certificate(served, issue(make_ca("Someone else's CA"), "Depot"), upstream_ca)
    station = served.station()
    with collected_logs() as logs:
        await station.connect()
        assert (await station.boot())["status"] == "Accepted"  # answered by the edge itself
        assert len(demanding_cpo.received("CS-1", "BootNotification")) == 1
        state = await link_state(served)
        assert state.upstream_connected is False
        assert state.upstream_failure is not None
        assert state.upstream_failure.startswith("the upstream refused the edge's TLS client certificate")
        async with asyncio.timeout(10):  # it keeps trying, with its backoff (the first retry within a second)
            while served.edge.upstream_links.failures < 2:
                await asyncio.sleep(0.05)
    failures = [record for record in logs if record.getMessage() == "upstream connection failed"]
    assert [record.levelno for record in failures] == [logging.WARNING]  # once for the same reason
    await station.close()
