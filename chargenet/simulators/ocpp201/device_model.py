"""A 2.0.1 station's device model, small: the variables a central system reads and sets on a real station
(heartbeat interval, sampling interval, authorization and local list switches, identity), with the answers
GetVariables, SetVariables and GetBaseReport give (OCPP 2.0.1 B06-B08). No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Payload = dict[str, Any]


@dataclass
class Variable:
    component: str
    name: str
    value: str
    data_type: str  # integer, boolean or string
    mutability: str = "ReadWrite"  # or ReadOnly
    minimum: int | None = None  # for integers

    def accepts(self, value: str) -> bool:
        if self.data_type == "boolean":
            return value in ("true", "false")
        if self.data_type == "integer":
            try:
                number = int(value)
            except ValueError:
                return False
            return self.minimum is None or number >= self.minimum
        return True

    def report(self) -> Payload:
        return {
            "component": {"name": self.component},
            "variable": {"name": self.name},
            "variableAttribute": [{"type": "Actual", "value": self.value, "mutability": self.mutability}],
            "variableCharacteristics": {"dataType": self.data_type, "supportsMonitoring": False},
        }


def standard_variables(station_id: str, model: str, vendor: str) -> list[Variable]:
    return [
        Variable("ChargingStation", "Model", model, "string", "ReadOnly"),
        Variable("ChargingStation", "VendorName", vendor, "string", "ReadOnly"),
        Variable("SecurityCtrlr", "Identity", station_id, "string", "ReadOnly"),
        Variable("SecurityCtrlr", "SecurityProfile", "1", "integer", "ReadOnly"),
        Variable("OCPPCommCtrlr", "HeartbeatInterval", "300", "integer", minimum=1),
        Variable("SampledDataCtrlr", "TxUpdatedInterval", "60", "integer", minimum=0),
        Variable("SampledDataCtrlr", "TxUpdatedMeasurands", "Energy.Active.Import.Register", "string"),
        Variable("TxCtrlr", "EVConnectionTimeOut", "60", "integer", minimum=0),
        Variable("TxCtrlr", "StopTxOnEVSideDisconnect", "true", "boolean", "ReadOnly"),
        Variable("AuthCtrlr", "AuthorizeRemoteStart", "false", "boolean"),
        Variable("AuthCtrlr", "LocalAuthorizeOffline", "true", "boolean"),
        Variable("AuthCacheCtrlr", "Enabled", "true", "boolean"),
        Variable("LocalAuthListCtrlr", "Enabled", "true", "boolean"),
    ]


class DeviceModel:
    def __init__(self, variables: list[Variable]) -> None:
        self._variables = {(v.component, v.name): v for v in variables}

    def value(self, component: str, name: str) -> str:
        return self._variables[component, name].value

    def put(self, component: str, name: str, value: str) -> None:
        """The station itself changes a value (the heartbeat interval a boot answer gives, for example)."""
        self._variables[component, name].value = value

    def enabled(self, component: str, name: str) -> bool:
        return self.value(component, name) == "true"

    def _find(self, entry: Payload) -> Variable | str:
        """The variable an entry of a Get/SetVariables request names, or the status that says why there is none."""
        component, variable_name = entry["component"], entry["variable"]
        # Every component here is the station's own, once: one named for an EVSE or an instance is unknown.
        known = any(c == component["name"] for c, _ in self._variables)
        if not known or "evse" in component or "instance" in component:
            return "UnknownComponent"
        variable = self._variables.get((component["name"], variable_name["name"]))
        if variable is None or "instance" in variable_name:
            return "UnknownVariable"
        if entry.get("attributeType", "Actual") != "Actual":
            return "NotSupportedAttributeType"
        return variable

    def get(self, entry: Payload) -> Payload:
        """One GetVariableResult."""
        result: Payload = {"component": entry["component"], "variable": entry["variable"]}
        if "attributeType" in entry:
            result["attributeType"] = entry["attributeType"]
        found = self._find(entry)
        if isinstance(found, str):
            return {"attributeStatus": found, **result}
        return {"attributeStatus": "Accepted", "attributeValue": found.value, **result}

    def set(self, entry: Payload) -> Payload:
        """One SetVariableResult; a read-only variable or a value of the wrong type is Rejected."""
        result: Payload = {"component": entry["component"], "variable": entry["variable"]}
        if "attributeType" in entry:
            result["attributeType"] = entry["attributeType"]
        found = self._find(entry)
        if isinstance(found, str):
            return {"attributeStatus": found, **result}
        value = entry["attributeValue"]
        if found.mutability == "ReadOnly" or not found.accepts(value):
            return {"attributeStatus": "Rejected", **result}
        found.value = value
        return {"attributeStatus": "Accepted", **result}

    def report(self, report_base: str) -> list[Payload] | None:
        """The ReportData of a base report; None for a base this station does not support (SummaryInventory,
        optional in 2.0.1, where a station would also have to report its monitored variables)."""
        if report_base == "FullInventory":
            return [v.report() for v in self._variables.values()]
        if report_base == "ConfigurationInventory":
            return [v.report() for v in self._variables.values() if v.mutability != "ReadOnly"]
        return None


def report_parts(report_data: list[Payload], per_part: int) -> list[list[Payload]]:
    """A report cut into NotifyReport parts of at most `per_part` entries (at least one part, maybe empty)."""
    return [report_data[i : i + per_part] for i in range(0, len(report_data), per_part)] or [[]]
