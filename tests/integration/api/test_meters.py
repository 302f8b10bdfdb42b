"""`/api/v1/meters`, `/health` and `/metrics` for meters, on the real app over ASGI, on SQLite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from chargenet.app import AppContext
from chargenet.clock import ManualClock
from chargenet.meters.profiles import get_profile
from chargenet.meters.runtime import MeterPolling
from chargenet.simulators.meter import MeterServer, SimulatedMeter
from tests.factories import Tenant, make_tenant, partner_token
from tests.support.app import app_context, asgi_client

pytestmark = pytest.mark.sqlite_only(reason="the meters API's answers and problems")


@pytest.fixture
async def context(database_url: str, tmp_path: Path, clock: ManualClock) -> AsyncIterator[AppContext]:
    async with app_context(tmp_path, clock, database_url=database_url) as context:
        yield context


@pytest.fixture
async def client(context: AppContext) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(context) as client:
        yield client


async def authorized(context: AppContext, client: httpx.AsyncClient, **layout: Any) -> Tenant:
    """A new tenant (`make_tenant` with `layout`), with the client as its partner application (meters:read and
    meters:write)."""
    tenant = await make_tenant(context.store, context.keys, context.clock.now(), **layout)
    token = await partner_token(context, tenant.company_id, ["meters:read", "meters:write"])
    client.headers["Authorization"] = f"Bearer {token}"
    return tenant


def meter_body(tenant: Tenant, **fields: object) -> dict[str, object]:
    """A meter for the tenant's station: an SDM630 at unit 1 on Modbus TCP 10.0.0.9 unless `fields` say otherwise."""
    return {
        "siteId": tenant.site_id,
        "stationId": tenant.station_id,
        "profile": "sdm630",
        "unitId": 1,
        "transport": {"type": "tcp", "host": "10.0.0.9"},
        **fields,
    }


async def test_meter_created_over_the_api_is_listed_shown_and_deleted(
    context: AppContext, client: httpx.AsyncClient
) -> None:
    tenant = await authorized(context, client)
    body = meter_body(tenant, profile="abb-b23", unitId=3, stopGrace=300)
    created = await client.post("/api/v1/meters", json=body)
    assert created.status_code == 201, created.text
    meter_id = created.json()["id"]
    listing = await client.get("/api/v1/meters", params={"siteId": tenant.site_id})
    assert [m["id"] for m in listing.json()["items"]] == [meter_id] and listing.json()["next"] is None
    shown = (await client.get(f"/api/v1/meters/{meter_id}")).json()
    assert shown["transport"] == {"type": "tcp", "host": "10.0.0.9", "port": 502} and shown["stopGrace"] == 300
    patched = await client.patch(f"/api/v1/meters/{meter_id}", json={"enabled": False})
    assert patched.json()["enabled"] is False
    assert (await client.delete(f"/api/v1/meters/{meter_id}")).status_code == 204
    assert (await client.get(f"/api/v1/meters/{meter_id}")).status_code == 404


async def test_malformed_meter_is_a_problem_naming_the_field(context: AppContext, client: httpx.AsyncClient) -> None:
    tenant = await authorized(context, client)
    body = meter_body(tenant, unitId=0, transport={"type": "rtu", "device": "/dev/ttyUSB0"})
    response = await client.post("/api/v1/meters", json=body)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["field"] == "unitId"  # named as the body names it


async def test_list_pages_with_a_cursor(context: AppContext, client: httpx.AsyncClient) -> None:
    tenant = await authorized(context, client, charge_points=1, connectors=3)
    for unit in (1, 2, 3):
        body = meter_body(tenant, connectorId=unit, unitId=unit)
        assert (await client.post("/api/v1/meters", json=body)).status_code == 201
    first = (await client.get("/api/v1/meters", params={"limit": 2})).json()
    second = (await client.get("/api/v1/meters", params={"limit": 2, "cursor": first["next"]})).json()
    assert len(first["items"]) == 2 and len(second["items"]) == 1 and second["next"] is None
    assert (await client.get("/api/v1/meters", params={"cursor": "garbage!"})).status_code == 422


async def test_health_and_metrics_show_each_bus_and_meter(
    context: AppContext, client: httpx.AsyncClient, clock: ManualClock
) -> None:
    tenant = await authorized(context, client)
    live = SimulatedMeter(get_profile("sdm630"), unit_id=1)
    live.set_load(clock.now(), 16.0)
    server = await MeterServer.tcp([live], clock)
    try:
        body = meter_body(tenant, transport={"type": "tcp", "host": "127.0.0.1", "port": server.port})
        meter_id = (await client.post("/api/v1/meters", json=body)).json()["id"]
        polling = next(w for w in context.workers if isinstance(w, MeterPolling))
        await polling.reload()
        for _ in range(3):
            clock.advance(5)
            for poller in polling.pollers.values():
                await poller.run_once()
        health = (await client.get("/health")).json()
        metrics = (await client.get("/metrics")).text
        shown = (await client.get(f"/api/v1/meters/{meter_id}")).json()
        for poller in polling.pollers.values():
            poller.link.close()
    finally:
        await server.stop()
    [bus] = [c for c in health["components"] if c["name"].startswith("meters tcp://")]
    assert bus["status"] == "ok"
    assert bus["meters"][meter_id]["reads"] == 3 and bus["meters"][meter_id]["charging"] is True
    assert f'chargenet_meter_reads_total{{bus="tcp://127.0.0.1:{server.port}",meter="{meter_id}"}} 3.0' in metrics
    assert f'chargenet_meter_charging{{meter="{meter_id}"}} 1.0' in metrics
    assert shown["status"]["charging"] is True and shown["status"]["lastReading"]["maxCurrent"] == 16.0


async def test_a_meter_of_another_company_is_not_found_and_not_listed(
    context: AppContext, client: httpx.AsyncClient
) -> None:
    body = meter_body(await authorized(context, client))
    meter_id = (await client.post("/api/v1/meters", json=body)).json()["id"]
    await authorized(context, client, station_id="ST-2")  # the client is now another company's application
    assert (await client.get(f"/api/v1/meters/{meter_id}")).status_code == 404
    assert (await client.delete(f"/api/v1/meters/{meter_id}")).status_code == 404
    assert (await client.get("/api/v1/meters")).json()["items"] == []
    assert (await client.post("/api/v1/meters", json=body)).status_code == 404


async def test_meters_api_needs_a_token(context: AppContext, client: httpx.AsyncClient) -> None:
    response = await client.get("/api/v1/meters")
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
