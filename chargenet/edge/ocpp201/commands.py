"""The API's command bodies in OCPP 2.0.1's words (decisions.md §5 "Commands across generations").

The API, the command line and the console keep one body per command, shaped as OCPP 1.6 words it (a `connectorId`
as the station numbers it, an `idTag`, a Reset `Soft`/`Hard`). For a 2.0.1 station each is rewritten here into its
2.0.1 message, the connector named as the EVSE and connector of the station's tree (decisions.md §5 "Tree");
docs/edge.md has the same table for readers. What has no 2.0.1 counterpart is refused with `InvalidInput` (422)
before anything is sent: a trigger only 1.6 has, and the 1.6 configuration commands, whose 2.0.1 counterparts
(GetVariables, SetVariables) take another body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from chargenet.domain.tenants import ConnectorAddress, StationLayout
from chargenet.edge.ocpp16.frames import Payload
from chargenet.errors import InvalidInput

IdTokenType = Literal["Central", "eMAID", "ISO14443", "ISO15693", "KeyCode", "Local", "MacAddress", "NoAuthorization"]

RESET_TYPES = {"Soft": "OnIdle", "Hard": "Immediate"}

# MessageTrigger (1.6) and MessageTriggerEnumType (2.0.1): the names both have go as they are; a name only one
# generation has is refused when the station speaks the other.
TRIGGERS_OF_BOTH = frozenset(
    {"BootNotification", "FirmwareStatusNotification", "Heartbeat", "MeterValues", "StatusNotification"}
)
TRIGGERS_16_ONLY = frozenset({"DiagnosticsStatusNotification"})
TRIGGERS_201_ONLY = frozenset(
    {
        "LogStatusNotification",
        "PublishFirmwareStatusNotification",
        "SignChargingStationCertificate",
        "SignCombinedCertificate",
        "SignV2GCertificate",
        "TransactionEvent",
    }
)

# A local list entry or reservation names a token by its value only; 2.0.1 wants its type too. The service's
# tokens are cards unless said otherwise (decisions.md §5 "idTokens"), and a parent tag is a group of them.
DEFAULT_TOKEN_TYPE: IdTokenType = "ISO14443"  # noqa: S105 (a token type, no secret)
GROUP_TOKEN_TYPE = "Central"  # noqa: S105
REMOTE_START_TOKEN_TYPE = "Central"  # noqa: S105

# The commands whose 1.6 body is 2.0.1's as it is.
_SAME_BODY = frozenset({"ClearCache", "GetLocalListVersion", "CancelReservation", "DataTransfer"})
_CONFIGURATION = frozenset({"GetConfiguration", "ChangeConfiguration"})


@dataclass(frozen=True, slots=True)
class Evse:
    """Where on a 2.0.1 station a command goes: EVSE `id` (0: the whole station), and one connector of it or,
    with none, the whole EVSE."""

    id: int
    connector_id: int | None = None

    def payload(self) -> Payload:
        """The `evse` object of ChangeAvailability and TriggerMessage."""
        return {"id": self.id} if self.connector_id is None else {"id": self.id, "connectorId": self.connector_id}


def evse_of(layout: StationLayout, address: ConnectorAddress) -> Evse:
    """A charge point's connector as the EVSE and connector of the station's tree: charge point k is EVSE k, its
    connector j is connector j, and its connector 0 is the whole EVSE."""
    evse_id = layout.charge_point_ids.index(address.charge_point_id) + 1
    return Evse(evse_id, address.connector_id or None)


@dataclass(frozen=True, slots=True)
class Command:
    action: str
    payload: Payload


def _token(value: str, token_type: str) -> Payload:
    return {"idToken": value, "type": token_type}


def request_start(id_tag: str, remote_start_id: int, evse: Evse, id_token_type: str | None = None) -> Command:
    """RemoteStartTransaction -> RequestStartTransaction, with the request's `remoteStartId`, on the EVSE the
    session's connector belongs to."""
    payload: Payload = {
        "idToken": _token(id_tag, id_token_type or REMOTE_START_TOKEN_TYPE),
        "remoteStartId": remote_start_id,
    }
    if evse.id > 0:
        payload["evseId"] = evse.id
    return Command("RequestStartTransaction", payload)


def request_stop(station_transaction_id: str) -> Command:
    """RemoteStopTransaction -> RequestStopTransaction, naming the transaction by the station's own id."""
    return Command("RequestStopTransaction", {"transactionId": station_transaction_id})


def _whole_station(evse: Evse | None) -> bool:
    return evse is None or evse.id == 0


def command(action: str, payload: Payload, evse: Evse | None) -> Command:
    """The 2.0.1 message for a 1.6-shaped command body. `evse` is where the body's connector is on the station's
    tree; None when the command names no connector (the whole station).

    Raises `InvalidInput` for what 2.0.1 cannot be asked in these words."""
    if action in _SAME_BODY:
        return Command(action, dict(payload))
    if action in _CONFIGURATION:
        raise InvalidInput(
            f"{action} is OCPP 1.6's; an OCPP 2.0.1 station is asked for its variables instead "
            "(GetVariables, SetVariables)",
        )
    if action == "Reset":
        # A 1.6 Reset is the whole station's, whichever charge point it was asked of; so is this one.
        return Command("Reset", {"type": RESET_TYPES[payload["type"]]})
    if action == "UnlockConnector":
        if evse is None or evse.id == 0:
            raise InvalidInput("a connector is unlocked by its number, from 1", field="connectorId")
        return Command("UnlockConnector", {"evseId": evse.id, "connectorId": evse.connector_id or 1})
    if action == "ChangeAvailability":
        availability: Payload = {"operationalStatus": payload["type"]}
        if not _whole_station(evse):
            assert evse is not None
            availability["evse"] = evse.payload()
        return Command("ChangeAvailability", availability)
    if action == "TriggerMessage":
        return _trigger(payload["requestedMessage"], evse)
    if action == "SendLocalList":
        return _send_local_list(payload)
    if action == "ReserveNow":
        return _reserve_now(payload, evse)
    raise InvalidInput(f"{action} is not a command an OCPP 2.0.1 station takes")


