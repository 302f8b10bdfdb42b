"""`GET /charge-points` tells how each charge point is reached: an OCPP link, a meter, or nothing."""

from __future__ import annotations

import httpx

from chargenet.clock import ManualClock
from chargenet.services import meters, stations
from chargenet.services.callers import OPERATOR
from chargenet.services.directory import ChargePointDirectory
from tests.factories import partner_token
from tests.integration.edge.conftest import Served
from tests.support.processes import eventually


async def charge_points(served: Served) -> dict[str, dict[str, object]]:
    """The list once the copy it is served from has read what changed: the running process's copy reads the store
    every half second; the second read it completes from now began after now, whatever read was under way."""
    reads = served.directory.reads
    await eventually(lambda: served.directory.reads >= reads + 2)
    return await listed(served)


async def listed(served: Served) -> dict[str, dict[str, object]]:
    token = await partner_token(served.context, served.tenant.company_id, ["charge-points:read"])
    async with httpx.AsyncClient(base_url=f"{served.http_url}/api/v1", timeout=10) as client:
        response = await client.get("/charge-points", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    return {item["id"]: item for item in response.json()["items"]}


async def metered_station(
    served: Served,
    station_id: str,
    *,
    charge_points: int = 1,
    connectors: int | None = None,
    charge_point_id: str | None = None,
    connector_id: int | None = None,
) -> meters.MeterView:
    """Station `station_id` of the tenant's site with an SDM630 meter over Modbus TCP, on the charge point and
    connector given (the service's defaults otherwise)."""
    context = served.context
    async with context.store.transaction() as session:
        await stations.create_station(
            session,
            OPERATOR,
            context.keys.secret_hasher(),
            context.keys.credential_cipher(),
            site_id=served.tenant.site_id,
            station_id=station_id,
            now=context.clock.now(),
            charge_points=charge_points,
            connectors=connectors,
        )
        return await meters.create_meter(
            session,
            OPERATOR,
            site_id=served.tenant.site_id,
            station_id=station_id,
            charge_point_id=charge_point_id,
            connector_id=connector_id,
            profile="sdm630",
            unit_id=1,
            tcp="127.0.0.1:1502",
            now=context.clock.now(),
        )


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
    assert item["lastHeartbeat"] is not None and item["ocppVersion"] == "ocpp1.6"
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
    meter = await metered_station(served, "METERED-1")
    item = (await charge_points(served))["METERED-1"]
    assert item["connection"] == "meter"
    [shown] = item["meters"]
    assert shown["id"] == meter.id and shown["connectorId"] == 1 and shown["charging"] is False


async def test_a_meter_shows_on_the_charge_point_it_measures_only(served: Served) -> None:
    meter = await metered_station(
        served, "TWIN", charge_points=2, connectors=2, charge_point_id="TWIN-2", connector_id=2
    )
    shown = await charge_points(served)
    assert [m["id"] for m in shown["TWIN-2"]["meters"]] == [meter.id]
    assert shown["TWIN-1"]["meters"] == []


async def following(directory: ChargePointDirectory, clock: ManualClock) -> None:
    """Until the copy's last read was of what changed, not a whole read: the worker then waits for its next period
    (on a clock that moves only when told to) or for a page that meets a newer structure, and for nothing else."""
    await eventually(lambda: directory.reads > 0)  # the whole read at its start
    while await read_again(directory, clock):
        pass


async def read_again(directory: ChargePointDirectory, clock: ManualClock) -> bool:
    """The worker's read of its next period; True when it was a whole read (the structure had moved)."""
    reads, whole_reads = directory.reads, directory.whole_reads
    clock.advance(directory.refresh_every)
    await eventually(lambda: directory.reads > reads)
    return directory.whole_reads > whole_reads


async def test_the_list_is_served_from_the_process_copy_with_what_the_store_shows(served_manual: Served) -> None:
    served = served_manual
    clock = served.context.clock
    assert isinstance(clock, ManualClock)

    def pages(source: str) -> float:
        value = served.context.metrics.get_sample_value("chargenet_charge_point_pages_total", {"source": source})
        return value or 0.0

    await following(served.directory, clock)
    async with served.context.store.transaction() as session:
        await stations.create_station(  # after the copy's last read, and it reads again only when a page asks
            session,
            OPERATOR,
            served.context.keys.secret_hasher(),
            served.context.keys.credential_cipher(),
            site_id=served.tenant.site_id,
            station_id="CS-LATE",
            now=clock.now(),
            connectors=2,
        )
    whole_reads = served.directory.whole_reads
    from_store = await listed(served)  # the copy's structure is behind: the store answers
    assert (pages("store"), pages("memory")) == (1, 0)
    await eventually(lambda: served.directory.whole_reads > whole_reads)  # that page had the copy read again at once
    from_memory = await listed(served)
    assert (pages("store"), pages("memory")) == (1, 1)
    assert from_memory == from_store
    assert "CS-LATE" in from_memory
