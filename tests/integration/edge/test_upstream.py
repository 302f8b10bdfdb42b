"""The edge as a proxy in front of an upstream central system (the CPO simulator), all over real WebSockets."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import pytest
from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.edge.core.authorize import UpstreamState
from chargenet.edge.ocpp16.frames import Payload
from chargenet.simulators.cpo import SimulatedCentralSystem
from chargenet.simulators.station import SimulatedStation
from chargenet.store.models import EdgeTransaction, StationPresence, UpstreamMessage
from tests.integration.edge.conftest import Served, manual_clock

pytestmark = pytest.mark.sqlite_only(
    reason="the relay of calls between a station and its upstream; the backlog's tests keep both stores"
)


@contextlib.asynccontextmanager
async def station_behind(
    served: Served, cpo: SimulatedCentralSystem, *, upstream_down: bool
) -> AsyncIterator[SimulatedStation]:
    """Station CS-1 connected to the edge, its site pointed at `cpo`: stopped before the station connects
    (`upstream_down`), or linked to it."""
    await served.point_site_at(cpo)
    if upstream_down:
        await cpo.stop()
    station = served.station()
    await station.connect()
    if not upstream_down:
        await cpo.wait_connected("CS-1")
    try:
        yield station
    finally:
        await station.close()


@pytest.fixture
async def upstream_up(served_manual: Served, cpo: SimulatedCentralSystem) -> AsyncIterator[SimulatedStation]:
    """A station linked through the edge to the upstream, on a server whose clock the test moves."""
    async with station_behind(served_manual, cpo, upstream_down=False) as station:
        yield station


@pytest.fixture
async def upstream_down(served_manual: Served, cpo: SimulatedCentralSystem) -> AsyncIterator[SimulatedStation]:
    """A station connected while its site's upstream is down, on a server whose clock the test moves."""
    async with station_behind(served_manual, cpo, upstream_down=True) as station:
        yield station


@pytest.fixture
async def proxied(served: Served, cpo: SimulatedCentralSystem) -> AsyncIterator[SimulatedStation]:
    cpo.passwords["CS-1"] = "upstream-secret-16"
    await served.point_site_at(cpo, password="upstream-secret-16")
    station = served.station()
    await station.connect()
    yield station
    await station.close()


async def upstream_id_of(served: Served, edge_id: int) -> int | None:
    async with served.context.store.transaction() as session:
        row = await session.get(EdgeTransaction, edge_id)
        assert row is not None
        return row.upstream_id


async def upstream_refused(served: Served, edge_id: int) -> bool:
    async with served.context.store.transaction() as session:
        row = await session.get(EdgeTransaction, edge_id)
        assert row is not None
        return row.upstream_refused


async def queued(served: Served) -> list[str]:
    async with served.context.store.transaction() as session:
        return list(await session.scalars(select(UpstreamMessage.action).order_by(UpstreamMessage.id)))


async def settle(predicate, within: float = 10) -> None:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(within):
        while not await predicate():
            await asyncio.sleep(0.05)


async def mapped(served: Served, edge_id: int) -> int | None:
    """The upstream's id of the edge's transaction `edge_id`, once it has one."""

    async def linked() -> bool:
        return await upstream_id_of(served, edge_id) is not None

    await settle(linked)
    return await upstream_id_of(served, edge_id)


async def drained(served: Served) -> None:
    """Wait until nothing is queued for the upstream."""

    async def empty() -> bool:
        return await queued(served) == []

    await settle(empty)


async def upstream_gone(served: Served) -> None:
    async def away() -> bool:
        return served.edge._links["CS-1"].upstream_state is not UpstreamState.CONNECTED

    await settle(away)


async def accepted_then_gone(
    served: Served, station: SimulatedStation, cpo: SimulatedCentralSystem, id_tag: str
) -> None:
    """`id_tag` authorized by the upstream (Accepted, no expiry date), which then goes away."""
    cpo.tags[id_tag] = "Accepted"
    await station.authorize(id_tag)
    await cpo.stop()
    await upstream_gone(served)


