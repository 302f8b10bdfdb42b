"""The API's command bodies in OCPP 2.0.1's words (decisions.md §5 "Commands across generations"; the table in
docs/edge.md): each rewritten body is what the 2.0.1 schema takes, and what 2.0.1 cannot be asked is 422."""

from __future__ import annotations

from typing import get_args

import pytest

from chargenet.domain.tenants import ConnectorAddress, StationLayout
from chargenet.domain.triggers import MessageTrigger
from chargenet.edge.ocpp16.frames import Payload
from chargenet.edge.ocpp201 import commands, frames
from chargenet.edge.ocpp201.commands import Command, Evse, VariableRef
from chargenet.errors import InvalidInput

CONNECTOR_2 = Evse(1, 2)
WHOLE_EVSE_2 = Evse(2)


def sent(command: Command) -> tuple[str, Payload]:
    """The command as the station gets it, checked against its 2.0.1 schema first."""
    frames.build_call("id", command.action, command.payload)
    return command.action, command.payload


@pytest.mark.parametrize(
    ("action", "body", "evse", "expected"),
    [
        ("Reset", {"type": "Soft"}, None, ("Reset", {"type": "OnIdle"})),
        ("Reset", {"type": "Hard"}, CONNECTOR_2, ("Reset", {"type": "Immediate"})),  # a 1.6 reset is the station's
        ("UnlockConnector", {"connectorId": 2}, CONNECTOR_2, ("UnlockConnector", {"evseId": 1, "connectorId": 2})),
        (
            "ChangeAvailability",
            {"connectorId": 0, "type": "Inoperative"},
            None,
            ("ChangeAvailability", {"operationalStatus": "Inoperative"}),
        ),
        (
            "ChangeAvailability",
            {"connectorId": 0, "type": "Operative"},
            WHOLE_EVSE_2,
            ("ChangeAvailability", {"operationalStatus": "Operative", "evse": {"id": 2}}),
        ),
        (
            "ChangeAvailability",
            {"connectorId": 2, "type": "Operative"},
            CONNECTOR_2,
            ("ChangeAvailability", {"operationalStatus": "Operative", "evse": {"id": 1, "connectorId": 2}}),
        ),
        (
            "TriggerMessage",
            {"requestedMessage": "StatusNotification", "connectorId": 2},
            CONNECTOR_2,
            ("TriggerMessage", {"requestedMessage": "StatusNotification", "evse": {"id": 1, "connectorId": 2}}),
        ),
        (
            "TriggerMessage",
            {"requestedMessage": "Heartbeat"},
            None,
            ("TriggerMessage", {"requestedMessage": "Heartbeat"}),
        ),
        ("ClearCache", {}, None, ("ClearCache", {})),
        ("GetLocalListVersion", {}, None, ("GetLocalListVersion", {})),
        ("CancelReservation", {"reservationId": 5}, None, ("CancelReservation", {"reservationId": 5})),
        ("DataTransfer", {"vendorId": "v", "data": "x"}, None, ("DataTransfer", {"vendorId": "v", "data": "x"})),
    ],
)
def test_each_command_body_is_sent_as_its_2_0_1_message(
    action: str, body: Payload, evse: Evse | None, expected: tuple[str, Payload]
) -> None:
    assert sent(commands.command(action, body, evse)) == expected


def test_a_local_list_names_tokens_with_their_type_and_parents_as_group_tokens() -> None:
    body = {
        "listVersion": 4,
        "updateType": "Differential",
        "localAuthorizationList": [
            {"idTag": "CARD-1", "idTagInfo": {"status": "Accepted"}},
            {
                "idTag": "CARD-2",
                "idTagInfo": {"status": "Blocked", "expiryDate": "2026-07-01T12:00:00Z", "parentIdTag": "FLEET"},
            },
        ],
    }
    assert sent(commands.command("SendLocalList", body, None)) == (
        "SendLocalList",
        {
            "versionNumber": 4,
            "updateType": "Differential",
            "localAuthorizationList": [
                {"idToken": {"idToken": "CARD-1", "type": "ISO14443"}, "idTokenInfo": {"status": "Accepted"}},
                {
                    "idToken": {"idToken": "CARD-2", "type": "ISO14443"},
                    "idTokenInfo": {
                        "status": "Blocked",
                        "cacheExpiryDateTime": "2026-07-01T12:00:00Z",
                        "groupIdToken": {"idToken": "FLEET", "type": "Central"},
                    },
                },
            ],
        },
    )


def test_an_empty_local_list_sends_no_list() -> None:
    body = {"listVersion": 1, "updateType": "Full", "localAuthorizationList": []}
    assert sent(commands.command("SendLocalList", body, None)) == (
        "SendLocalList",
        {"versionNumber": 1, "updateType": "Full"},
    )


