"""A 2.0.1 station proxied to a 2.0.1 upstream, both written by someone else: the `ocpp` package's v201
`ChargePoint` as the station, and as the upstream's CSMS, served with `websockets`, all over real WebSockets, on
SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ocpp.routing import on
from ocpp.v201 import ChargePoint, call, call_result
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from chargenet.edge.core.authorize import UpstreamState
from tests.integration.edge.conftest import Served, manual_clock
from tests.integration.edge.test_ocpp201 import TOKEN, at, basic, energy, station_201, transaction_event
from tests.integration.edge.test_upstream import queued, replay_all, settle

UPSTREAM_PASSWORD = "upstream-secret-201"


class Csms(ChargePoint):
    """The upstream's side of one station's link: it answers as a CSMS and notes what it was sent."""

    def __init__(self, station_id: str, connection: ServerConnection, upstream: Upstream201) -> None:
        super().__init__(station_id, connection)
        self.upstream = upstream

    @on("BootNotification")
    async def on_boot(self, **_: Any) -> call_result.BootNotification:
        self.upstream.received.append(("BootNotification", None))
        return call_result.BootNotification(current_time=at(0), interval=77, status="Accepted")

    @on("StatusNotification")
    async def on_status(self, **_: Any) -> call_result.StatusNotification:
        self.upstream.received.append(("StatusNotification", None))
        return call_result.StatusNotification()

    @on("Authorize")
    async def on_authorize(self, id_token: dict[str, str], **_: Any) -> call_result.Authorize:
        self.upstream.received.append(("Authorize", id_token["id_token"]))
        return call_result.Authorize(id_token_info={"status": "Accepted"})

    @on("TransactionEvent")
    async def on_transaction_event(self, event_type: str, seq_no: int, **fields: Any) -> call_result.TransactionEvent:
        self.upstream.received.append(("TransactionEvent", (event_type, seq_no)))
        info = {"status": "Accepted"} if "id_token" in fields else None
        return call_result.TransactionEvent(id_token_info=info)


@dataclass
class Upstream201:
    """A CSMS that takes 2.0.1 and Basic auth, on a port that stays the same across `stop` and `start`."""

    port: int = 0
    received: list[tuple[str, Any]] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)
    points: dict[str, Csms] = field(default_factory=dict)
    point_kind: type[Csms] = Csms  # what answers each station's link
    _server: Server | None = None

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/csms"

    def sent(self, action: str) -> list[Any]:
        return [what for name, what in self.received if name == action]

    async def start(self) -> None:
        self._server = await serve(self._handle, "127.0.0.1", self.port, subprotocols=[Subprotocol("ocpp2.0.1")])
        self.port = next(iter(self._server.sockets)).getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        self.points.clear()

    async def _handle(self, connection: ServerConnection) -> None:
        assert connection.request is not None
        station_id = connection.request.path.rsplit("/", 1)[-1]
        self.authorizations.append(connection.request.headers.get("Authorization"))
        point = self.point_kind(station_id, connection, self)
        self.points[station_id] = point
        try:
            await point.start()
        except ConnectionClosed:
            pass
        finally:
            if self.points.get(station_id) is point:
                del self.points[station_id]


class Station(ChargePoint):
    """The station, answering what its central system asks of it."""

    remote_starts: list[int]

    @on("GetVariables")
    async def on_get_variables(self, get_variable_data: list[dict[str, Any]]) -> call_result.GetVariables:
        asked = get_variable_data[0]
        result = {
            "attributeStatus": "Accepted",
            "attributeValue": "77",
            "component": {"name": asked["component"]["name"]},
            "variable": {"name": asked["variable"]["name"]},
        }
        return call_result.GetVariables(get_variable_result=[result])

    @on("RequestStartTransaction")
    async def on_request_start(self, remote_start_id: int, **_: Any) -> call_result.RequestStartTransaction:
        self.remote_starts = [*getattr(self, "remote_starts", []), remote_start_id]
        return call_result.RequestStartTransaction(status="Accepted")


async def test_a_2_0_1_station_is_proxied_to_a_2_0_1_upstream_that_goes_away_and_comes_back(
    served_manual: Served,
) -> None:
    served, clock = served_manual, manual_clock(served_manual)
    upstream = Upstream201()
    await upstream.start()
    await served.set_upstream(upstream.url, UPSTREAM_PASSWORD, ocpp_versions=["ocpp1.6", "ocpp2.0.1"])
    try:
        async with station_201(served, kind=Station) as (point, _):
            await settle(lambda: _true(bool(upstream.points)))  # opened before the boot goes up
            assert upstream.authorizations == [basic("CS-1", UPSTREAM_PASSWORD)["Authorization"]]

            # Connected: the edge does its part, the upstream answers.
            boot = await point.call(
                call.BootNotification(charging_station={"model": "M", "vendorName": "V"}, reason="PowerUp")
            )
            assert boot.interval == 77  # the upstream's, not the edge's 300
            status = {"timestamp": at(0), "evse_id": 1, "connector_id": 1}
            await point.call(call.StatusNotification(connector_status="Occupied", **status))
            assert (await point.call(call.Authorize(id_token=TOKEN))).id_token_info["status"] == "Accepted"
            started = await transaction_event(
                point,
                "Started",
                0,
                trigger_reason="Authorized",
                evse={"id": 1, "connectorId": 1},
                id_token=TOKEN,
                meter_value=energy(1000, "Transaction.Begin", 0),
                info={"chargingState": "Charging"},
            )
            assert started.id_token_info["status"] == "Accepted"
            await transaction_event(point, "Updated", 1, meter_value=energy(1500, "Sample.Periodic", 1))

            # The upstream's CALLs reach the station, and its answers the upstream.
            csms = upstream.points["CS-1"]
            got = await csms.call(
                call.GetVariables(
                    get_variable_data=[
                        {"component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}}
                    ]
                )
            )
            assert got.get_variable_result[0]["attribute_value"] == "77"
            asked = await csms.call(call.RequestStartTransaction(id_token=TOKEN, remote_start_id=42, evse_id=2))
            assert asked.status == "Accepted" and point.remote_starts == [42]

            # Away: the station keeps charging, answered by the edge; its TransactionEvents wait in order.
            await upstream.stop()
            await settle(lambda: _true(served.edge._links["CS-1"].upstream_state is UpstreamState.AWAY))
            await transaction_event(point, "Updated", 2, meter_value=energy(2000, "Sample.Periodic", 2))
            offline = await point.call(call.Authorize(id_token=TOKEN))
            # The upstream's Accepted, cached, with the edge's own judgement of the token's running transaction.
            assert offline.id_token_info["status"] == "ConcurrentTx"
            await transaction_event(point, "Updated", 3, meter_value=energy(2500, "Sample.Periodic", 3))
            await transaction_event(
                point,
                "Ended",
                4,
                trigger_reason="StopAuthorized",
                meter_value=energy(3000, "Transaction.End", 4),
                info={"stoppedReason": "Local"},
            )
            assert await queued(served) == ["TransactionEvent"] * 3

            # Back: the queue is replayed in order, nothing twice.
            await upstream.start()
            async with asyncio.timeout(10):
                while "CS-1" not in upstream.points:
                    clock.advance(0.5)
                    await asyncio.sleep(0.02)
            await replay_all(served, clock)
            assert upstream.sent("TransactionEvent") == [
                ("Started", 0),
                ("Updated", 1),
                ("Updated", 2),
                ("Updated", 3),
                ("Ended", 4),
            ]
            assert upstream.sent("Authorize") == [TOKEN["idToken"]]  # the offline one was the edge's
            assert upstream.sent("BootNotification") == [None] and upstream.sent("StatusNotification") == [None]
    finally:
        await upstream.stop()

    # Partners get what a 1.6 station's charge raises.
    [start] = await served.events("StartTransaction")
    [stop] = await served.events("StopTransaction")
    assert (start["payload"]["meterStart"], stop["payload"]["meterStop"]) == (1.0, 3.0)  # kWh
    authorized = [event["payload"]["status"] for event in await served.events("Authorize")]
    assert authorized == ["Accepted", "Accepted", "ConcurrentTx"]


async def _true(value: bool) -> bool:
    return value
