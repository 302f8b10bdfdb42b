"""Commands to an OCPP 2.0.1 station over the API (decisions.md §5 "Commands across generations"), received and
answered by an independent peer: the `ocpp` package's own v201 `ChargePoint` over real WebSockets, on SQLite and
on PostgreSQL. The API's bodies stay as they are; the station gets 2.0.1's messages and the API shows its answers.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from ocpp.charge_point import snake_to_camel_case
from ocpp.routing import on
from ocpp.v201 import ChargePoint, call, call_result

from chargenet.store.models import LocalAuthEntry
from tests.factories import partner_token
from tests.integration.edge.conftest import Served
from tests.integration.edge.test_ocpp201 import T0, at, energy, station_201

TOKEN = "EMA-NL-TNM-012345678-9ABCDEF0123"  # over 1.6's 20 characters, within 2.0.1's 36


class Answering(ChargePoint):
    """A 2.0.1 station that accepts every command and keeps what it was sent, in the payload's own words."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.received: list[tuple[str, dict[str, Any]]] = []

    def _got(self, action: str, **payload: Any) -> None:
        self.received.append((action, snake_to_camel_case(payload)))  # as it came over the wire

    @on("RequestStartTransaction")
    def request_start(self, **payload: Any) -> call_result.RequestStartTransaction:
        self._got("RequestStartTransaction", **payload)
        return call_result.RequestStartTransaction(status="Accepted")

    @on("RequestStopTransaction")
    def request_stop(self, **payload: Any) -> call_result.RequestStopTransaction:
        self._got("RequestStopTransaction", **payload)
        return call_result.RequestStopTransaction(status="Accepted")

    @on("Reset")
    def reset(self, **payload: Any) -> call_result.Reset:
        self._got("Reset", **payload)
        return call_result.Reset(status="Scheduled")

    @on("UnlockConnector")
    def unlock(self, **payload: Any) -> call_result.UnlockConnector:
        self._got("UnlockConnector", **payload)
        return call_result.UnlockConnector(status="Unlocked")

    @on("ChangeAvailability")
    def availability(self, **payload: Any) -> call_result.ChangeAvailability:
        self._got("ChangeAvailability", **payload)
        return call_result.ChangeAvailability(status="Accepted")

    @on("TriggerMessage")
    def trigger(self, **payload: Any) -> call_result.TriggerMessage:
        self._got("TriggerMessage", **payload)
        return call_result.TriggerMessage(status="Accepted")

    @on("GetVariables")
    def get_variables(self, **payload: Any) -> call_result.GetVariables:
        self._got("GetVariables", **payload)
        results = [
            {"attribute_status": "Accepted", "attribute_value": "300", **item} for item in payload["get_variable_data"]
        ]
        return call_result.GetVariables(get_variable_result=results)

    @on("SetVariables")
    def set_variables(self, **payload: Any) -> call_result.SetVariables:
        self._got("SetVariables", **payload)
        results = [
            {"attribute_status": "RebootRequired", "component": item["component"], "variable": item["variable"]}
            for item in payload["set_variable_data"]
        ]
        return call_result.SetVariables(set_variable_result=results)

    @on("GetBaseReport")
    def base_report(self, **payload: Any) -> call_result.GetBaseReport:
        self._got("GetBaseReport", **payload)
        return call_result.GetBaseReport(status="Accepted")

    @on("SendLocalList")
    def send_local_list(self, **payload: Any) -> call_result.SendLocalList:
        self._got("SendLocalList", **payload)
        return call_result.SendLocalList(status="Accepted")

    @on("GetLocalListVersion")
    def local_list_version(self, **payload: Any) -> call_result.GetLocalListVersion:
        self._got("GetLocalListVersion", **payload)
        return call_result.GetLocalListVersion(version_number=3)

    @on("ClearCache")
    def clear_cache(self, **payload: Any) -> call_result.ClearCache:
        self._got("ClearCache", **payload)
        return call_result.ClearCache(status="Accepted")

    @on("ReserveNow")
    def reserve(self, **payload: Any) -> call_result.ReserveNow:
        self._got("ReserveNow", **payload)
        return call_result.ReserveNow(status="Accepted")

    @on("CancelReservation")
    def cancel_reservation(self, **payload: Any) -> call_result.CancelReservation:
        self._got("CancelReservation", **payload)
        return call_result.CancelReservation(status="Accepted")

    @on("DataTransfer")
    def data_transfer(self, **payload: Any) -> call_result.DataTransfer:
        self._got("DataTransfer", **payload)
        return call_result.DataTransfer(status="Accepted", data={"kWh": 12})


