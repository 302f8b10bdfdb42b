"""A device model report assembled from the NotifyReport parts of one GetBaseReport."""

from __future__ import annotations

from typing import Any

from chargenet.edge.ocpp201.device_model import assemble


def part(seq_no: int, tbc: bool, *names: str, request_id: int = 7) -> dict[str, Any]:
    data = [
        {
            "component": {"name": "EVSE", "evse": {"id": 1}},
            "variable": {"name": name},
            "variableAttribute": [{"value": "1", "mutability": "ReadOnly"}, {"type": "MaxSet", "value": "2"}],
            "variableCharacteristics": {"unit": "W", "dataType": "decimal", "supportsMonitoring": False},
        }
        for name in names
    ]
    return {
        "requestId": request_id,
        "generatedAt": "2026-07-01T12:00:00Z",
        "seqNo": seq_no,
        "tbc": tbc,
        "reportData": data,
    }


def test_a_report_is_whole_once_the_last_part_and_every_part_before_it_arrived() -> None:
    report = assemble(7, [part(1, False, "Power"), part(0, True, "Available")])
    assert (report.complete, report.parts, report.missing_parts) == (True, 2, [])
    assert [v.variable for v in report.variables] == ["Available", "Power"]  # in the station's order
    first = report.variables[0]
    assert (first.component, first.evse_id, first.values, first.mutability) == (
        "EVSE",
        1,
        {"Actual": "1", "MaxSet": "2"},
        {"Actual": "ReadOnly"},
    )
    assert (first.unit, first.data_type) == ("W", "decimal")


def test_a_report_missing_a_part_says_which() -> None:
    report = assemble(7, [part(0, True, "A"), part(2, False, "C")])
    assert (report.complete, report.missing_parts) == (False, [1])
    assert assemble(7, [part(0, True, "A")]).complete is False  # more parts were announced


def test_a_resent_part_and_another_reports_parts_count_for_nothing() -> None:
    report = assemble(7, [part(0, False, "A"), part(0, False, "A"), part(0, False, "B", request_id=8)])
    assert [v.variable for v in report.variables] == ["A"]
    assert report.complete
