"""The API's changes to sites, stations, local lists and meters leave audit records, written by the service
functions themselves in the change's transaction, naming the application and its address, never a key."""

from __future__ import annotations

from pathlib import Path

import httpx

from chargenet.app import create_app, open_context
from chargenet.clock import ManualClock
from chargenet.config import load_settings
from chargenet.services import audit
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from tests.factories import make_tenant, partner_token
from tests.support.templates import prepare_data_dir

KEY = "0123456789abcdef-key"
UPSTREAM = "upstream-secret-1"


async def test_api_changes_are_audited_as_the_application(tmp_path: Path, clock: ManualClock) -> None:
    prepare_data_dir(tmp_path / "data")
    settings = load_settings({"data_dir": str(tmp_path / "data")}, environ={})
    context = await open_context(settings, clock=clock)
    try:
        tenant = await make_tenant(context.store, context.keys, clock.now(), station_id="ST-1")
        token = await partner_token(context, tenant.company_id, ["sites:write", "sites:read", "meters:write"])
        transport = httpx.ASGITransport(app=create_app(context), client=("198.51.100.7", 5000))
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://test/api/v1", headers=headers) as api:
            site = (await api.post("/sites", json={"name": "North", "upstreamPassword": UPSTREAM})).json()["id"]
            calls = [
                api.patch(
                    f"/sites/{site}",
                    json={"name": "South", "removeUpstreamPassword": True, "upstreamOcppVersions": ["ocpp2.0.1"]},
                ),
                api.post("/stations", json={"siteId": site, "id": "CS-API", "password": KEY}),
                api.patch("/stations/CS-API", json={"securityProfile": 2}),
                api.put(f"/sites/{site}/local-authorization-list/TAG-1", json={"status": "Blocked"}),
                api.delete(f"/sites/{site}/local-authorization-list/TAG-1"),
                api.post(
                    "/meters",
                    json={
                        "siteId": site,
                        "stationId": "CS-API",
                        "profile": "sdm630",
                        "unitId": 1,
                        "transport": {"type": "tcp", "host": "192.0.2.3"},
                    },
                ),
            ]
            answers = [await call for call in calls]
            assert [answer.status_code for answer in answers] == [200, 201, 200, 200, 204, 201], [
                answer.text for answer in answers
            ]
            assert answers[0].json()["upstreamOcppVersions"] == ["ocpp2.0.1"]
            meter = answers[-1].json()["id"]
            assert (await api.patch(f"/meters/{meter}", json={"enabled": False})).status_code == 200
        async with context.store.transaction() as session:
            found = await audit.list_records(session, OPERATOR, PageRequest(50), company_id=tenant.company_id)
    finally:
        await context.close()
    mine = [entry for entry in reversed(found.items) if entry.face == "api"]
    assert [(entry.action, entry.object_id) for entry in mine] == [
        ("site.create", site),
        ("site.update", site),
        ("station.create", "CS-API"),
        ("station.update", "CS-API"),
        ("localauth.add", f"{site}/TAG-1"),
        ("localauth.remove", f"{site}/TAG-1"),
        ("meter.create", meter),
        ("meter.disable", meter),
    ]
    assert {entry.actor.split(" ")[0] for entry in mine} == {"application"}
    assert {entry.address for entry in mine} == {"198.51.100.7"}
    assert mine[1].detail["changed"] == "name, upstream password removed, upstream OCPP versions"
    assert mine[1].detail["upstream OCPP versions"] == "ocpp2.0.1"
    assert mine[3].detail["changed"] == "security profile 1 -> 2"
    assert KEY not in repr(found) and UPSTREAM not in repr(found)
