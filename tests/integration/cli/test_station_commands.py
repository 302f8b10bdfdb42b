"""`chargenet admin station reset|unlock|...` against a running chargenet with a simulated station connected.

The CLI runs as it does for an operator: its own store connection, no station of its own; the command reaches
the station through the server that holds it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from ocpp.v201 import call

from chargenet.cli.main import main
from chargenet.services import localauth
from chargenet.services.callers import OPERATOR
from chargenet.simulators.station import AnswerWithError, SimulatedStation
from tests.integration.edge.conftest import Served
from tests.integration.edge.test_ocpp201 import station_201
from tests.integration.edge.test_ocpp201_commands import Answering

pytestmark = pytest.mark.sqlite_only(reason="the command line's messages and exit codes; the relay has its own tests")


async def connected(served: Served, station_id: str = "CS-1") -> SimulatedStation:
    station = served.station(station_id)
    await station.connect()
    await station.boot()
    await served.edge.message_log.run_once()  # the store shows it connected now, not within the next second
    return station


@pytest.fixture
async def station(served: Served) -> AsyncIterator[SimulatedStation]:
    simulated = await connected(served)
    yield simulated
    await simulated.close()


async def test_reset_reaches_the_station_through_the_server_and_prints_its_answer(cli, station) -> None:  # type: ignore[no-untyped-def]
    result = await cli("admin", "station", "reset", "CS-1", "--type", "Hard", "--json")
    assert (result.code, result.json()) == (0, {"status": "Accepted"})
    assert station.received_calls == [("Reset", {"type": "Hard"})]


async def test_reset_prints_a_line_for_people_without_json(cli, station) -> None:  # type: ignore[no-untyped-def]
    result = await cli("admin", "station", "reset", "CS-1")
    assert result.out.strip() == "CS-1 answered Reset: Accepted"


async def test_unlock_names_the_connector(cli, station) -> None:  # type: ignore[no-untyped-def]
    result = await cli("admin", "station", "unlock", "CS-1", "--connector", "2", "--json")
    assert result.json() == {"status": "Unlocked"}
    assert station.received_calls == [("UnlockConnector", {"connectorId": 2})]


async def test_unlock_on_a_charge_point_among_several_names_its_ocpp_connector(cli, duo) -> None:  # type: ignore[no-untyped-def]
    await cli("admin", "station", "unlock", "DUO", "--charge-point", "DUO-2", "--connector", "1", "--json")
    assert duo.received_calls == [("UnlockConnector", {"connectorId": 3})]


async def test_unlock_on_a_station_with_several_charge_points_needs_one_named_exit_5(cli, duo) -> None:  # type: ignore[no-untyped-def]
    result = await cli("admin", "station", "unlock", "DUO", "--connector", "1")
    assert result.code == 5 and "DUO-1, DUO-2" in result.err
    assert duo.received_calls == []


async def test_availability_of_the_station_itself_is_connector_zero(cli, duo) -> None:  # type: ignore[no-untyped-def]
    result = await cli("admin", "station", "availability", "DUO", "--type", "Inoperative", "--json")
    assert result.json() == {"status": "Accepted"}
    assert duo.received_calls == [("ChangeAvailability", {"connectorId": 0, "type": "Inoperative"})]


async def test_availability_of_a_charge_point_goes_to_each_of_its_connectors(cli, duo) -> None:  # type: ignore[no-untyped-def]
    result = await cli(
        "admin", "station", "availability", "DUO", "--charge-point", "DUO-2", "--type", "Operative", "--json"
    )
    assert result.json()["status"] == "Accepted" and len(result.json()["connectors"]) == 2
    assert duo.received_calls == [
        ("ChangeAvailability", {"connectorId": 3, "type": "Operative"}),
        ("ChangeAvailability", {"connectorId": 4, "type": "Operative"}),
    ]


async def test_trigger_with_a_connector_names_it(cli, station) -> None:  # type: ignore[no-untyped-def]
    result = await cli(
        "admin", "station", "trigger", "CS-1", "--message", "StatusNotification", "--connector", "1", "--json"
    )
    assert result.json() == {"status": "Accepted"}
    assert station.received_calls == [("TriggerMessage", {"requestedMessage": "StatusNotification", "connectorId": 1})]


async def test_get_configuration_prints_the_stations_keys(cli, station) -> None:  # type: ignore[no-untyped-def]
    result = await cli("admin", "station", "get-configuration", "CS-1", "--key", "HeartbeatInterval", "--json")
    assert result.json() == {"configurationKey": [{"key": "HeartbeatInterval", "readonly": False, "value": "300"}]}
    assert station.received_calls == [("GetConfiguration", {"key": ["HeartbeatInterval"]})]
    people = await cli("admin", "station", "get-configuration", "CS-1")
    assert "HeartbeatInterval  300" in people.out


RESERVE = [
    "reserve",
    "--connector",
    "2",
    "--id-tag",
    "TAG1",
    "--expires",
    "2030-01-01T10:00:00+00:00",
    "--reservation-id",
    "7",
]


@pytest.mark.parametrize(
    ("argv", "sent"),
    [
        (
            ["change-configuration", "--key", "MeterValueSampleInterval", "--value", "60"],
            ("ChangeConfiguration", {"key": "MeterValueSampleInterval", "value": "60"}),
        ),
        (["clear-cache"], ("ClearCache", {})),
        (["local-list-version"], ("GetLocalListVersion", {})),
        (
            RESERVE,
            (
                "ReserveNow",
                {"connectorId": 2, "expiryDate": "2030-01-01T10:00:00.000Z", "idTag": "TAG1", "reservationId": 7},
            ),
        ),
        (["cancel-reservation", "--reservation-id", "7"], ("CancelReservation", {"reservationId": 7})),
        (
            ["data-transfer", "--vendor-id", "acme", "--message-id", "ping", "--data", "x"],
            ("DataTransfer", {"vendorId": "acme", "messageId": "ping", "data": "x"}),
        ),
    ],
)
async def test_central_system_command_reaches_the_station_as_given(  # type: ignore[no-untyped-def]
    cli,
    station,
    argv: list[str],
    sent: tuple[str, dict[str, Any]],
) -> None:
    result = await cli("admin", "station", argv[0], "CS-1", *argv[1:], "--json")
    assert result.code == 0, result.err
    assert station.received_calls == [sent]


async def test_send_local_list_sends_the_sites_whole_list(cli, served, station) -> None:  # type: ignore[no-untyped-def]
    now = served.context.clock.now()
    async with served.context.store.transaction() as session:
        await localauth.add_entry(session, OPERATOR, site_id=served.tenant.site_id, id_tag="A", now=now)
        await localauth.add_entry(
            session, OPERATOR, site_id=served.tenant.site_id, id_tag="B", now=now, status="Blocked"
        )
    result = await cli("admin", "station", "send-local-list", "CS-1", "--list-version", "3", "--json")
    assert result.json() == {"status": "Accepted"}
    assert station.received_calls == [
        (
            "SendLocalList",
            {
                "listVersion": 3,
                "updateType": "Full",
                "localAuthorizationList": [
                    {"idTag": "A", "idTagInfo": {"status": "Accepted"}},
                    {"idTag": "B", "idTagInfo": {"status": "Blocked"}},
                ],
            },
        )
    ]


async def test_send_local_list_as_a_difference_says_so_to_the_station(cli, station) -> None:  # type: ignore[no-untyped-def]
    result = await cli(
        "admin", "station", "send-local-list", "CS-1", "--list-version", "4", "--update-type", "Differential", "--json"
    )  # fmt: skip
    assert result.json() == {"status": "Accepted"}
    assert station.received_calls == [
        ("SendLocalList", {"listVersion": 4, "updateType": "Differential", "localAuthorizationList": []})
    ]


async def test_reservation_of_connector_zero_is_bad_input_exit_2(cli, station) -> None:  # type: ignore[no-untyped-def]
    result = await cli(
        "admin", "station", "reserve", "CS-1", "--connector", "0", "--id-tag", "TAG1",
        "--expires", "2030-01-01T10:00:00+00:00", "--reservation-id", "7",
    )  # fmt: skip
    assert result.code == 2 and "connector" in result.err
    assert station.received_calls == []


async def test_value_ocpp_refuses_is_bad_input_exit_2_naming_the_field(cli, station) -> None:  # type: ignore[no-untyped-def]
    result = await cli("admin", "station", "change-configuration", "CS-1", "--key", "K" * 51, "--value", "1")
    assert result.code == 2 and "key" in result.err
    assert station.received_calls == []


async def test_central_system_command_on_a_site_with_an_upstream_is_a_conflict_exit_5(cli, served) -> None:  # type: ignore[no-untyped-def]
    await served.set_upstream("ws://127.0.0.1:9/ocpp")
    result = await cli("admin", "station", "clear-cache", "CS-1")
    assert result.code == 5 and "upstream" in result.err


async def test_station_not_connected_exits_1_saying_no_server_holds_it(cli, served) -> None:  # type: ignore[no-untyped-def]
    result = await cli("admin", "station", "reset", "CS-1")
    assert result.code == 1
    assert "not connected" in result.err and "chargenet serve" in result.err


async def test_unknown_station_is_not_found_exit_4(cli, served) -> None:  # type: ignore[no-untyped-def]
    assert (await cli("admin", "station", "reset", "NOPE")).code == 4


async def test_station_answering_with_a_call_error_exits_1_with_its_code(cli, station) -> None:  # type: ignore[no-untyped-def]
    def refuse(_: object) -> dict[str, str]:
        raise AnswerWithError("NotSupported", "no hard reset here")

    station.answers["Reset"] = refuse
    result = await cli("admin", "station", "reset", "CS-1", "--type", "Hard")
    assert result.code == 1
    assert "NotSupported" in result.err and "no hard reset here" in result.err


async def test_station_rejecting_a_command_is_its_answer_exit_0(cli, station) -> None:  # type: ignore[no-untyped-def]
    station.answers["Reset"] = lambda _: {"status": "Rejected"}
    result = await cli("admin", "station", "reset", "CS-1", "--json")
    assert (result.code, result.json()) == (0, {"status": "Rejected"})


async def test_a_configuration_value_can_come_from_a_file_instead_of_the_process_list(  # type: ignore[no-untyped-def]
    cli,
    station,
    tmp_path,
) -> None:
    secret = tmp_path / "key"
    secret.write_text("new-authorization-key\n")
    result = await cli(
        "admin", "station", "change-configuration", "CS-1", "--key", "AuthorizationKey", "--value-file", str(secret)
    )
    assert result.code == 0, result.err
    assert station.received_calls == [
        ("ChangeConfiguration", {"key": "AuthorizationKey", "value": "new-authorization-key"})
    ]


def test_a_configuration_change_without_a_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["admin", "station", "change-configuration", "CS-1", "--key", "HeartbeatInterval"])
    assert exited.value.code == 2
    assert "one of the arguments --value --value-stdin --value-file is required" in capsys.readouterr().err


async def test_the_station_commands_reach_a_2_0_1_station_in_its_words(cli, served) -> None:  # type: ignore[no-untyped-def]
    async with station_201(served, kind=Answering) as (point, _):
        await point.call(call.BootNotification(charging_station={"vendorName": "V", "model": "M"}, reason="PowerUp"))
        await served.edge.message_log.run_once()  # the store shows it connected over 2.0.1 now
        reset = await cli("admin", "station", "reset", "CS-1", "--type", "Hard", "--json")
        assert (reset.code, reset.json()) == (0, {"status": "Scheduled"})
        variables = await cli(
            "admin", "station", "get-variables", "CS-1", "--variable", "OCPPCommCtrlr.HeartbeatInterval"
        )
        assert variables.code == 0 and "OCPPCommCtrlr" in variables.out
        configuration = await cli("admin", "station", "get-configuration", "CS-1")
        assert configuration.code == 2  # 2.0.1 has variables instead
    heartbeat = {"component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}}
    assert point.received == [("Reset", {"type": "Immediate"}), ("GetVariables", {"getVariableData": [heartbeat]})]