def test_a_reservation_names_the_evse_and_the_token_with_its_type() -> None:
    body = {
        "connectorId": 2,
        "expiryDate": "2026-07-01T13:00:00Z",
        "idTag": "CARD-1",
        "reservationId": 7,
        "parentIdTag": "FLEET",
    }
    assert sent(commands.command("ReserveNow", body, CONNECTOR_2)) == (
        "ReserveNow",
        {
            "id": 7,
            "expiryDateTime": "2026-07-01T13:00:00Z",
            "idToken": {"idToken": "CARD-1", "type": "ISO14443"},
            "evseId": 1,
            "groupIdToken": {"idToken": "FLEET", "type": "Central"},
        },
    )


def test_a_session_starts_with_its_remote_start_id_on_the_connectors_evse() -> None:
    assert sent(commands.request_start("04A2B3", 12345, CONNECTOR_2)) == (
        "RequestStartTransaction",
        {"idToken": {"idToken": "04A2B3", "type": "Central"}, "remoteStartId": 12345, "evseId": 1},
    )
    _, payload = sent(commands.request_start("eMA-1", 1, CONNECTOR_2, "eMAID"))
    assert payload["idToken"] == {"idToken": "eMA-1", "type": "eMAID"}


def test_a_session_stops_by_the_stations_own_transaction_id() -> None:
    assert sent(commands.request_stop("TX-7")) == ("RequestStopTransaction", {"transactionId": "TX-7"})


@pytest.mark.parametrize("action", ["GetConfiguration", "ChangeConfiguration"])
def test_the_1_6_configuration_commands_are_422_for_a_2_0_1_station(action: str) -> None:
    with pytest.raises(InvalidInput, match="GetVariables"):
        commands.command(action, {"key": "HeartbeatInterval", "value": "60"}, None)


def test_a_trigger_only_1_6_has_is_422_for_a_2_0_1_station_and_one_only_2_0_1_has_for_a_1_6_one() -> None:
    with pytest.raises(InvalidInput):
        commands.command("TriggerMessage", {"requestedMessage": "DiagnosticsStatusNotification"}, None)
    with pytest.raises(InvalidInput):
        commands.check_trigger_for_16("TransactionEvent")
    commands.check_trigger_for_16("StatusNotification")  # both have it


def test_the_apis_trigger_names_are_those_of_both_generations() -> None:
    both = commands.TRIGGERS_OF_BOTH | commands.TRIGGERS_16_ONLY | commands.TRIGGERS_201_ONLY
    assert set(get_args(MessageTrigger)) == both
    for name in commands.TRIGGERS_OF_BOTH | commands.TRIGGERS_201_ONLY:  # each one 2.0.1's schema takes
        frames.build_call("id", "TriggerMessage", {"requestedMessage": name})


def test_a_status_trigger_names_a_connector_for_2_0_1() -> None:
    with pytest.raises(InvalidInput):
        commands.command("TriggerMessage", {"requestedMessage": "StatusNotification"}, None)


def test_a_charge_points_connector_is_its_evse_and_connector() -> None:
    layout = StationLayout("ST", charge_points=2, connectors_per_charge_point=2)
    assert commands.evse_of(layout, ConnectorAddress("ST-2", 1)) == Evse(2, 1)
    assert commands.evse_of(layout, ConnectorAddress("ST-2", 0)) == Evse(2)
    assert commands.evse_of(StationLayout("ONE"), ConnectorAddress("ONE", 0)) == Evse(1)


def test_variables_are_asked_and_set_by_component_and_variable() -> None:
    ref = VariableRef("Connector", "Enabled", evse=CONNECTOR_2, variable_instance="x")
    assert sent(commands.get_variables([ref], "Actual")) == (
        "GetVariables",
        {
            "getVariableData": [
                {
                    "component": {"name": "Connector", "evse": {"id": 1, "connectorId": 2}},
                    "variable": {"name": "Enabled", "instance": "x"},
                    "attributeType": "Actual",
                }
            ]
        },
    )
    heartbeat = VariableRef("OCPPCommCtrlr", "HeartbeatInterval", component_instance="main")
    assert sent(commands.set_variables([(heartbeat, "60")])) == (
        "SetVariables",
        {
            "setVariableData": [
                {
                    "component": {"name": "OCPPCommCtrlr", "instance": "main"},
                    "variable": {"name": "HeartbeatInterval"},
                    "attributeValue": "60",
                }
            ]
        },
    )
    assert sent(commands.get_base_report(9, "FullInventory")) == (
        "GetBaseReport",
        {"requestId": 9, "reportBase": "FullInventory"},
    )


def test_a_local_list_version_answer_reads_as_1_6_words_it() -> None:
    assert commands.answer_in_api_words("GetLocalListVersion", {"versionNumber": 3}) == {"listVersion": 3}
    assert commands.answer_in_api_words("ClearCache", {"status": "Accepted"}) == {"status": "Accepted"}
