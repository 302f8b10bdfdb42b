"""The stations' endpoint through real WebSockets: handshake, security profile 1, and the RPC framework's errors."""

from __future__ import annotations

import asyncio
import gc
import json
import weakref
from collections.abc import AsyncIterator

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus
from websockets.typing import Subprotocol

from chargenet.simulators.cpo import SimulatedCentralSystem
from chargenet.simulators.station import SimulatedStation, StationCallError
from tests.integration.edge.conftest import PASSWORD, Served, manual_clock
from tests.support.logs import collected_logs
from tests.support.processes import eventually

pytestmark = pytest.mark.sqlite_only(reason="the handshake and the RPC framework: the store only holds the station")


async def test_unknown_station_gets_404_before_the_upgrade(served: Served) -> None:
    with pytest.raises(InvalidStatus) as caught:
        await served.station("NOPE").connect()
    assert caught.value.response.status_code == 404


async def test_wrong_key_gets_401(served: Served) -> None:
    with pytest.raises(InvalidStatus) as caught:
        await served.station(password="wrong-key-wrong-key").connect()
    assert caught.value.response.status_code == 401
    assert caught.value.response.headers["WWW-Authenticate"].startswith("Basic")


async def test_missing_credentials_get_401(served: Served) -> None:
    with pytest.raises(InvalidStatus) as caught:
        await served.station(password=None).connect()
    assert caught.value.response.status_code == 401


async def test_user_name_other_than_the_station_id_gets_401(served: Served) -> None:
    station = served.station()
    station.station_id = "CS-1"
    headers = station.headers()
    import base64

    headers["Authorization"] = "Basic " + base64.b64encode(f"CS-2:{PASSWORD}".encode()).decode()

    with pytest.raises(InvalidStatus) as caught:
        await connect(f"{served.ocpp_url}/CS-1", subprotocols=["ocpp1.6"], additional_headers=headers)  # type: ignore[list-item]
    assert caught.value.response.status_code == 401


async def test_key_sent_as_raw_bytes_whose_hex_is_registered_is_accepted(served: Served) -> None:
    raw = bytes(range(16))
    await served.add_station("RAW-1", password=raw.hex())
    station = served.station("RAW-1", password=raw)
    await station.connect()
    assert (await station.heartbeat())["currentTime"]
    await station.close()


async def test_the_stations_first_offered_subprotocol_is_negotiated(served: Served) -> None:
    station = served.station()
    socket = await station.connect(("ocpp1.6", "ocpp2.0.1"))
    assert socket.subprotocol == "ocpp1.6"
    await station.close()


async def test_without_an_ocpp_subprotocol_the_handshake_completes_without_one_then_closes(served: Served) -> None:
    station = served.station()
    socket = await station.connect(("ocpp2.0",))
    assert socket.subprotocol is None
    assert await station.wait_closed() == 1002


async def test_cold_boot_is_accepted_with_the_heartbeat_interval(served: Served) -> None:
    station = served.station()
    await station.connect()
    answer = await station.boot()
    assert answer["status"] == "Accepted" and answer["interval"] == 300
    assert answer["currentTime"].endswith("Z")
    assert "currentTime" in await station.heartbeat()
    await station.close()


async def test_compression_is_negotiated_with_a_1_kib_window_for_what_the_server_sends(served: Served) -> None:
    station = served.station()
    socket = await station.connect()
    offered = socket.response.headers["Sec-WebSocket-Extensions"] if socket.response is not None else ""
    assert "permessage-deflate" in offered and "server_max_window_bits=10" in offered
    assert "currentTime" in await station.heartbeat()  # what each side sends is inflated by the other
    await station.close()