async def charged_while_down(station: SimulatedStation) -> int:
    """A whole transaction of TAG1 on connector 1, left queued for the upstream; its edge id."""
    started = await station.start(1, "TAG1", 10)
    await station.stop(started["transactionId"], 1000)
    return int(started["transactionId"])


async def answered_past_the_timeout(
    served: Served, cpo: SimulatedCentralSystem, action: str, sent: Coroutine[Any, Any, Payload]
) -> Payload:
    """The edge's answer to the station's `sent` while the upstream holds back its answer to `action` (until
    `cpo.release`) past the edge's upstream timeout."""
    cpo.hold.add(action)
    answering = asyncio.create_task(sent)
    await cpo.wait_for("CS-1", action)
    manual_clock(served).advance(served.edge.upstream_timeout.total_seconds())
    return await answering


async def come_back(cpo: SimulatedCentralSystem, clock: ManualClock) -> None:
    """Start the upstream again and move the clock through the link's reconnect backoff. Steps of half the
    upstream timeout, so a call already on its way cannot time out before the loop sees the connection."""
    await cpo.start()
    async with asyncio.timeout(10):
        while "CS-1" not in cpo.connections:
            clock.advance(0.5)
            await asyncio.sleep(0.02)


async def replay_all(served: Served, clock: ManualClock) -> None:
    """Move the clock through the replay's throttle until the queue is empty."""
    async with asyncio.timeout(10):
        while await queued(served):
            clock.advance(0.1)
            await asyncio.sleep(0.02)


