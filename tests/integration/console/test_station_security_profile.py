"""A station's security profile on its console page: shown with the latest refused connection, raised by an admin,
lowered by an owner only, who is told to reconfigure the station on site."""

from __future__ import annotations

from sqlalchemy import update

from chargenet.store.models import Station
from tests.integration.console.conftest import ConsoleHarness, make_site, make_station, post, records


async def test_a_profile_is_raised_by_an_admin_and_lowered_by_an_owner_who_is_told_to_reconfigure_on_site(
    harness: ConsoleHarness,
) -> None:
    site = await make_site(harness, harness.team.company_id)
    await make_station(harness, site.id, "CS-1", password="k" * 20)
    admin = await harness.signed_in("admin@acme.test")
    page = (await admin.get("/console/stations/CS-1")).text
    assert "Security profile</dt><dd>1" in page and '<dd id="last-refusal">none</dd>' in page

    raised = await post(admin, "/console/stations/CS-1/security-profile", {"security_profile": "3", "version": "1"})
    assert raised.status_code == 303
    assert (
        "Security profile</dt><dd>3 (client certificate over TLS)" in (await admin.get("/console/stations/CS-1")).text
    )

    refused = await post(admin, "/console/stations/CS-1/security-profile", {"security_profile": "1", "version": "2"})
    assert refused.status_code == 403 and "owner role" in refused.text

    owner = await harness.signed_in("owner@acme.test")
    lowered = await post(owner, "/console/stations/CS-1/security-profile", {"security_profile": "2", "version": "2"})
    assert lowered.status_code == 200 and "Reconfigure the station on site" in lowered.text
    lowering, raising = await records(harness, action="station.update")  # newest first
    assert raising.detail == {"changed": "security profile 1 -> 3"}
    assert lowering.detail == {"changed": "security profile 3 -> 2 (lowered: the station must be reconfigured on site)"}
    assert lowering.actor == "operator owner@acme.test"

    unknown = await post(owner, "/console/stations/CS-1/security-profile", {"security_profile": "9", "version": "3"})
    assert unknown.status_code == 422 and "is not a security profile" in unknown.text

    async with harness.store.transaction() as session:
        await session.execute(
            update(Station)
            .values(last_refusal="plain_ws", last_refusal_at=harness.clock.now())
            .where(Station.id == "CS-1")
        )
    assert "the station&#39;s security profile needs TLS" in (await admin.get("/console/stations/CS-1")).text