async def test_a_station_that_offers_no_compression_is_answered_uncompressed(served: Served) -> None:
    station = served.station()
    socket = await connect(
        f"{served.ocpp_url}/{station.station_id}",
        subprotocols=[Subprotocol("ocpp1.6")],
        additional_headers=station.headers(),
        compression=None,
    )
    try:
        assert socket.response is not None and "Sec-WebSocket-Extensions" not in socket.response.headers
        await socket.send(json.dumps([2, "h1", "Heartbeat", {}]))
        answer = json.loads(await socket.recv())
        assert answer[:2] == [3, "h1"] and "currentTime" in answer[2]
    finally:
        await socket.close()


@pytest.fixture
async def station(served: Served):  # type: ignore[no-untyped-def]
    simulated = served.station()
    await simulated.connect()
    yield simulated
    await simulated.close()


async def raw_answer(station, frame: list[object] | str):  # type: ignore[no-untyped-def]
    await station.send_raw(frame if isinstance(frame, str) else json.dumps(frame))
    return await station.next_raw()


async def test_unknown_action_gets_not_implemented(station) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StationCallError) as caught:
        await station.call("FlyToTheMoon", {})
    assert caught.value.code == "NotImplemented"


async def test_central_system_action_from_a_station_gets_not_supported(station) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StationCallError) as caught:
        await station.call("Reset", {"type": "Soft"})
    assert caught.value.code == "NotSupported"


async def test_missing_field_gets_occurence_constraint_violation(station) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StationCallError) as caught:
        await station.call("BootNotification", {"chargePointVendor": "x"})
    assert caught.value.code == "OccurenceConstraintViolation"


async def test_wrong_type_gets_type_constraint_violation(station) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StationCallError) as caught:
        await station.call("StatusNotification", {"connectorId": "1", "errorCode": "NoError", "status": "Available"})
    assert caught.value.code == "TypeConstraintViolation"


async def test_bad_value_gets_property_constraint_violation(station) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StationCallError) as caught:
        await station.call("StatusNotification", {"connectorId": 1, "errorCode": "Error", "status": "Available"})
    assert caught.value.code == "PropertyConstraintViolation"


async def test_extra_property_gets_formation_violation(station) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StationCallError) as caught:
        await station.call("Heartbeat", {"extra": True})
    assert caught.value.code == "FormationViolation"


async def test_connector_id_above_the_limit_gets_property_constraint_violation(station) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StationCallError) as caught:
        await station.status(17, "Available")
    assert caught.value.code == "PropertyConstraintViolation"


async def test_malformed_call_with_readable_id_gets_formation_violation(station) -> None:  # type: ignore[no-untyped-def]
    answer = await raw_answer(station, [2, "m1", "Heartbeat"])
    assert answer[:3] == [4, "m1", "FormationViolation"] and answer[4] == {}


async def test_id_longer_than_36_characters_gets_formation_violation(station) -> None:  # type: ignore[no-untyped-def]
    answer = await raw_answer(station, [2, "x" * 37, "Heartbeat", {}])
    assert answer[2] == "FormationViolation"


async def test_duplicate_message_id_gets_protocol_error(station) -> None:  # type: ignore[no-untyped-def]
    first = await raw_answer(station, [2, "dup", "Heartbeat", {}])
    second = await raw_answer(station, [2, "dup", "Heartbeat", {}])
    assert first[0] == 3 and second[:3] == [4, "dup", "ProtocolError"]


async def test_five_unreadable_frames_in_a_row_close_with_1002(station) -> None:  # type: ignore[no-untyped-def]
    for frame in ["not json", "{}", b"\x00binary", "[2]", '[9,"a",{}]']:
        await station.send_raw(frame)
    assert await station.wait_closed() == 1002


async def test_four_unreadable_frames_then_a_good_one_keep_the_connection(station) -> None:  # type: ignore[no-untyped-def]
    for frame in ["not json", "{}", b"\x00binary", "[2]"]:
        await station.send_raw(frame)
    assert "currentTime" in await station.heartbeat()
    for frame in ["not json", "{}", "[]", "[2]"]:
        await station.send_raw(frame)
    assert "currentTime" in await station.heartbeat()


