"""The edge in `GET /metrics` of a real chargenet: OCPP calls by action, upstream links, stations connected, and
labels that never carry what a station or a caller sent."""

from __future__ import annotations

import json

import httpx
import pytest

from chargenet.simulators.cpo import SimulatedCentralSystem
from chargenet.simulators.station import StationCallError
from tests.integration.edge.conftest import Served
from tests.support.ports import free_port
from tests.support.scrape import Scrape

pytestmark = pytest.mark.sqlite_only(reason="what is measured here does not depend on the store")

CALLS = "chargenet_ocpp_call_duration_seconds_count"


async def _scrape(served: Served) -> Scrape:
    async with httpx.AsyncClient() as client:
        return Scrape((await client.get(f"{served.http_url}/metrics")).text)


async def test_a_boot_notification_lands_in_the_call_histogram_of_its_action(served: Served) -> None:
    station = served.station()
    await station.connect()
    await station.boot()
    await station.heartbeat()
    await station.heartbeat()
    scrape = await _scrape(served)
    await station.close()
    assert scrape.value(CALLS, peer="station", action="BootNotification") == 1
    assert scrape.value(CALLS, peer="station", action="Heartbeat") == 2


async def test_an_action_ocpp_does_not_define_is_timed_as_other(served: Served) -> None:
    station = served.station()
    await station.connect()
    with pytest.raises(StationCallError):
        await station.call("FlyToTheMoon", {})
    scrape = await _scrape(served)
    await station.close()
    assert scrape.value(CALLS, peer="station", action="other") == 1
    assert "FlyToTheMoon" not in scrape.label_values()


async def test_a_refused_call_is_timed_under_its_action(served: Served) -> None:
    station = served.station()
    await station.connect()
    with pytest.raises(StationCallError):
        await station.call("BootNotification", {"chargePointVendor": 42})
    scrape = await _scrape(served)
    await station.close()
    assert scrape.value(CALLS, peer="station", action="BootNotification") == 1


async def test_an_upstream_call_relayed_to_the_station_is_timed_under_the_upstream_peer(
    served: Served, cpo: SimulatedCentralSystem
) -> None:
    await served.point_site_at(cpo)
    station = served.station()
    await station.connect()
    await cpo.wait_connected("CS-1")
    frame = await cpo.call("CS-1", "ChangeConfiguration", {"key": "HeartbeatInterval", "value": "1800"})
    scrape = await _scrape(served)
    await station.close()
    assert frame[2] == {"status": "Accepted"}
    assert scrape.value(CALLS, peer="upstream", action="ChangeConfiguration") == 1
    assert scrape.value(CALLS, peer="station", action="ChangeConfiguration") is None


async def test_stations_connected_counts_this_process_connections(served: Served) -> None:
    station = served.station()
    assert (await _scrape(served)).value("chargenet_ocpp_connected_stations") == 0
    await station.connect()
    await station.heartbeat()
    assert (await _scrape(served)).value("chargenet_ocpp_connected_stations") == 1
    await station.close()


async def test_an_upstream_link_that_connected_is_up(served: Served, cpo: SimulatedCentralSystem) -> None:
    await served.point_site_at(cpo)
    station = served.station()
    await station.connect()
    await station.boot()  # forwarded once the link's first attempt connected
    await cpo.wait_connected("CS-1")
    scrape = await _scrape(served)
    await station.close()
    assert scrape.value("chargenet_ocpp_upstream_links", state="up") == 1
    assert scrape.value("chargenet_ocpp_upstream_links", state="down") == 0
    assert scrape.value("chargenet_ocpp_upstream_connects_total") == 1


async def test_an_upstream_link_that_cannot_connect_is_down_and_its_failure_counted(served: Served) -> None:
    unreachable = SimulatedCentralSystem()
    unreachable.port = free_port()  # nothing listens there
    await served.point_site_at(unreachable)
    station = served.station()
    await station.connect()
    await station.boot()  # answered after the link's first attempt failed
    scrape = await _scrape(served)
    await station.close()
    assert scrape.value("chargenet_ocpp_upstream_links", state="up") == 0
    assert scrape.value("chargenet_ocpp_upstream_links", state="down") == 1
    assert (scrape.value("chargenet_ocpp_upstream_connect_failures_total") or 0) >= 1


async def test_no_label_value_is_a_station_id_an_id_tag_a_message_id_a_path_or_a_url(
    served: Served, cpo: SimulatedCentralSystem
) -> None:
    await served.point_site_at(cpo)
    station = served.station()
    await station.connect()
    await station.boot()
    await cpo.wait_connected("CS-1")
    await station.authorize("TAG-0042")
    await station.send_raw(json.dumps([2, "msg-7f3a", "Heartbeat", {}]))
    await station.next_raw()
    async with httpx.AsyncClient(base_url=served.http_url) as client:
        await client.get("/api/v1/stations/CS-1", headers={"Authorization": f"Bearer {served.token}"})
        await client.get("/ocpp-scan/CS-1?x=1")
    scrape = await _scrape(served)
    await station.close()
    values = scrape.label_values()
    for sent in ("CS-1", "TAG-0042", "msg-7f3a", "ocpp-scan", cpo.url):
        assert not any(sent in value for value in values), sent
    assert not any("://" in value or "?" in value for value in values)
    assert scrape.value(CALLS, peer="station", action="Authorize") == 1
