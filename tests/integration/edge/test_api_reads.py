"""What only the console showed, read over the API: a station's OCPP message log (paged, filtered, NDJSON), the
company's audit log, one transaction with its samples; each behind its own scope, another company's out of
reach."""

from __future__ import annotations

import json

import httpx

from chargenet.services import companies
from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import SimulatedStation
from chargenet.store.models import MeterSample
from tests.factories import partner_token
from tests.integration.edge.conftest import Served
from tests.integration.edge.test_charging import add_tag
from tests.integration.edge.test_sessions_api import open_meter_session

READS = ["ocpp-messages:read", "audit-log:read", "transactions:read", "sessions:write"]


async def client(served: Served, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=f"{served.http_url}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=10
    )


async def test_a_partner_reads_the_message_log_and_the_audit_log_of_its_own_company_only(
    served: Served, station: SimulatedStation
) -> None:
    await station.heartbeat()
    await station.heartbeat()
    await served.edge.message_log.run_once()
    async with await client(served, await partner_token(served.context, served.tenant.company_id, READS)) as api:
        heartbeats = {"action": "Heartbeat", "direction": "from-station"}
        first = (await api.get("/stations/CS-1/messages", params={**heartbeats, "limit": 1})).json()
        rest = (await api.get("/stations/CS-1/messages", params={**heartbeats, "cursor": first["next"]})).json()
        paged = first["items"] + rest["items"]
        assert [(m["action"], m["messageType"]) for m in paged] == [("Heartbeat", 2)] * 2
        assert paged[0]["id"] > paged[1]["id"]  # newest first

        export = await api.get("/stations/CS-1/messages", params={**heartbeats, "format": "ndjson"})
        assert export.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(line) for line in export.text.splitlines()]
        assert [m["id"] for m in lines] == [m["id"] for m in reversed(paged)]  # the whole log, oldest first

        audit = (await api.get("/audit-log", params={"objectType": "group"})).json()
        assert audit["items"] and {e["companyId"] for e in audit["items"]} == {served.tenant.company_id}
        assert {e["action"] for e in audit["items"]} >= {"group.create"}

    async with served.context.store.transaction() as session:
        rival = await companies.create_company(session, OPERATOR, name="Rival", now=served.context.clock.now())
    async with await client(served, await partner_token(served.context, rival.id, READS)) as stranger:
        for params in ({}, {"format": "ndjson"}):
            assert (await stranger.get("/stations/CS-1/messages", params=params)).status_code == 404
        items = (await stranger.get("/audit-log")).json()["items"]
        assert {e["companyId"] for e in items} == {rival.id}


async def test_a_meter_session_is_read_with_its_samples_as_an_ocpp_transaction_is(served: Served) -> None:
    transaction_id = await open_meter_session(served)  # its meter read 1000 Wh at the start
    async with served.context.store.transaction() as session:
        at = served.context.clock.now()
        session.add(MeterSample(transaction_id=transaction_id, station_id="CS-1", at=at, energy_wh=1800, power_w=3600))
    async with await client(served, await partner_token(served.context, served.tenant.company_id, READS)) as api:
        transaction = (await api.get(f"/transactions/{transaction_id}")).json()
        samples = (await api.get(f"/transactions/{transaction_id}/samples")).json()
    assert (transaction["source"], transaction["active"], transaction["meterStart"]) == ("meter", True, 1.0)
    assert samples == {
        "items": [{"at": at.isoformat(), "energy": 1.8, "delivered": 0.8, "power": 3600.0}],
        "next": None,
    }


async def test_each_read_is_refused_without_its_scope_and_another_companys_transaction_is_404(
    served: Served, station: SimulatedStation
) -> None:
    await add_tag(served, "TAG1")
    transaction_id = (await station.start(1, "TAG1"))["transactionId"]
    refused = [
        ("/stations/CS-1/messages", "ocpp-messages:read"),
        ("/audit-log", "audit-log:read"),
        (f"/transactions/{transaction_id}", "transactions:read"),
        (f"/transactions/{transaction_id}/samples", "transactions:read"),
        ("/sessions/requests/sreq_1", "sessions:write"),
    ]
    for path, scope in refused:
        others = [s for s in READS if s != scope]
        async with await client(served, await partner_token(served.context, served.tenant.company_id, others)) as api:
            response = await api.get(path)
        assert (response.status_code, response.headers["content-type"]) == (403, "application/problem+json"), path
        assert f'scope="{scope}"' in response.headers["www-authenticate"]

    async with served.context.store.transaction() as session:
        rival = await companies.create_company(session, OPERATOR, name="Rival", now=served.context.clock.now())
    async with await client(served, await partner_token(served.context, rival.id, READS)) as stranger:
        for path in (f"/transactions/{transaction_id}", f"/transactions/{transaction_id}/samples"):
            assert (await stranger.get(path)).status_code == 404