async def test_a_line_logged_while_a_station_is_connected_names_it(station, served: Served) -> None:  # type: ignore[no-untyped-def]
    with collected_logs() as records:
        await station.send_raw("not json")
        assert "currentTime" in await station.heartbeat()  # the unreadable frame was handled before this answer
    [line] = [r for r in records if r.getMessage() == "unreadable frame"]
    assert line.station == served.tenant.station_id


async def test_two_megabyte_frame_closes_the_connection_as_too_big(station) -> None:  # type: ignore[no-untyped-def]
    await station.send_raw(json.dumps([2, "big", "DataTransfer", {"vendorId": "x", "data": "y" * 2_000_000}]))
    assert await station.wait_closed() == 1009


async def test_second_connection_replaces_the_first(served: Served) -> None:
    first = served.station()
    await first.connect()
    await first.boot()
    second = served.station()
    await second.connect()
    assert await first.wait_closed() == 1000
    assert "currentTime" in await second.heartbeat()
    await asyncio.sleep(0.05)
    assert served.edge.connected_stations == ["CS-1"]
    await second.close()


async def test_a_station_that_went_away_is_freed_without_the_cyclic_garbage_collector(served: Served) -> None:
    station = served.station()
    await station.connect()
    await station.boot()
    await station.status(1, "Available")
    link = served.edge._links["CS-1"]
    freed = [weakref.ref(link), weakref.ref(link.rpc)]
    del link
    gc.collect()
    gc.disable()  # from here on, only reference counting frees anything
    try:
        await station.close()
        await eventually(lambda: served.edge.connected_stations == [])
        await eventually(lambda: [ref() for ref in freed] == [None, None])  # once the connection's tasks end
    finally:
        gc.enable()


async def test_flooding_station_gets_every_call_answered(station) -> None:  # type: ignore[no-untyped-def]
    frames = [json.dumps([2, f"f{n}", "Heartbeat", {}]) for n in range(40)]
    for frame in frames:
        await station.send_raw(frame)
    answers = [await station.next_raw() for _ in frames]
    assert {a[1] for a in answers} == {f"f{n}" for n in range(40)}
    assert {a[0] for a in answers} <= {3, 4}


async def test_idle_station_is_closed_after_two_intervals_and_a_minute(served_manual: Served) -> None:
    station = served_manual.station()
    await station.connect()
    await station.heartbeat()
    assert await idle_for(served_manual, station, 659) is None
    assert "currentTime" in await station.heartbeat()  # a message resets the idle timer
    assert await idle_for(served_manual, station, 659) is None
    manual_clock(served_manual).advance(11)  # the sweep runs every 10 s
    assert await station.wait_closed() == 1000


async def test_websocket_pings_keep_a_station_from_being_idle(served_manual: Served) -> None:
    station = served_manual.station()
    await station.connect()
    await station.heartbeat()
    assert await idle_for(served_manual, station, 659) is None
    await asyncio.wait_for(await station.socket.ping(), 5)  # OCPP-J §5.3: a ping may stand in for a Heartbeat
    assert await idle_for(served_manual, station, 659) is None
    manual_clock(served_manual).advance(11)
    assert await station.wait_closed() == 1000


async def idle_for(served: Served, station: SimulatedStation, seconds: int) -> int | None:
    """Let the station stay silent for `seconds` more (the sweep wakes once); its close code, if it was closed."""
    manual_clock(served).advance(seconds)
    await asyncio.sleep(0.2)
    return station.socket.close_code


@pytest.fixture
async def told_3600_s_by_the_upstream(
    served_manual: Served, cpo: SimulatedCentralSystem
) -> AsyncIterator[SimulatedStation]:
    cpo.heartbeat_interval = 3600
    await served_manual.point_site_at(cpo)
    station = served_manual.station()
    await station.connect()
    await cpo.wait_connected("CS-1")
    assert (await station.boot())["interval"] == 3600
    yield station
    await station.close()


