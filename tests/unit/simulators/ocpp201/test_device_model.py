from __future__ import annotations

from typing import Any

import pytest

from chargenet.simulators.ocpp201.device_model import DeviceModel, report_parts, standard_variables

HEARTBEAT = {"component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}}


def model() -> DeviceModel:
    return DeviceModel(standard_variables("CS-1", "SimStation201", "chargenet"))


def test_a_known_variable_is_read_with_its_actual_value() -> None:
    assert model().get(HEARTBEAT) == {"attributeStatus": "Accepted", "attributeValue": "300", **HEARTBEAT}


@pytest.mark.parametrize(
    ("entry", "status"),
    [
        ({"component": {"name": "Nowhere"}, "variable": {"name": "HeartbeatInterval"}}, "UnknownComponent"),
        ({"component": {"name": "OCPPCommCtrlr", "evse": {"id": 1}}, "variable": {"name": "X"}}, "UnknownComponent"),
        ({"component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "Nothing"}}, "UnknownVariable"),
        ({**HEARTBEAT, "attributeType": "MaxSet"}, "NotSupportedAttributeType"),
    ],
    ids=["unknown component", "component of an evse", "unknown variable", "attribute other than Actual"],
)
def test_what_the_model_does_not_hold_is_named_in_the_answer(entry: dict[str, Any], status: str) -> None:
    assert model().get(entry)["attributeStatus"] == status


def test_a_writable_variable_takes_a_value_of_its_type() -> None:
    device = model()
    assert device.set({**HEARTBEAT, "attributeValue": "60"})["attributeStatus"] == "Accepted"
    assert device.value("OCPPCommCtrlr", "HeartbeatInterval") == "60"


@pytest.mark.parametrize(
    ("component", "variable", "value"),
    [
        ("OCPPCommCtrlr", "HeartbeatInterval", "often"),
        ("OCPPCommCtrlr", "HeartbeatInterval", "0"),
        ("AuthCtrlr", "AuthorizeRemoteStart", "yes"),
        ("SecurityCtrlr", "Identity", "CS-2"),
    ],
    ids=["not an integer", "below its minimum", "not a boolean", "read-only"],
)
def test_a_value_the_variable_cannot_take_is_rejected_and_not_kept(component: str, variable: str, value: str) -> None:
    device = model()
    before = device.value(component, variable)
    entry = {"component": {"name": component}, "variable": {"name": variable}, "attributeValue": value}
    assert device.set(entry)["attributeStatus"] == "Rejected"
    assert device.value(component, variable) == before


def test_the_configuration_inventory_holds_the_writable_variables_and_the_full_one_every_variable() -> None:
    device = model()
    full, configuration = device.report("FullInventory"), device.report("ConfigurationInventory")
    assert full is not None and configuration is not None
    assert {entry["component"]["name"] for entry in full} >= {"SecurityCtrlr", "OCPPCommCtrlr"}
    assert all(entry["variableAttribute"][0]["mutability"] == "ReadWrite" for entry in configuration)
    assert 0 < len(configuration) < len(full)


def test_the_summary_inventory_is_not_supported() -> None:
    assert model().report("SummaryInventory") is None


def test_a_report_is_cut_into_parts_of_at_most_the_given_size() -> None:
    assert report_parts([{"n": n} for n in range(5)], 2) == [[{"n": 0}, {"n": 1}], [{"n": 2}, {"n": 3}], [{"n": 4}]]
    assert report_parts([], 2) == [[]]
