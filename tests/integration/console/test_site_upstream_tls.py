"""The console shows a site's TLS towards its upstream (profile, client certificate and its expiry) and, on a
station's page, why its link to the upstream is down."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import insert

from chargenet.keys import KeyStore
from chargenet.services import upstream_tls
from chargenet.services.callers import OPERATOR
from chargenet.store.models import StationPresence
from tests.integration.console.conftest import ConsoleHarness, make_site, make_station
from tests.integration.console.test_site_sections import section
from tests.support.certificates import issue, make_ca

REFUSED = "the upstream refused the edge's TLS client certificate (TLS alert SSLV3_ALERT_BAD_CERTIFICATE)"


async def test_the_site_shows_its_upstream_profile_and_client_certificate_and_a_station_why_its_link_is_down(
    harness: ConsoleHarness, tmp_path: Path
) -> None:
    site = await make_site(harness, harness.team.company_id, upstream_url="wss://cpo.example/ocpp")
    await make_station(harness, site.id, "CS-1", connectors=1)
    client = issue(make_ca(), "Depot <b>")
    async with harness.store.transaction() as session:
        await upstream_tls.set_upstream_tls(
            session,
            OPERATOR,
            KeyStore(tmp_path / "keys"),
            site.id,
            now=datetime.now(UTC),  # the certificate's validity is the real time's
            profile=3,
            client_certificate_pem=client.certificate_pem,
            client_key_pem=client.key_pem,
        )
        await session.execute(
            insert(StationPresence),
            [{"station_id": "CS-1", "connected": True, "upstream_connected": False, "upstream_failure": REFUSED}],
        )
    viewer = await harness.signed_in("viewer@acme.test")
    shown = section((await viewer.get(f"/console/sites/{site.id}")).text, "upstream")
    assert "3: client certificate over TLS (wss:// only)" in shown
    assert "CN=Depot \\&lt;b\\&gt;, expires " in shown and "<b>" not in shown and "the system's CAs" in shown
    station = (await viewer.get("/console/stations/CS-1")).text
    assert f'<dd id="upstream-link">down: {REFUSED}'.replace("'", "&#39;") in station
