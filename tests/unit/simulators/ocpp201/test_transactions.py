from __future__ import annotations

import pytest

from chargenet.simulators.ocpp201.transactions import IdToken, Transaction, state_after_stop, trigger_of_stop

AT = "2026-11-29T09:00:00.000Z"


def test_every_event_takes_the_next_sequence_number_from_zero() -> None:
    transaction = Transaction("T-1", evse_id=1)
    events = [transaction.event(kind, "Trigger", AT) for kind in ("Started", "Updated", "Updated", "Ended")]
    assert [e["seqNo"] for e in events] == [0, 1, 2, 3]
    assert all(e["transactionInfo"]["transactionId"] == "T-1" for e in events)


def test_the_evse_is_named_in_the_first_event_only() -> None:
    transaction = Transaction("T-1", evse_id=2)
    first, second = transaction.event("Started", "CablePluggedIn", AT), transaction.event("Updated", "Trigger", AT)
    assert first["evse"] == {"id": 2, "connectorId": 1} and "evse" not in second


def test_the_id_token_is_sent_once_in_the_first_event_after_it_is_known() -> None:
    transaction = Transaction("T-1", evse_id=1)
    started = transaction.event("Started", "CablePluggedIn", AT)
    transaction.id_token = IdToken("TAG", "ISO14443")
    authorized = transaction.event("Updated", "Authorized", AT)
    later = transaction.event("Updated", "MeterValuePeriodic", AT)
    assert "idToken" not in started and "idToken" not in later
    assert authorized["idToken"] == {"idToken": "TAG", "type": "ISO14443"} and transaction.token_sent


def test_the_charging_state_is_sent_only_when_it_changed() -> None:
    transaction = Transaction("T-1", evse_id=1)
    states = [
        transaction.event("Updated", "Trigger", AT, charging_state=state)["transactionInfo"].get("chargingState")
        for state in ("EVConnected", "Charging", "Charging", None, "SuspendedEV")
    ]
    assert states == ["EVConnected", "Charging", None, None, "SuspendedEV"]


def test_the_remote_start_id_is_sent_once() -> None:
    transaction = Transaction("T-1", evse_id=1, remote_start_id=7)
    first, second = transaction.event("Started", "RemoteStart", AT), transaction.event("Updated", "Trigger", AT)
    assert first["transactionInfo"]["remoteStartId"] == 7 and "remoteStartId" not in second["transactionInfo"]


def test_a_meter_reading_carries_the_energy_in_wh_with_its_context_and_the_power_when_given() -> None:
    transaction = Transaction("T-1", evse_id=1, wh=4500)
    event = transaction.event("Updated", "MeterValuePeriodic", AT, meter_context="Sample.Periodic", power_w=11040.0)
    assert event["meterValue"] == [
        {
            "timestamp": AT,
            "sampledValue": [
                {
                    "value": 4500,
                    "context": "Sample.Periodic",
                    "measurand": "Energy.Active.Import.Register",
                    "unitOfMeasure": {"unit": "Wh"},
                },
                {
                    "value": 11040.0,
                    "context": "Sample.Periodic",
                    "measurand": "Power.Active.Import",
                    "unitOfMeasure": {"unit": "W"},
                },
            ],
        }
    ]


def test_an_event_without_a_context_has_no_meter_reading() -> None:
    assert "meterValue" not in Transaction("T-1", evse_id=1).event("Updated", "Trigger", AT)


def test_an_ended_transaction_has_no_further_event() -> None:
    transaction = Transaction("T-1", evse_id=1)
    ended = transaction.event("Ended", "StopAuthorized", AT, stopped_reason="Local")
    assert ended["transactionInfo"]["stoppedReason"] == "Local" and transaction.ended
    with pytest.raises(ValueError, match="has ended"):
        transaction.event("Updated", "Trigger", AT)


@pytest.mark.parametrize(
    ("reason", "trigger", "state"),
    [
        ("EVDisconnected", "EVCommunicationLost", "Idle"),
        ("Local", "StopAuthorized", "EVConnected"),
        ("Remote", "RemoteStop", "EVConnected"),
        ("ImmediateReset", "ResetCommand", "EVConnected"),
        ("PowerLoss", "AbnormalCondition", "EVConnected"),
    ],
    ids=["ev left", "driver stopped", "central system stopped", "reset", "anything else"],
)
def test_a_stop_reason_gives_the_ended_events_trigger_and_charging_state(reason: str, trigger: str, state: str) -> None:
    assert (trigger_of_stop(reason), state_after_stop(reason)) == (trigger, state)