async def test_station_given_a_long_interval_by_the_upstream_is_not_idle_before_two_of_them(
    served_manual: Served, told_3600_s_by_the_upstream: SimulatedStation
) -> None:
    assert await idle_for(served_manual, told_3600_s_by_the_upstream, 2 * 3600 + 50) is None


async def test_station_given_a_long_interval_by_the_upstream_is_idle_after_two_of_them_and_a_minute(
    served_manual: Served, told_3600_s_by_the_upstream: SimulatedStation
) -> None:
    await idle_for(served_manual, told_3600_s_by_the_upstream, 2 * 3600 + 60)
    assert await told_3600_s_by_the_upstream.wait_closed() == 1000


async def test_heartbeat_interval_changed_by_the_upstream_sets_the_idle_limit(
    served_manual: Served, cpo: SimulatedCentralSystem
) -> None:
    await served_manual.point_site_at(cpo)
    station = served_manual.station()
    await station.connect()
    await cpo.wait_connected("CS-1")
    await station.boot()
    frame = await cpo.call("CS-1", "ChangeConfiguration", {"key": "HeartbeatInterval", "value": "1800"})
    assert frame[2] == {"status": "Accepted"}
    assert await idle_for(served_manual, station, 2 * 1800 + 50) is None
    await idle_for(served_manual, station, 10)
    assert await station.wait_closed() == 1000


async def test_metrics_count_connected_stations(served: Served) -> None:
    import httpx

    station = served.station()
    await station.connect()
    await station.heartbeat()
    async with httpx.AsyncClient() as client:
        text = (await client.get(f"{served.http_url}/metrics")).text
    assert "chargenet_ocpp_connected_stations 1.0" in text
    await station.close()


@pytest.mark.expected_traceback("RuntimeError: a bug of ours")
async def test_own_fault_is_internal_error_counted_in_metrics(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from chargenet.edge import records

    async def broken(*_: object) -> None:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(records, "record_boots", broken)
    station = served.station()
    await station.connect()
    with pytest.raises(StationCallError) as caught:
        await station.boot()
    assert caught.value.code == "InternalError"
    async with httpx.AsyncClient() as client:
        text = (await client.get(f"{served.http_url}/metrics")).text
    assert 'chargenet_ocpp_own_faults_total{action="BootNotification",code="InternalError"} 1.0' in text
    await station.close()


async def test_frame_that_is_not_json_gets_formation_violation_under_id_minus_one(station) -> None:  # type: ignore[no-untyped-def]
    answer = await raw_answer(station, "this is not json")
    assert answer[:3] == [4, "-1", "FormationViolation"] and answer[4] == {}
    answer = await raw_answer(station, '[2,"abc","Heartbeat",{')
    assert answer[:3] == [4, "abc", "FormationViolation"]
    assert "currentTime" in await station.heartbeat()


async def test_integer_beyond_32_bits_gets_type_constraint_violation(station) -> None:  # type: ignore[no-untyped-def]
    await station.boot()
    payload = {"connectorId": 1, "idTag": "T", "meterStart": 2**64, "timestamp": "2026-07-01T12:00:00Z"}
    with pytest.raises(StationCallError) as caught:
        await station.call("StartTransaction", payload)
    assert caught.value.code == "TypeConstraintViolation"
    assert "currentTime" in await station.heartbeat()


async def test_lone_surrogate_gets_type_constraint_violation(station) -> None:  # type: ignore[no-untyped-def]
    await station.boot()
    answer = await raw_answer(station, '[2,"s1","Authorize",{"idTag":"A\\ud800"}]')
    assert answer[:3] == [4, "s1", "TypeConstraintViolation"] and answer[4] == {"field": "idTag"}
    assert "currentTime" in await station.heartbeat()
