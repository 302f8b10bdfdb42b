"""A station's device model report: the NotifyReport parts that answer one GetBaseReport, assembled into one.

A station answers GetBaseReport with `Accepted` and then sends its report in parts (NotifyReport), each with the
request's `requestId`, a `seqNo` from 0 and `tbc` (to be continued) on every part but the last. The parts are
stored as they come (`station_notices`); a report is whole once the part without `tbc` and every part before it
have arrived.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chargenet.edge.ocpp16.frames import Payload


@dataclass(frozen=True, slots=True)
class ReportedVariable:
    """One variable of the report, with its attributes' values (`Actual`, `Target`, `MinSet`, `MaxSet`)."""

    component: str
    component_instance: str | None
    evse_id: int | None
    connector_id: int | None
    variable: str
    variable_instance: str | None
    values: dict[str, str | None]
    mutability: dict[str, str]
    unit: str | None
    data_type: str | None


@dataclass(frozen=True, slots=True)
class DeviceModelReport:
    request_id: int
    parts: int
    complete: bool
    missing_parts: list[int]
    variables: list[ReportedVariable]


def _variable(item: dict[str, Any]) -> ReportedVariable:
    component, variable = item["component"], item["variable"]
    evse = component.get("evse") or {}
    attributes = item.get("variableAttribute", [])
    characteristics = item.get("variableCharacteristics") or {}
    return ReportedVariable(
        component=component["name"],
        component_instance=component.get("instance"),
        evse_id=evse.get("id"),
        connector_id=evse.get("connectorId"),
        variable=variable["name"],
        variable_instance=variable.get("instance"),
        values={a.get("type", "Actual"): a.get("value") for a in attributes},
        mutability={a.get("type", "Actual"): a["mutability"] for a in attributes if "mutability" in a},
        unit=characteristics.get("unit"),
        data_type=characteristics.get("dataType"),
    )


def assemble(request_id: int, parts: Iterable[Payload]) -> DeviceModelReport:
    """The report of `request_id` from whichever of its parts arrived (a resent part counts once), its variables
    in the order the station sent them."""
    by_seq: dict[int, Payload] = {}
    for part in parts:
        if part.get("requestId") == request_id:
            by_seq.setdefault(int(part["seqNo"]), part)
    last = next((seq for seq, part in sorted(by_seq.items()) if not part.get("tbc", False)), None)
    expected = range(0, (last if last is not None else max(by_seq, default=-1)) + 1)
    missing = [seq for seq in expected if seq not in by_seq]
    variables = [_variable(item) for seq in sorted(by_seq) for item in by_seq[seq].get("reportData", [])]
    return DeviceModelReport(
        request_id=request_id,
        parts=len(by_seq),
        complete=last is not None and not missing,
        missing_parts=missing,
        variables=variables,
    )
