"""`GET /charge-points` tells how each charge point is reached: an OCPP link, a meter, or nothing."""

from __future__ import annotations

import asyncio

import httpx

from chargenet.services import meters, stations
from chargenet.services.callers import OPERATOR
from tests.factories import partner_token
from tests.integration.edge.conftest import Served


async def charge_points(served: Served) -> dict[str, dict[str, object]]:
    """The list once the copy it is served from has read what changed: a running process's copy does so within
    half a second, and the test's clock, on which it reads, moves only when told to."""
    await served.directory.refresh()
    return await listed(served)


async def listed(served: Served) -> dict[str, dict[str, object]]:
    token = await partner_token(served.context, served.tenant.company_id, ["charge-points:read"])
    async with httpx.AsyncClient(base_url=f"{served.http_url}/api/v1", timeout=10) as client:
        response = await client.get("/charge-points", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    return {item["id"]: item for item in response.json()["items"]}


async def test_a_connected_station_shows_connected_and_its_last_heartbeat(served: Served) -> None:
    station = served.station()
    await station.connect()
    await station.boot()
    await station.heartbeat()
    await served.edge.message_log.run_once()
    try:
        item = (await charge_points(served))["CS-1"]
    finally:
        await station.close()
    assert item["connection"] == "connected"
    assert item["lastHeartbeat"] is not None
    assert item["meters"] == []


async def test_connector_status_survives_a_reconnect(served: Served) -> None:
    station = served.station()
    await station.connect()
    await station.status(1, "Charging")
    await station.close()
    await station.connect()  # no new BootNotification, as OCPP-J §5.4 allows
    try:
        [connector] = [c for c in (await charge_points(served))["CS-1"]["connectors"] if c["connectorId"] == 1]
        assert connector["status"] == "Charging"
        await station.status(1, "Charging")
    finally:
        await station.close()
    assert len(await served.events("ChargePointStatus")) == 1  # the same status again is no change


async def test_a_station_never_connected_shows_disconnected(served: Served) -> None:
    assert (await charge_points(served))["CS-1"]["connection"] == "disconnected"


async def test_a_station_known_only_through_a_meter_shows_meter_and_the_meter_state(served: Served) -> None:
    context = served.context
    async with context.store.transaction() as session:
        await stations.create_station(
            session,
            OPERATOR,
            context.keys.secret_hasher(),
            context.keys.credential_cipher(),
            site_id=served.tenant.site_id,
            station_id="METERED-1",
            now=context.clock.now(),
        )
        meter = await meters.create_meter(
            session,
            OPERATOR,
            site_id=served.tenant.site_id,
            station_id="METERED-1",
            profile="sdm630",
            unit_id=1,
            tcp="127.0.0.1:1502",
            now=context.clock.now(),
        )
    item = (await charge_points(served))["METERED-1"]
    assert item["connection"] == "meter"
    [shown] = item["meters"]
    assert shown["id"] == meter.id and shown["connectorId"] == 1 and shown["charging"] is False


async def test_a_meter_shows_on_the_charge_point_it_measures_only(served: Served) -> None:
    context = served.context
    async with context.store.transaction() as session:
        await stations.create_station(
            session,
            OPERATOR,
            context.keys.secret_hasher(),
            context.keys.credential_cipher(),
            site_id=served.tenant.site_id,
            station_id="TWIN",
            now=context.clock.now(),
            charge_points=2,
            connectors=2,
        )
        meter = await meters.create_meter(
            session,
            OPERATOR,
            site_id=served.tenant.site_id,
            station_id="TWIN",
            charge_point_id="TWIN-2",
            connector_id=2,
            profile="sdm630",
            unit_id=1,
            tcp="127.0.0.1:1502",
            now=context.clock.now(),
        )
    shown = await charge_points(served)
    assert [m["id"] for m in shown["TWIN-2"]["meters"]] == [meter.id]
    assert shown["TWIN-1"]["meters"] == []


async def test_the_list_is_served_from_the_process_copy_with_what_the_store_shows(served: Served) -> None:
    def pages(source: str) -> float:
        value = served.context.metrics.get_sample_value("chargenet_charge_point_pages_total", {"source": source})
        return value or 0.0

    async with served.context.store.transaction() as session:
        await stations.create_station(  # after the copy's last read, whatever the test before did
            session,
            OPERATOR,
            served.context.keys.secret_hasher(),
            served.context.keys.credential_cipher(),
            site_id=served.tenant.site_id,
            station_id="CS-LATE",
            now=served.context.clock.now(),
            connectors=2,
        )
    from_store = await listed(served)  # the copy's structure is behind: the store answers
    assert pages("store") >= 1
    async with asyncio.timeout(5):
        while pages("memory") == 0:  # the copy reads the store again at once, then answers
            from_memory = await listed(served)
            await asyncio.sleep(0.01)
    assert from_memory == from_store