def report_item(component: str, variable: str, value: str) -> dict[str, Any]:
    return {
        "component": {"name": component},
        "variable": {"name": variable},
        "variableAttribute": [{"type": "Actual", "value": value, "mutability": "ReadWrite"}],
        "variableCharacteristics": {"dataType": "integer", "supportsMonitoring": False},
    }


async def test_the_apis_commands_reach_a_2_0_1_station_in_its_own_words(served: Served) -> None:
    async with served.context.store.transaction() as session:
        site = served.tenant.site_id
        session.add(LocalAuthEntry(site_id=site, id_tag="CARD-1", status="Accepted", created_at=T0))
        session.add(LocalAuthEntry(site_id=site, id_tag=TOKEN, id_token_type="eMAID", status="Accepted", created_at=T0))
    reader = await partner_token(served.context, served.tenant.company_id, ["charge-points:read"])
    api = httpx.AsyncClient(
        base_url=f"{served.http_url}/api/v1", headers={"Authorization": f"Bearer {served.token}"}, timeout=10
    )
    async with api, station_201(served, kind=Answering) as (point, _):
        await point.call(call.BootNotification(charging_station={"vendorName": "V", "model": "M"}, reason="PowerUp"))
        await served.edge.message_log.run_once()  # the store shows it connected over 2.0.1 now

        # A session: RequestStartTransaction with a fresh remoteStartId, and the start naming it links the request.
        body = {"chargePointId": "CS-1", "connectorId": 2, "idTag": TOKEN, "idTokenType": "eMAID"}
        requested = await api.post("/sessions", json=body)
        assert requested.status_code == 202 and requested.json()["status"] == "Accepted"
        [(action, start)] = point.received
        remote_start_id = start["remoteStartId"]
        assert (action, start["idToken"], start["evseId"]) == (
            "RequestStartTransaction",
            {"idToken": TOKEN, "type": "eMAID"},
            1,
        )
        await point.call(
            call.TransactionEvent(
                event_type="Started",
                timestamp=at(1),
                trigger_reason="RemoteStart",
                seq_no=0,
                transaction_info={"transactionId": "TX-R", "remoteStartId": remote_start_id},
                evse={"id": 1, "connectorId": 2},
                id_token={"idToken": TOKEN, "type": "eMAID"},
                meter_value=energy(1000, "Transaction.Begin", 1),
            )
        )
        [started] = await served.events("StartTransaction")
        request_id = requested.json()["requestId"]
        assert started["payload"]["requestId"] == request_id
        transaction_id = started["payload"]["transactionId"]
        followed = (await api.get(f"/sessions/requests/{request_id}")).json()
        assert followed["transactionId"] == transaction_id

        stopped = await api.post(f"/sessions/{transaction_id}/stop")
        assert (stopped.status_code, stopped.json()) == (202, {"status": "Accepted"})

        async def answered(method: str, path: str, body: Any = None) -> tuple[int, Any]:
            response = await api.request(method, path, json=body)
            return response.status_code, response.json()

        assert await answered("POST", "/charge-points/CS-1/reset", {"type": "Hard"}) == (200, {"status": "Scheduled"})
        unlock = await answered("POST", "/charge-points/CS-1/unlock", {"connectorId": 2})
        assert unlock == (200, {"status": "Unlocked"})
        availability = {"connectorId": 0, "type": "Inoperative"}
        assert await answered("POST", "/charge-points/CS-1/availability", availability) == (200, {"status": "Accepted"})
        trigger = {"requestedMessage": "StatusNotification", "connectorId": 1}
        assert await answered("POST", "/charge-points/CS-1/trigger", trigger) == (200, {"status": "Accepted"})
        only_16 = await answered(
            "POST", "/stations/CS-1/trigger", {"requestedMessage": "DiagnosticsStatusNotification"}
        )
        assert only_16[0] == 422
        assert (await answered("POST", "/stations/CS-1/get-configuration", {}))[0] == 422  # variables instead

        variable = {"component": "OCPPCommCtrlr", "variable": "HeartbeatInterval"}
        status, got = await answered("POST", "/stations/CS-1/get-variables", {"variables": [variable]})
        assert status == 200 and got["getVariableResult"][0]["attributeValue"] == "300"
        status, changed = await answered(
            "POST", "/stations/CS-1/set-variables", {"variables": [{**variable, "value": "60"}]}
        )
        assert status == 200 and changed["setVariableResult"][0]["attributeStatus"] == "RebootRequired"

        status, report = await answered("POST", "/stations/CS-1/get-base-report", {"reportBase": "FullInventory"})
        assert status == 200 and report["status"] == "Accepted"
        parts = [
            (0, True, [report_item("OCPPCommCtrlr", "HeartbeatInterval", "60")]),
            (1, False, [report_item("EVSE", "Power", "22000")]),
        ]
        for seq_no, tbc, data in parts:
            notify = call.NotifyReport(
                request_id=report["requestId"], generated_at=at(2), seq_no=seq_no, tbc=tbc, report_data=data
            )
            await point.call(notify)

        assert await answered("POST", "/stations/CS-1/send-local-list", {"listVersion": 4}) == (
            200,
            {"status": "Accepted"},
        )
        assert await answered("POST", "/stations/CS-1/local-list-version") == (200, {"listVersion": 3})
        assert await answered("POST", "/stations/CS-1/clear-cache") == (200, {"status": "Accepted"})
        expiry = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
        reservation = {"connectorId": 1, "idTag": TOKEN, "expiryDate": expiry, "reservationId": 5}
        assert await answered("POST", "/stations/CS-1/reserve", reservation) == (200, {"status": "Accepted"})
        cancel = await answered("POST", "/stations/CS-1/cancel-reservation", {"reservationId": 5})
        assert cancel == (200, {"status": "Accepted"})
        transfer = await answered("POST", "/stations/CS-1/data-transfer", {"vendorId": "com.example", "data": "x"})
        assert transfer == (200, {"status": "Accepted", "data": {"kWh": 12}})

        shown = await api.get("/stations/CS-1/device-model-report", headers={"Authorization": f"Bearer {reader}"})
        assert shown.status_code == 200
        model = shown.json()
        assert (model["requestId"], model["complete"], model["parts"]) == (report["requestId"], True, 2)
        assert [(v["component"], v["variable"], v["values"]) for v in model["variables"]] == [
            ("OCPPCommCtrlr", "HeartbeatInterval", {"Actual": "60"}),
            ("EVSE", "Power", {"Actual": "22000"}),
        ]

        # On a site with an upstream, that system owns the variables; a reset stays the operator's.
        await served.set_upstream("ws://127.0.0.1:9/nobody")
        owned = await answered("POST", "/stations/CS-1/get-variables", {"variables": [variable]})
        assert owned[0] == 409
        assert await answered("POST", "/stations/CS-1/reset", {"type": "Soft"}) == (200, {"status": "Scheduled"})

    sent = dict(point.received[1:])
    assert sent["RequestStopTransaction"] == {"transactionId": "TX-R"}
    resets = [payload for action, payload in point.received if action == "Reset"]
    assert resets == [{"type": "Immediate"}, {"type": "OnIdle"}]
    assert sent["UnlockConnector"] == {"evseId": 1, "connectorId": 2}
    assert sent["ChangeAvailability"] == {"operationalStatus": "Inoperative", "evse": {"id": 1}}
    assert sent["TriggerMessage"] == {"requestedMessage": "StatusNotification", "evse": {"id": 1, "connectorId": 1}}
    heartbeat = {"component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}}
    assert sent["GetVariables"] == {"getVariableData": [heartbeat]}
    assert sent["SetVariables"] == {"setVariableData": [{**heartbeat, "attributeValue": "60"}]}
    assert sent["GetBaseReport"] == {"requestId": report["requestId"], "reportBase": "FullInventory"}
    assert sent["SendLocalList"] == {
        "versionNumber": 4,
        "updateType": "Full",
        "localAuthorizationList": [
            {"idToken": {"idToken": "CARD-1", "type": "ISO14443"}, "idTokenInfo": {"status": "Accepted"}},
            {"idToken": {"idToken": TOKEN, "type": "eMAID"}, "idTokenInfo": {"status": "Accepted"}},
        ],
    }
    reserved = sent["ReserveNow"]
    assert (reserved["id"], reserved["evseId"], reserved["idToken"]) == (
        5,
        1,
        {"idToken": TOKEN, "type": "ISO14443"},
    )
    assert sent["CancelReservation"] == {"reservationId": 5}
    assert sent["DataTransfer"] == {"vendorId": "com.example", "data": "x"}