async def test_upstream_connection_opens_before_boot_is_forwarded_with_basic_auth(
    proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    await cpo.wait_connected("CS-1")
    answer = await proxied.boot()
    assert answer["status"] == "Accepted"
    assert len(cpo.received("CS-1", "BootNotification")) == 1


async def test_status_is_published_and_forwarded(
    served: Served, proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    await proxied.status(1, "Available")
    assert len(await served.events("ChargePointStatus")) == 1
    assert cpo.received("CS-1", "StatusNotification")[0]["status"] == "Available"


async def test_unknown_tag_is_decided_by_the_upstream(proxied: SimulatedStation, cpo: SimulatedCentralSystem) -> None:
    cpo.tags["BAD"] = "Blocked"
    assert (await proxied.authorize("BAD"))["idTagInfo"]["status"] == "Blocked"
    assert cpo.received("CS-1", "Authorize") == [{"idTag": "BAD"}]


async def test_local_list_tag_is_not_forwarded(
    served: Served, proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    from tests.integration.edge.test_charging import add_tag

    await add_tag(served, "LOCAL1")
    assert (await proxied.authorize("LOCAL1"))["idTagInfo"]["status"] == "Accepted"
    assert cpo.received("CS-1", "Authorize") == []


async def test_station_gets_edge_ids_and_upstream_gets_its_own(
    served: Served, proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    started = await proxied.start(1, "TAG1", 10)
    edge_id = started["transactionId"]
    assert edge_id < 90001
    assert await upstream_id_of(served, edge_id) == 90001
    await proxied.meter_values(1, edge_id, 500)
    await proxied.stop(edge_id, 1000)
    assert cpo.received("CS-1", "MeterValues")[0]["transactionId"] == 90001
    assert cpo.received("CS-1", "StopTransaction")[0]["transactionId"] == 90001
    [event] = await served.events("StartTransaction")
    assert event["payload"]["transactionId"] == edge_id  # type: ignore[index]


async def test_remote_stop_from_upstream_reaches_the_station_with_the_edge_id(
    served: Served, proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    started = await proxied.start(1, "TAG1", 10)
    answer = await cpo.call("CS-1", "RemoteStopTransaction", {"transactionId": 90001})
    assert answer[0] == 3 and answer[2] == {"status": "Accepted"}
    assert proxied.received_calls[-1] == ("RemoteStopTransaction", {"transactionId": started["transactionId"]})


async def test_remote_stop_for_an_id_the_edge_never_mapped_is_rejected_by_the_edge(
    proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    await cpo.wait_connected("CS-1")
    answer = await cpo.call("CS-1", "RemoteStopTransaction", {"transactionId": 1})
    assert answer[2] == {"status": "Rejected"}
    assert proxied.received_calls == []


async def test_any_central_system_call_is_relayed(proxied: SimulatedStation, cpo: SimulatedCentralSystem) -> None:
    await cpo.wait_connected("CS-1")
    answer = await cpo.call("CS-1", "GetConfiguration", {})
    assert answer[2]["configurationKey"][0]["key"] == "HeartbeatInterval"


async def test_station_action_from_the_upstream_is_not_supported(
    proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    await cpo.wait_connected("CS-1")
    answer = await cpo.call("CS-1", "Heartbeat", {})
    assert answer[:3] == [4, answer[1], "NotSupported"]


async def test_upstream_call_error_is_relayed_as_it_came(
    proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    cpo.refuse.add("DataTransfer")
    with pytest.raises(Exception) as caught:
        await proxied.call("DataTransfer", {"vendorId": "acme"})
    assert getattr(caught.value, "code", None) == "InternalError"


async def test_upstream_refusing_a_start_still_gives_the_station_an_edge_id(
    served: Served, proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    cpo.refuse.add("StartTransaction")
    started = await proxied.start(1, "TAG1", 10)
    assert started["transactionId"] > 0
    assert await upstream_refused(served, started["transactionId"])
    assert await proxied.stop(started["transactionId"], 20) == {}
    assert cpo.received("CS-1", "StopTransaction") == []
    assert len(await served.events("StopTransaction")) == 1


async def test_upstream_transaction_id_0_is_an_id_like_any_other(
    served: Served, proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    cpo.next_transaction_id = itertools.count(0)
    started = await proxied.start(1, "TAG1", 10)
    assert started["idTagInfo"] == {"status": "Accepted"}
    assert await upstream_id_of(served, started["transactionId"]) == 0
    assert not await upstream_refused(served, started["transactionId"])
    answer = await cpo.call("CS-1", "RemoteStopTransaction", {"transactionId": 0})
    assert answer[2] == {"status": "Accepted"}
    assert proxied.received_calls[-1] == ("RemoteStopTransaction", {"transactionId": started["transactionId"]})
    await proxied.stop(started["transactionId"], 900)
    assert cpo.received("CS-1", "StopTransaction")[0]["transactionId"] == 0


async def test_start_whose_tag_the_upstream_does_not_accept_is_still_its_transaction_and_ends_there(
    served: Served, proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    cpo.tags["BAD"] = "Blocked"
    started = await proxied.start(1, "BAD", 10)
    assert started["idTagInfo"] == {"status": "Blocked"}
    assert not await upstream_refused(served, started["transactionId"])
    assert await proxied.stop(started["transactionId"], 20, reason="DeAuthorized") == {}
    async with served.context.store.transaction() as session:
        row = await session.get(EdgeTransaction, started["transactionId"])
    [stop] = cpo.received("CS-1", "StopTransaction")
    assert row is not None and row.upstream_id is not None
    assert (stop["transactionId"], stop["reason"]) == (row.upstream_id, "DeAuthorized")
    assert len(await served.events("StopTransaction")) == 1


@pytest.mark.both_stores(reason="the upstream's backlog is a queue in the store, replayed in order")
async def test_replayed_start_whose_tag_the_upstream_does_not_accept_is_followed_by_its_messages(
    served_manual: Served, upstream_down: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    served, clock, station = served_manual, manual_clock(served_manual), upstream_down
    cpo.tags["BAD"] = "Invalid"
    started = await station.start(1, "BAD", 10)
    await station.meter_values(1, started["transactionId"], 500)
    await station.stop(started["transactionId"], 1000)
    await come_back(cpo, clock)
    await replay_all(served, clock)
    assert not await upstream_refused(served, started["transactionId"])
    sent = [a for a, _ in cpo.calls["CS-1"] if a in ("StartTransaction", "MeterValues", "StopTransaction")]
    assert sent == ["StartTransaction", "MeterValues", "StopTransaction"]


@pytest.mark.both_stores(reason="the upstream's backlog is a queue in the store, replayed in order")
async def test_upstream_down_at_start_then_back_replays_in_order_with_mapped_ids(
    served: Served, cpo: SimulatedCentralSystem
) -> None:
    await served.point_site_at(cpo)
    await cpo.stop()
    station = served.station()
    await station.connect()
    assert (await station.boot())["status"] == "Accepted"
    assert "currentTime" in await station.heartbeat()
    started = await station.start(1, "TAG1", 10)
    edge_id = started["transactionId"]
    await station.meter_values(1, edge_id, 500)
    await station.stop(edge_id, 1000)
    assert await queued(served) == ["StartTransaction", "MeterValues", "StopTransaction"]
    assert len(await served.events("StartTransaction")) == 1
    await cpo.start()
    await cpo.wait_for("CS-1", "StopTransaction", within=40)
    await drained(served)
    actions = [a for a, _ in cpo.calls["CS-1"] if a in ("StartTransaction", "MeterValues", "StopTransaction")]
    assert actions == ["StartTransaction", "MeterValues", "StopTransaction"]
    assert cpo.received("CS-1", "StopTransaction")[0]["transactionId"] == 90001
    assert await upstream_id_of(served, edge_id) == 90001
    assert station.sent_errors == []
    await station.close()


@pytest.mark.both_stores(reason="the upstream's backlog is a queue in the store, replayed in order")
async def test_once_the_backlog_is_replayed_a_new_start_goes_straight_up(
    served_manual: Served, upstream_down: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    served, clock, station = served_manual, manual_clock(served_manual), upstream_down
    await charged_while_down(station)
    await come_back(cpo, clock)
    await replay_all(served, clock)
    answer = await station.start(2, "NEWTAG", 0)
    assert answer["idTagInfo"] == {"status": "Accepted"}  # the upstream's word; decided offline it would be Invalid
    assert cpo.received("CS-1", "StartTransaction")[-1]["idTag"] == "NEWTAG"
    assert await upstream_id_of(served, answer["transactionId"]) == 90002
    assert await queued(served) == []


@pytest.mark.both_stores(reason="the upstream's backlog is a queue in the store, replayed in order")
async def test_a_new_start_waits_behind_the_backlog_even_with_the_upstream_back(
    served_manual: Served, upstream_down: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    served, clock, station = served_manual, manual_clock(served_manual), upstream_down
    edge_id = await charged_while_down(station)
    await come_back(cpo, clock)
    await mapped(served, edge_id)  # the stop now waits out the replay throttle, which the clock holds
    await station.start(2, "NEWTAG", 0)
    assert await queued(served) == ["StopTransaction", "StartTransaction"]
    await replay_all(served, clock)
    sent = [(a, p.get("idTag")) for a, p in cpo.calls["CS-1"] if a in ("StartTransaction", "StopTransaction")]
    assert sent == [("StartTransaction", "TAG1"), ("StopTransaction", None), ("StartTransaction", "NEWTAG")]


@pytest.mark.both_stores(reason="the upstream's backlog is a queue in the store, replayed in order")
async def test_upstream_going_down_mid_transaction_queues_the_stop(
    served: Served, proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    started = await proxied.start(1, "TAG1", 10)
    await cpo.stop()
    assert await proxied.stop(started["transactionId"], 900) == {}
    assert await queued(served) == ["StopTransaction"]
    await cpo.start()
    [stop] = await cpo.wait_for("CS-1", "StopTransaction", within=40)
    assert stop["transactionId"] == 90001


async def test_slow_upstream_gets_the_start_once_and_its_late_answer_is_mapped(
    served_manual: Served, upstream_up: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    served, station = served_manual, upstream_up
    started = await answered_past_the_timeout(served, cpo, "StartTransaction", station.start(1, "TAG1", 10))
    assert started["transactionId"] > 0
    cpo.release("StartTransaction")
    assert await mapped(served, started["transactionId"]) == 90001
    assert await queued(served) == []
    assert len(cpo.received("CS-1", "StartTransaction")) == 1


async def test_slow_upstream_gets_the_stop_once(
    served_manual: Served, upstream_up: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    served, station = served_manual, upstream_up
    started = await station.start(1, "TAG1", 10)
    stopping = station.stop(started["transactionId"], 900)
    assert await answered_past_the_timeout(served, cpo, "StopTransaction", stopping) == {}
    cpo.release("StopTransaction")
    await drained(served)
    assert len(cpo.received("CS-1", "StopTransaction")) == 1


@pytest.mark.both_stores(reason="the upstream's backlog is a queue in the store, replayed in order")
async def test_replayed_start_answered_late_is_not_sent_again(
    served_manual: Served, upstream_down: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    served, clock, station = served_manual, manual_clock(served_manual), upstream_down
    started = await station.start(1, "TAG1", 10)
    cpo.hold.add("StartTransaction")
    await come_back(cpo, clock)
    await cpo.wait_for("CS-1", "StartTransaction")
    clock.advance(served.edge.upstream_timeout.total_seconds())
    await asyncio.sleep(0.05)  # the replay sees its timeout
    cpo.release("StartTransaction")
    assert await mapped(served, started["transactionId"]) == 90001
    assert len(cpo.received("CS-1", "StartTransaction")) == 1


@pytest.mark.both_stores(reason="the upstream's backlog is a queue in the store, replayed in order")
async def test_start_unanswered_when_the_upstream_link_drops_is_sent_again_after_it_returns(
    served_manual: Served, upstream_up: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    served, station = served_manual, upstream_up
    started = await answered_past_the_timeout(served, cpo, "StartTransaction", station.start(1, "TAG1", 10))
    await cpo.stop()
    cpo.release("StartTransaction")  # too late: the connection it came on is gone
    await come_back(cpo, manual_clock(served))
    await cpo.wait_for("CS-1", "StartTransaction", count=2)
    assert await mapped(served, started["transactionId"]) == 90002
    assert len(cpo.received("CS-1", "StartTransaction")) == 2


async def test_upstream_away_uses_the_cached_answer(
    served: Served, proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    await accepted_then_gone(served, proxied, cpo, "CARD")
    assert (await proxied.authorize("CARD"))["idTagInfo"]["status"] == "Accepted"
    assert (await proxied.authorize("NEVER-SEEN"))["idTagInfo"]["status"] == "Invalid"


async def test_cached_answer_without_an_expiry_date_is_given_without_one(
    served: Served, proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    await accepted_then_gone(served, proxied, cpo, "CARD")
    assert (await proxied.authorize("CARD"))["idTagInfo"] == {"status": "Accepted"}


async def test_the_edges_own_concurrent_tx_is_not_cached_as_the_upstreams_answer(
    served: Served, proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    started = await proxied.start(1, "CARD", 0)
    assert (await proxied.authorize("CARD"))["idTagInfo"]["status"] == "ConcurrentTx"
    await proxied.stop(started["transactionId"], 100)
    await cpo.stop()
    await upstream_gone(served)
    assert (await proxied.authorize("CARD"))["idTagInfo"] == {"status": "Accepted"}


@pytest.mark.parametrize(
    ("action", "payload", "answer"),
    [
        ("RemoteStartTransaction", {"connectorId": 1, "idTag": "TAG1"}, {"status": "Accepted"}),
        ("Reset", {"type": "Hard"}, {"status": "Accepted"}),
        ("UnlockConnector", {"connectorId": 1}, {"status": "Unlocked"}),
        ("ChangeAvailability", {"connectorId": 0, "type": "Inoperative"}, {"status": "Accepted"}),
        ("ChangeConfiguration", {"key": "HeartbeatInterval", "value": "60"}, {"status": "Accepted"}),
        ("ClearCache", {}, {"status": "Accepted"}),
        ("TriggerMessage", {"requestedMessage": "Heartbeat"}, {"status": "Accepted"}),
        (
            "SendLocalList",
            {"listVersion": 2, "updateType": "Full", "localAuthorizationList": []},
            {"status": "Accepted"},
        ),
        ("GetLocalListVersion", {}, {"listVersion": 0}),
        (
            "ReserveNow",
            {"connectorId": 1, "expiryDate": "2030-01-01T00:00:00Z", "idTag": "TAG1", "reservationId": 5},
            {"status": "Accepted"},
        ),
        ("CancelReservation", {"reservationId": 5}, {"status": "Accepted"}),
        ("DataTransfer", {"vendorId": "acme"}, {"status": "UnknownVendorId"}),
    ],
)
async def test_upstream_command_is_relayed_and_answered(
    proxied: SimulatedStation, cpo: SimulatedCentralSystem, action: str, payload: dict[str, object], answer: object
) -> None:
    await cpo.wait_connected("CS-1")
    frame = await cpo.call("CS-1", action, payload)
    assert frame[0] == 3 and frame[2] == answer
    assert proxied.received_calls == [(action, payload)]


async def test_station_call_error_reaches_the_upstream(proxied: SimulatedStation, cpo: SimulatedCentralSystem) -> None:
    del proxied.answers["Reset"]
    await cpo.wait_connected("CS-1")
    frame = await cpo.call("CS-1", "Reset", {"type": "Soft"})
    assert frame[0] == 4 and frame[2] == "NotSupported"


async def test_invalid_command_from_the_upstream_is_refused_before_the_station(
    proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    await cpo.wait_connected("CS-1")
    frame = await cpo.call("CS-1", "Reset", {"type": "Medium"})
    assert frame[0] == 4 and frame[2] == "PropertyConstraintViolation"
    assert proxied.received_calls == []


async def test_remote_start_on_connector_zero_from_the_upstream_is_refused_before_the_station(
    proxied: SimulatedStation, cpo: SimulatedCentralSystem
) -> None:
    await cpo.wait_connected("CS-1")
    frame = await cpo.call("CS-1", "RemoteStartTransaction", {"connectorId": 0, "idTag": "TAG1"})
    assert frame[0] == 4 and frame[2] == "PropertyConstraintViolation"
    assert proxied.received_calls == []


async def stored_upstream_state(served: Served, station_id: str = "CS-1") -> bool | None:
    """What the station's presence row says of its upstream link, once the message log wrote its batch."""
    await served.edge.message_log.run_once()
    async with served.context.store.transaction() as session:
        row = await session.get(StationPresence, station_id)
    assert row is not None
    return row.upstream_connected


@pytest.mark.both_stores(reason="the presence row is upserted by each store's own statement")
async def test_a_stations_upstream_link_going_down_is_stored_for_every_process_to_see(
    served: Served, cpo: SimulatedCentralSystem
) -> None:
    await served.point_site_at(cpo)
    station = served.station()
    await station.connect()
    await station.boot()  # forwarded once the upstream link's first attempt has settled
    assert await stored_upstream_state(served) is True
    await cpo.stop()
    await upstream_gone(served)
    assert await stored_upstream_state(served) is False
    await station.close()


async def test_a_station_whose_site_has_no_upstream_has_no_link_to_be_down(served: Served) -> None:
    station = served.station()
    await station.connect()
    await station.boot()
    assert served.edge.is_connected("CS-1")
    assert await stored_upstream_state(served) is None
    await station.close()