def _trigger(requested: str, evse: Evse | None) -> Command:
    if requested in TRIGGERS_16_ONLY:
        raise InvalidInput(f"{requested} is OCPP 1.6's; an OCPP 2.0.1 station has no such message", "requestedMessage")
    payload: Payload = {"requestedMessage": requested}
    if not _whole_station(evse):
        assert evse is not None
        payload["evse"] = evse.payload()
    elif requested == "StatusNotification":
        # 2.0.1 reports a connector's status only, so "every connector" is not a StatusNotification it can send.
        raise InvalidInput("an OCPP 2.0.1 station reports the status of one connector: name it", field="connectorId")
    return Command("TriggerMessage", payload)


def check_trigger_for_16(requested: str) -> None:
    """A trigger name only 2.0.1 has never reaches a 1.6 station."""
    if requested in TRIGGERS_201_ONLY:
        raise InvalidInput(f"{requested} is OCPP 2.0.1's; an OCPP 1.6 station has no such message", "requestedMessage")


def _send_local_list(payload: Payload) -> Command:
    entries = []
    for entry in payload.get("localAuthorizationList", []):
        info = entry.get("idTagInfo")
        item: Payload = {"idToken": _token(entry["idTag"], entry.get("idTokenType", DEFAULT_TOKEN_TYPE))}
        if info is not None:
            token_info: Payload = {"status": info["status"]}
            if "expiryDate" in info:
                token_info["cacheExpiryDateTime"] = info["expiryDate"]
            if "parentIdTag" in info:
                token_info["groupIdToken"] = _token(info["parentIdTag"], GROUP_TOKEN_TYPE)
            item["idTokenInfo"] = token_info
        entries.append(item)
    sent: Payload = {"versionNumber": payload["listVersion"], "updateType": payload["updateType"]}
    if entries:
        sent["localAuthorizationList"] = entries
    return Command("SendLocalList", sent)


def _reserve_now(payload: Payload, evse: Evse | None) -> Command:
    sent: dict[str, Any] = {
        "id": payload["reservationId"],
        "expiryDateTime": payload["expiryDate"],
        "idToken": _token(payload["idTag"], payload.get("idTokenType", DEFAULT_TOKEN_TYPE)),
    }
    if not _whole_station(evse):
        assert evse is not None
        sent["evseId"] = evse.id
    if "parentIdTag" in payload:
        sent["groupIdToken"] = _token(payload["parentIdTag"], GROUP_TOKEN_TYPE)
    return Command("ReserveNow", sent)


# GetVariables, SetVariables, GetBaseReport: 2.0.1's own, with bodies of their own -----------------------------


@dataclass(frozen=True, slots=True)
class VariableRef:
    """A variable of the device model: a component (with its instance and EVSE, when it has them) and a variable
    of it (with its instance)."""

    component: str
    variable: str
    component_instance: str | None = None
    variable_instance: str | None = None
    evse: Evse | None = None

    def payload(self) -> Payload:
        component: Payload = {"name": self.component}
        if self.component_instance is not None:
            component["instance"] = self.component_instance
        if self.evse is not None:
            component["evse"] = self.evse.payload()
        variable: Payload = {"name": self.variable}
        if self.variable_instance is not None:
            variable["instance"] = self.variable_instance
        return {"component": component, "variable": variable}


def get_variables(refs: list[VariableRef], attribute_type: str | None = None) -> Command:
    data = []
    for ref in refs:
        item = ref.payload()
        if attribute_type is not None:
            item["attributeType"] = attribute_type
        data.append(item)
    return Command("GetVariables", {"getVariableData": data})


def set_variables(values: list[tuple[VariableRef, str]], attribute_type: str | None = None) -> Command:
    data = []
    for ref, value in values:
        item = {**ref.payload(), "attributeValue": value}
        if attribute_type is not None:
            item["attributeType"] = attribute_type
        data.append(item)
    return Command("SetVariables", {"setVariableData": data})


REPORT_BASES = ("ConfigurationInventory", "FullInventory", "SummaryInventory")


def get_base_report(request_id: int, report_base: str) -> Command:
    return Command("GetBaseReport", {"requestId": request_id, "reportBase": report_base})


def answer_in_api_words(action: str, answer: Payload) -> Payload:
    """A 2.0.1 station's answer as the API gives it for the command's 1.6-shaped body: the same but for
    GetLocalListVersion, whose `versionNumber` 1.6 calls `listVersion`. The rest (a `statusInfo` beside the
    `status`, DataTransfer's `data` of any JSON type) is kept as it came."""
    if action == "GetLocalListVersion" and "versionNumber" in answer:
        rest = {key: value for key, value in answer.items() if key != "versionNumber"}
        return {"listVersion": answer["versionNumber"], **rest}
    return answer
