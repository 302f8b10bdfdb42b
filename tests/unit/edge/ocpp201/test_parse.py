"""2.0.1 payloads read into the core's records: tokens, the EVSE tree and the energy readings events carry."""

from __future__ import annotations

from typing import Any

import pytest

from chargenet.domain.events import ChargePointErrorCode
from chargenet.domain.evse import Fault
from chargenet.domain.tenants import ConnectorAddress, StationLayout
from chargenet.edge.ocpp201 import parse
from chargenet.errors import InvalidInput

DUO = StationLayout("DUO", charge_points=2, connectors_per_charge_point=2)


def test_an_empty_no_authorization_token_reads_as_no_authorization() -> None:
    token = parse.id_token({"idToken": "", "type": "NoAuthorization"})
    assert (token.value, token.type) == ("NoAuthorization", "NoAuthorization")


def test_evse_k_is_charge_point_k_and_its_connector_j_connector_j() -> None:
    ref = parse.connector(DUO, 2, 1)
    assert (ref.address, ref.station_number) == (ConnectorAddress("DUO-2", 1), 3)
    assert parse.connector(DUO, 0, 0).address == ConnectorAddress("DUO-1", 0)  # the whole station


@pytest.mark.parametrize(
    ("evse", "connector", "field"), [(3, 1, "evseId"), (1, 3, "connectorId"), (1, 0, "connectorId")]
)
def test_an_evse_or_connector_the_station_was_never_given_is_refused(evse: int, connector: int, field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse.connector(DUO, evse, connector)
    assert refused.value.field == field


def sampled(value: Any, **fields: Any) -> dict[str, Any]:
    return {"timestamp": "2026-07-01T12:00:00Z", "sampledValue": [{"value": value, **fields}]}


@pytest.mark.parametrize(
    ("meter_value", "energy_wh"),
    [
        (sampled(1234), 1234),  # no measurand: the energy register, in Wh
        (sampled(1.5, unitOfMeasure={"unit": "kWh"}), 1500),
        (sampled(2, unitOfMeasure={"unit": "Wh", "multiplier": 3}), 2000),
        (sampled(9, measurand="Energy.Active.Import.Register", phase="L1"), None),  # a phase, not the total
        (sampled(9, location="EV"), None),
        (sampled(9, measurand="Power.Active.Import"), None),
        (sampled(-5), None),
        (sampled(1, unitOfMeasure={"multiplier": 2147483647}), None),  # beyond any Decimal
    ],
)
def test_the_outlets_energy_register_is_what_events_count(meter_value: dict[str, Any], energy_wh: int | None) -> None:
    readings = parse.energy_readings([meter_value])
    assert [reading.energy_wh for reading in readings] == ([] if energy_wh is None else [energy_wh])


def test_readings_keep_their_context() -> None:
    begin = sampled(100, context="Transaction.Begin")
    end = sampled(900, context="Transaction.End")
    assert [(r.context, r.energy_wh) for r in parse.energy_readings([begin, end])] == [
        ("Transaction.Begin", 100),
        ("Transaction.End", 900),
    ]


def problem(component: dict[str, Any], actual: str, variable: str = "Problem", **tech: str) -> dict[str, Any]:
    return {
        "eventId": 1,
        "timestamp": "2026-07-01T12:00:00Z",
        "trigger": "Delta",
        "actualValue": actual,
        "eventNotificationType": "HardWiredMonitor",
        "component": component,
        "variable": {"name": variable},
        **tech,
    }


def test_a_notify_events_problems_name_their_connectors_evse_or_station() -> None:
    data = [
        problem({"name": "Connector", "evse": {"id": 2, "connectorId": 2}}, "true", techCode="GroundFailure"),
        problem({"name": "EVSE", "evse": {"id": 2}}, "False"),
        problem({"name": "ChargingStation"}, "true", techCode="E-17"),
        problem({"name": "Connector", "evse": {"id": 9, "connectorId": 1}}, "true"),  # never given: left out
        problem({"name": "Connector", "evse": {"id": 1, "connectorId": 1}}, "Occupied", "AvailabilityState"),
        problem({"name": "Connector"}, "true"),  # no EVSE named
    ]
    found = parse.problems(DUO, {"generatedAt": "2026-07-01T12:00:00Z", "seqNo": 0, "eventData": data})
    assert [(p.connector.address, p.connector.station_number, p.fault) for p in found] == [
        (ConnectorAddress("DUO-2", 2), 4, Fault(ChargePointErrorCode.GROUND_FAILURE)),
        (ConnectorAddress("DUO-2", 0), 0, None),
        (ConnectorAddress("DUO-1", 0), 0, Fault(ChargePointErrorCode.OTHER_ERROR, "E-17")),
    ]
