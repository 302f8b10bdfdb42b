"""One station: what it is and how it is reached, its connectors, the commands an operator sends it, its
configuration, and its keys.

A station that is not connected is shown offline whatever its connectors last reported, and its commands are
disabled with the reason; so are the central-system commands (configuration, cache, local list, reservations,
data transfer) on a site with an upstream, which owns them (`station_commands` refuses them there as a conflict).
Every command goes through the same use cases as the API (`services.charge_point_commands`,
`services.station_commands`), and its outcome is shown as it came: the station's answer, its CALLERROR, its
silence, or why it was not sent. An htmx request gets only the outcome, in the region beside the form that sent
it; a plain form post gets the whole page with the outcome in that region.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from chargenet.console.forms import (
    field_errors,
    local_instant,
    optional_text,
    text,
    version_of,
    whole_number,
)
from chargenet.console.pages import Console, Signed, console_of, go_to, is_htmx, page, redirect, render, submitted
from chargenet.console.views.sites import (
    KEY_CHOICES_EDIT,
    STATION_FIELDS,
    cipher_of,
    edited,
    hasher_of,
    key_choice,
    key_page,
)
from chargenet.domain.generations import OCPP201
from chargenet.domain.local_time import LocalTime
from chargenet.domain.operators import Role
from chargenet.domain.security_profiles import Refusal
from chargenet.domain.tenants import MAX_CONNECTORS_PER_CHARGE_POINT
from chargenet.domain.text import INT32_MAX
from chargenet.edge.ocpp16 import frames
from chargenet.edge.ocpp16.frames import Payload
from chargenet.edge.ocpp201 import commands as commands201
from chargenet.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    StaleChange,
    StationAnswerFailed,
    StationDidNotAnswer,
    StationNotConnected,
    StationRejected,
)
from chargenet.ids import new_authorization_key
from chargenet.ports import StationCommands
from chargenet.services import (
    charge_point_commands,
    charge_points,
    companies,
    localauth,
    sites,
    station_certificates,
    station_commands,
    station_logs,
    station_notices,
    stations,
    transactions,
)
from chargenet.services.callers import OperatorCaller
from chargenet.services.pages import PageRequest
from chargenet.store.db import Transactions

RESET_TYPES = (("Soft", "Soft: restart the software, ending sessions cleanly"), ("Hard", "Hard: reboot"))
LIST_UPDATES = (
    ("Full", "Full: the site's list replaces the station's"),
    ("Differential", "Differential: the site's tags are added or changed, the station's others kept"),
)
AVAILABILITY = (("Inoperative", "Inoperative"), ("Operative", "Operative"))
TRIGGERS = (
    "StatusNotification",
    "MeterValues",
    "Heartbeat",
    "BootNotification",
    "DiagnosticsStatusNotification",
    "FirmwareStatusNotification",
)
CONNECTOR_TRIGGERS = ("StatusNotification", "MeterValues")  # the messages OCPP 1.6 sends about one connector
# OCPP 2.0.1's: a StatusNotification is about one connector only; a TransactionEvent about the connector's session.
TRIGGERS_201 = (
    "MeterValues",
    "Heartbeat",
    "BootNotification",
    "FirmwareStatusNotification",
    "LogStatusNotification",
    "TransactionEvent",
)
CONNECTOR_TRIGGERS_201 = ("StatusNotification", "MeterValues", "TransactionEvent")
REPORT_BASES = (
    ("FullInventory", "Full inventory: every variable"),
    ("ConfigurationInventory", "Configuration: the variables that can be set"),
    ("SummaryInventory", "Summary: availability and problems"),
)
MAX_VARIABLE_NAME = 50
MAX_VARIABLE_VALUE = 1000
COMMAND_FIELDS = {
    "idTag": "id_tag",
    "id-tag": "id_tag",
    "connectorId": "connector",
    "connector": "connector",
    "type": "type",
    "requestedMessage": "message",
    "key": "key",
    "value": "value",
    "parent-id-tag": "parent_id_tag",
    "parentIdTag": "parent_id_tag",
    "expiryDate": "expires",
    "reservationId": "reservation_id",
    "listVersion": "list_version",
    "updateType": "update_type",
    "vendorId": "vendor_id",
    "messageId": "message_id",
    "data": "data",
    "component": "component",
    "variable": "variable",
    "reportBase": "report_base",
}
# The bounds of the API's bodies (`api.routes.station_commands`), so that the page refuses what the API refuses.
MAX_VENDOR_ID = 255
MAX_MESSAGE_ID = 50
MAX_DATA = 10_000
RESERVATION_HOURS = 1  # the expiry a reservation form starts with, from now

Kind = Literal["answered", "callerror", "silent", "offline", "refused", "invalid"]


@dataclass(frozen=True)
class Outcome:
    """What became of one command: the station's answer (`status`), its CALLERROR, its silence, or why it was not
    sent. `region` is the id of the page region beside the form that sent it."""

    region: str
    label: str
    action: str
    target: str
    kind: Kind
    status: str | None = None
    detail: str | None = None
    errors: dict[str, str] = field(default_factory=dict)
    configuration: list[dict[str, Any]] | None = None
    unknown_keys: list[str] | None = None
    list_version: int | None = None  # GetLocalListVersion's answer
    data: str | None = None  # what a DataTransfer's answer carried
    at: datetime | None = None  # when it came (or was refused)

    @property
    def http_status(self) -> int:
        return {"answered": 200, "callerror": 502, "silent": 504, "offline": 503, "refused": 409, "invalid": 422}[
            self.kind
        ]


def _runtime(console: Console, station_id: str) -> tuple[Transactions, StationCommands]:
    if console.stations is None:
        raise StationNotConnected(station_id, "this console was started without a way to reach stations")
    return console.reading, console.stations


# --- the page ---------------------------------------------------------------------------------------------------


def _connector_ids(station: stations.StationView, point: charge_points.ChargePointView) -> list[int]:
    """The connectors commands can name: those created ahead or reported, from 1 (0 is the whole charge point)."""
    known = {connector.connector_id for connector in point.connectors if connector.connector_id >= 1}
    known |= set(range(1, (station.connectors_per_charge_point or 0) + 1))
    return sorted(known) or [1]


def _disabled_reasons(
    state: charge_points.StationStateView, caller: OperatorCaller, reads_in: LocalTime
) -> dict[str, str | None]:
    """Why each kind of command cannot be sent now (None: it can)."""
    if not caller.may_change:
        role = f"Your role ({caller.role.value}) sees this station but does not send it commands."
        return {"all": role, "central": role}
    offline = None
    if state.connection == "meter":
        offline = (
            f"Commands are off: station {state.station_id} has no OCPP connection; chargenet knows it only "
            "through its meters."
        )
    elif not state.reachable:
        seen = f" (last heard of {reads_in.text(state.last_seen)})" if state.last_seen else ""
        offline = (
            f"Commands are off: station {state.station_id} is not connected to chargenet{seen}. "
            "They come back when it connects."
        )
    central = offline
    if central is None and state.site_has_upstream:
        central = (
            "Configuration, the authorization cache, the local list, reservations and data transfers belong to the "
            "site's upstream central system (the site has an upstream): send these commands from there."
        )
    return {"all": offline, "central": central}


async def _station_page(
    request: Request, signed: Signed, station_id: str, *, status_code: int = 200, **context: Any
) -> Response:
    console = console_of(request)
    async with console.reading() as session:
        station = await stations.get_station(session, signed.caller, station_id)
        site = await sites.get_site(session, signed.caller, station.site_id)
        local_list = await localauth.list_entries(session, signed.caller, PageRequest(1), site_id=site.id)
        company = await companies.get_company(session, signed.caller, site.company_id)
        points = await charge_points.charge_points_of_stations(session, signed.caller, console.stations, [station_id])
        state = await charge_points.station_state(session, signed.caller, console.stations, station_id)
        active = await transactions.active_on_station(session, signed.caller, station_id)
        notices = await station_notices.recent_notices(session, signed.caller, station_id)
        certificates = (await station_certificates.list_certificates(session, signed.caller, station_id)).items
        logs = (await station_logs.list_logs(session, signed.caller, station_id)).items
        speaks_201 = state.ocpp_version == OCPP201
        device_model = None
        if speaks_201:
            with contextlib.suppress(NotFound):  # none asked for yet
                device_model = await station_notices.device_model_report(session, signed.caller, station_id)
    in_progress = {(tx.charge_point_id, tx.connector_id): tx for tx in active}
    triggers, connector_triggers = (
        (TRIGGERS_201, CONNECTOR_TRIGGERS_201) if speaks_201 else (TRIGGERS, CONNECTOR_TRIGGERS)
    )
    values = {
        "company": company,
        "site": site,
        "station": station,
        "points": points,
        "state": state,
        "notices": notices,
        "certificates": certificates,
        "logs": logs,
        "station_offline": not state.reachable,
        "connector_ids": {point.id: _connector_ids(station, point) for point in points},
        "in_progress": in_progress,
        "disabled": _disabled_reasons(state, signed.caller, signed.reads_in),
        "reset_types": RESET_TYPES,
        "list_updates": LIST_UPDATES,
        "availability": AVAILABILITY,
        "triggers": [(message, message) for message in triggers],
        "connector_triggers": [(message, message) for message in connector_triggers],
        "speaks_201": speaks_201,
        "device_model": device_model,
        "report_bases": REPORT_BASES,
        "local_list_empty": not local_list.items,
        "reservation_expires": signed.reads_in.wall(
            console.clock.now() + timedelta(hours=RESERVATION_HOURS)
        ).field_value(seconds=False),  # whole minutes: a field's step counts from its value
        "outcome": None,
        "form": {"key": "keep", "clear_upstream_password": False},
        "version": station.version,  # an edit refused as stale saves, the next time, over what is now shown
        "key_choices": KEY_CHOICES_EDIT,
        "profile_choices": PROFILE_CHOICES,
        "profile_errors": {},
        "profile_stale": None,
        "profile_notice": None,
        "refusals": {refusal.value: refusal.description for refusal in Refusal},
        "stale": None,
        "delete_error": None,
        **context,
    }
    return render(request, "station.html", values, status_code=status_code, signed=signed, active="sites")


async def _show(request: Request, signed: Signed) -> Response:
    return await _station_page(request, signed, request.path_params["station_id"])


# --- commands ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Order:
    """A command as the operator sent it: the form, who sent it and to which station, the units of work that read
    (and, for a log asked of the station, those that write its upload slot and audit), the edge that carries it, when
    it is sent, the zone its form's date-times are read in (the reader's) and where a station uploads."""

    reading: Transactions
    edge: StationCommands
    caller: OperatorCaller
    station_id: str
    form: Mapping[str, str]
    now: datetime
    reads_in: LocalTime
    transaction: Transactions | None = None
    upload_base: str = ""

    async def central(self, action: str, payload: Payload) -> Payload:
        """One of the commands the station answers as it likes (`station_commands.central_command`)."""
        return await station_commands.central_command(
            self.reading, self.edge, self.caller, station_id=self.station_id, action=action, payload=payload
        )


Send = Callable[[Order], Awaitable["Answered"]]


@dataclass(frozen=True)
class Answered:
    status: str | None
    configuration: list[dict[str, Any]] | None = None
    unknown_keys: list[str] | None = None
    detail: str | None = None
    list_version: int | None = None
    data: str | None = None


@dataclass(frozen=True)
class Command:
    label: str
    action: str
    send: Send
    station_wide: bool  # sent to the station as a whole rather than to one connector


def _status_of(answer: Payload | BaseModel) -> Answered:
    if isinstance(answer, charge_point_commands.AvailabilityAnswer) and answer.connectors:
        each = ", ".join(f"connector {c.connector_id}: {c.status}" for c in answer.connectors)
        return Answered(answer.status, detail=each)
    if isinstance(answer, BaseModel):
        return Answered(str(getattr(answer, "status", "")))
    status = answer.get("status")
    return Answered(str(status) if status is not None else None)


def _charge_point(form: Mapping[str, str]) -> str:
    value = form.get("charge_point", "")
    if not value:
        raise InvalidInput("name the charge point", field="charge_point")
    return value


def _connector(form: Mapping[str, str]) -> int:
    number = whole_number(form, "connector", low=1, high=MAX_CONNECTORS_PER_CHARGE_POINT)
    if number is None:
        raise InvalidInput("name the connector", field="connector")
    return number


def _choice(form: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    value = form.get(name, "")
    if value not in choices:
        raise InvalidInput(f"choose one of {', '.join(choices)}", field=name)
    return value


async def _remote_start(order: Order) -> Answered:
    id_tag = order.form.get("id_tag", "").strip()
    if not id_tag:
        raise InvalidInput("type the idTag the session is for", field="id_tag")
    answer = await charge_point_commands.start_session(
        order.reading,
        order.edge,
        order.caller,
        charge_point_id=_charge_point(order.form),
        connector_id=_connector(order.form),
        id_tag=id_tag,
    )
    return Answered(answer.status)


async def _remote_stop(order: Order) -> Answered:
    number = whole_number(order.form, "transaction_id", low=1, high=2**31 - 1)
    if number is None:
        raise InvalidInput("no transaction in progress here", field="transaction_id")
    async with order.reading() as session:
        active = await transactions.active_on_station(session, order.caller, order.station_id)
    if number not in {tx.transaction_id for tx in active}:
        raise Conflict(f"transaction {number} is not in progress on station {order.station_id} (any more)")
    answer = await charge_point_commands.stop_session(order.reading, order.edge, order.caller, transaction_id=number)
    return Answered(answer.status)


async def _unlock(order: Order) -> Answered:
    connector = station_commands.StationConnector(_charge_point(order.form), _connector(order.form))
    answer = await station_commands.unlock(
        order.reading, order.edge, order.caller, station_id=order.station_id, connector=connector
    )
    return _status_of(answer)


def _availability(station_wide: bool) -> Send:
    """ChangeAvailability of the connector the form names, or of the whole station."""

    async def send(order: Order) -> Answered:
        answer = await station_commands.change_availability(
            order.reading,
            order.edge,
            order.caller,
            station_id=order.station_id,
            charge_point_id=None if station_wide else _charge_point(order.form),
            connector_id=None if station_wide else _connector(order.form),
            availability=_choice(order.form, "type", ("Inoperative", "Operative")),
        )
        return _status_of(answer)

    return send


def _trigger(station_wide: bool) -> Send:
    """TriggerMessage for the connector the form names (of the messages about one), or for the whole station."""

    async def send(order: Order) -> Answered:
        answer = await station_commands.trigger(
            order.reading,
            order.edge,
            order.caller,
            station_id=order.station_id,
            requested_message=_choice(order.form, "message", TRIGGERS if station_wide else CONNECTOR_TRIGGERS),
            charge_point_id=None if station_wide else _charge_point(order.form),
            connector_id=None if station_wide else _connector(order.form),
        )
        return _status_of(answer)

    return send


async def _reset(order: Order) -> Answered:
    kind = _choice(order.form, "type", ("Soft", "Hard"))
    return _status_of(
        await station_commands.reset(order.reading, order.edge, order.caller, station_id=order.station_id, kind=kind)
    )


async def _clear_cache(order: Order) -> Answered:
    answer = await order.central("ClearCache", {})
    return _status_of(answer)


async def _request_csr(order: Order) -> Answered:
    answer = await station_certificates.request_csr(
        order.reading, order.edge, order.caller, station_id=order.station_id
    )
    return _status_of(answer)


async def _request_log(order: Order) -> Answered:
    assert order.transaction is not None
    answer = await station_logs.request_log(
        order.reading,
        order.transaction,
        order.edge,
        order.caller,
        station_id=order.station_id,
        upload_base=order.upload_base,
        now=order.now,
    )
    named = f"; it will upload {answer.file_name}" if answer.file_name else ""
    return Answered(answer.status, detail=f"log request {answer.request_id}{named}")


def _configuration_keys(answer: Payload) -> list[dict[str, Any]]:
    """The keys as the station listed them; entries that are not what OCPP says they are shown as they came."""
    keys = answer.get("configurationKey")
    rows: list[dict[str, Any]] = []
    for item in keys if isinstance(keys, list) else []:
        if isinstance(item, dict):
            value = item.get("value")
            rows.append(
                {
                    "key": str(item.get("key", "")),
                    "readonly": item.get("readonly") is True,
                    "value": None if value is None else str(value),
                }
            )
    return sorted(rows, key=lambda row: row["key"])


async def _get_configuration(order: Order) -> Answered:
    wanted = [key.strip() for key in order.form.get("keys", "").split(",") if key.strip()]
    payload: Payload = {"key": wanted} if wanted else {}
    answer = await order.central("GetConfiguration", payload)
    unknown = answer.get("unknownKey")
    return Answered(
        None,
        configuration=_configuration_keys(answer),
        unknown_keys=[str(key) for key in unknown] if isinstance(unknown, list) else [],
    )


async def _change_configuration(order: Order) -> Answered:
    key = order.form.get("key", "").strip()
    if not key:
        raise InvalidInput("type the key to change", field="key")
    payload: Payload = {"key": key, "value": order.form.get("value", "")}
    answer = await order.central("ChangeConfiguration", payload)
    return _status_of(answer)


def _bounded_text(form: Mapping[str, str], name: str, longest: int, *, required: str | None = None) -> str | None:
    """Field `name` as typed (None when blank), at most `longest` characters; blank is refused with `required`."""
    value = form.get(name, "")
    if not value.strip():
        if required is not None:
            raise InvalidInput(required, field=name)
        return None
    if len(value) > longest:
        raise InvalidInput(f"must be at most {longest} characters, got {len(value)}", field=name)
    return value


def _reservation_id(form: Mapping[str, str]) -> int:
    number = whole_number(form, "reservation_id", low=0, high=INT32_MAX)
    if number is None:
        raise InvalidInput("type the reservation's number", field="reservation_id")
    return number


async def _reserve(order: Order) -> Answered:
    id_tag = text(order.form, "id_tag")
    if not id_tag:
        raise InvalidInput("type the idTag the connector is reserved for", field="id_tag")
    expires = local_instant(order.form, "expires", order.reads_in)
    if expires is None:
        raise InvalidInput("say when the reservation expires", field="expires")
    if expires <= order.now:
        raise InvalidInput(f"must be in the future (it is {order.reads_in.text(order.now)} now)", field="expires")
    answer = await station_commands.reserve_now(
        order.reading,
        order.edge,
        order.caller,
        station_id=order.station_id,
        connector=station_commands.StationConnector(_charge_point(order.form), _connector(order.form)),
        id_tag=id_tag,
        expires_at=expires,
        reservation_id=_reservation_id(order.form),
        parent_id_tag=optional_text(order.form, "parent_id_tag"),
    )
    return _status_of(answer)


async def _cancel_reservation(order: Order) -> Answered:
    payload: Payload = {"reservationId": _reservation_id(order.form)}
    answer = await order.central("CancelReservation", payload)
    return _status_of(answer)


async def _send_local_list(order: Order) -> Answered:
    version = whole_number(order.form, "list_version", low=1, high=INT32_MAX)
    if version is None:
        raise InvalidInput("type the version the station is to record for the list", field="list_version")
    update = _choice(order.form, "update_type", station_commands.LOCAL_LIST_UPDATES)
    answer = await station_commands.send_local_list(
        order.reading,
        order.edge,
        order.caller,
        station_id=order.station_id,
        list_version=version,
        limits=frames.DEFAULT_LIMITS,
        update_type="Full" if update == "Full" else "Differential",
    )
    return _status_of(answer)


async def _local_list_version(order: Order) -> Answered:
    answer = await order.central("GetLocalListVersion", {})
    version = answer.get("listVersion")
    return Answered(None, list_version=version if isinstance(version, int) else None)


async def _data_transfer(order: Order) -> Answered:
    vendor = _bounded_text(order.form, "vendor_id", MAX_VENDOR_ID, required="type the vendor's id")
    payload: Payload = {"vendorId": vendor}
    message = _bounded_text(order.form, "message_id", MAX_MESSAGE_ID)
    if message is not None:
        payload["messageId"] = message
    data = _bounded_text(order.form, "data", MAX_DATA)
    if data is not None:
        payload["data"] = data
    answer = await order.central("DataTransfer", payload)
    carried = answer.get("data")
    return Answered(
        str(answer.get("status", "")) or None,
        data=None if carried is None else carried if isinstance(carried, str) else json.dumps(carried),
    )


def _variable(form: Mapping[str, str]) -> commands201.VariableRef:
    component = _bounded_text(form, "component", MAX_VARIABLE_NAME, required="type the component's name")
    variable = _bounded_text(form, "variable", MAX_VARIABLE_NAME, required="type the variable's name")
    assert component is not None and variable is not None
    return commands201.VariableRef(component.strip(), variable.strip())


def _name_of(named: Any) -> str:
    return str(named.get("name", "?")) if isinstance(named, dict) else "?"


def _variable_rows(results: Any) -> list[dict[str, Any]]:
    """GetVariables' or SetVariables' results as rows of the configuration table: the variable, its value (or the
    station's status for it when it gave no value), and whether it can be changed."""
    rows: list[dict[str, Any]] = []
    for item in results if isinstance(results, list) else []:
        if isinstance(item, dict):
            value = item.get("attributeValue")
            status = str(item.get("attributeStatus", ""))
            rows.append(
                {
                    "key": f"{_name_of(item.get('component'))}.{_name_of(item.get('variable'))}",
                    "value": str(value) if value is not None else status,
                    "readonly": status == "Rejected",
                }
            )
    return rows


async def _get_variables(order: Order) -> Answered:
    answer = await station_commands.get_variables(
        order.reading, order.edge, order.caller, station_id=order.station_id, variables=[_variable(order.form)]
    )
    return Answered(None, configuration=_variable_rows(answer.get("getVariableResult")), unknown_keys=[])


async def _set_variables(order: Order) -> Answered:
    value = order.form.get("value", "")
    if len(value) > MAX_VARIABLE_VALUE:
        raise InvalidInput(f"must be at most {MAX_VARIABLE_VALUE} characters", field="value")
    answer = await station_commands.set_variables(
        order.reading, order.edge, order.caller, station_id=order.station_id, values=[(_variable(order.form), value)]
    )
    results = answer.get("setVariableResult")
    first = results[0] if isinstance(results, list) and results else None
    return Answered(str(first.get("attributeStatus")) if isinstance(first, dict) else None)


async def _get_base_report(order: Order) -> Answered:
    base = _choice(order.form, "report_base", tuple(value for value, _ in REPORT_BASES))
    answer = await station_commands.request_base_report(
        order.reading, order.edge, order.caller, station_id=order.station_id, report_base=base
    )
    return Answered(
        str(answer.get("status", "")) or None,
        detail=f"report {answer.get('requestId')}; it shows below as its parts arrive (reload the page)",
    )


COMMANDS: dict[str, Command] = {
    "remote-start": Command("Start charging", "RemoteStartTransaction", _remote_start, False),
    "remote-stop": Command("Stop charging", "RemoteStopTransaction", _remote_stop, False),
    "unlock": Command("Unlock", "UnlockConnector", _unlock, False),
    "availability": Command("Change availability", "ChangeAvailability", _availability(False), False),
    "trigger": Command("Trigger message", "TriggerMessage", _trigger(False), False),
    "reset": Command("Reset", "Reset", _reset, True),
    "station-availability": Command("Change availability", "ChangeAvailability", _availability(True), True),
    "station-trigger": Command("Trigger message", "TriggerMessage", _trigger(True), True),
    "clear-cache": Command("Clear cache", "ClearCache", _clear_cache, True),
    "request-csr": Command("Ask for a new certificate", "SignCertificate trigger", _request_csr, True),
    "request-log": Command("Ask for its log", "GetDiagnostics / GetLog", _request_log, True),
    "get-configuration": Command("Read configuration", "GetConfiguration", _get_configuration, True),
    "change-configuration": Command("Change configuration", "ChangeConfiguration", _change_configuration, True),
    "get-variables": Command("Read variable", "GetVariables", _get_variables, True),
    "set-variables": Command("Change variable", "SetVariables", _set_variables, True),
    "get-base-report": Command("Device model report", "GetBaseReport", _get_base_report, True),
    "reserve": Command("Reserve", "ReserveNow", _reserve, False),
    "cancel-reservation": Command("Cancel reservation", "CancelReservation", _cancel_reservation, True),
    "send-local-list": Command("Send local list", "SendLocalList", _send_local_list, True),
    "local-list-version": Command("Read local list version", "GetLocalListVersion", _local_list_version, True),
    "data-transfer": Command("Data transfer", "DataTransfer", _data_transfer, True),
}


def _region(form: Mapping[str, str]) -> str:
    """The answer region of the form that sent the command: `answer-...`, from the form's own hidden field."""
    region = form.get("region", "")
    if region.startswith("answer-") and len(region) <= 40 and region.replace("-", "").isalnum():
        return region
    return "answer-station"


def _target(command: Command, form: Mapping[str, str], station_id: str) -> str:
    if command.station_wide:
        return f"station {station_id}"
    return f"connector {form.get('connector', '?')} of charge point {form.get('charge_point', '?')}"


async def _send(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    station_id = request.path_params["station_id"]
    form = await submitted(request)
    async with console.reading() as session:
        station = await stations.get_station(session, signed.caller, station_id)  # NotFound for another company's
    command = COMMANDS.get(form.get("command", ""))
    if command is None:
        raise InvalidInput("not a command this page sends", field="command")
    if not command.station_wide and form.get("charge_point", "") not in station.charge_point_ids:
        raise NotFound("charge point", f"{form.get('charge_point', '')} of station {station_id}")
    caller = signed.caller
    outcome = Outcome(
        _region(form), command.label, command.action, _target(command, form, station_id), "answered", status=None
    )
    try:
        reading, edge = _runtime(console, station_id)
        order = Order(
            reading,
            edge,
            caller,
            station_id,
            form,
            console.clock.now(),
            signed.reads_in,
            console.transaction,
            console.upload_url or console.public_url,
        )
        answered = await command.send(order)
        outcome = replace(
            outcome,
            status=answered.status,
            detail=answered.detail,
            configuration=answered.configuration,
            unknown_keys=answered.unknown_keys,
            list_version=answered.list_version,
            data=answered.data,
        )
    except StationRejected as error:
        if error.status == "AlreadyStopped":  # our refusal, before anything was sent
            outcome = replace(outcome, kind="refused", detail="That transaction has already stopped.")
        else:
            outcome = replace(outcome, status=error.status)  # the station's own answer
    except StationAnswerFailed as error:
        what = f"CALLERROR {error.code}" if error.code else "an answer that breaks the OCPP schema"
        outcome = replace(outcome, kind="callerror", status=what, detail=error.description or None)
    except StationDidNotAnswer as error:
        outcome = replace(outcome, kind="silent", detail=error.reason)
    except StationNotConnected as error:
        outcome = replace(outcome, kind="offline", detail=error.message)
    except InvalidInput as error:
        errors = field_errors(error, COMMAND_FIELDS, "command")
        outcome = replace(outcome, kind="invalid", detail=error.detail, errors=errors)
    except Conflict as error:
        outcome = replace(outcome, kind="refused", detail=error.message)
    outcome = replace(outcome, at=console.clock.now())
    if is_htmx(request):
        return render(request, "_command_outcome.html", {"outcome": outcome}, status_code=outcome.http_status)
    return await _station_page(request, signed, station_id, status_code=outcome.http_status, outcome=outcome)


async def _download_log(request: Request, signed: Signed) -> Response:
    """A log the station uploaded, as a file (any operator who sees the station)."""
    console = console_of(request)
    station_id, log_id = request.path_params["station_id"], request.path_params["log_id"]
    if console.data_dir is None:
        raise NotFound("log", f"{log_id} of station {station_id}")
    async with console.reading() as session:
        found = await station_logs.log_file(session, signed.caller, console.data_dir, station_id, log_id)
    return FileResponse(found.path, media_type="application/octet-stream", filename=found.view.file_name)


# --- keys and delete ------------------------------------------------------------------------------------------


async def _update(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    station_id = request.path_params["station_id"]
    form = await submitted(request)
    kept = {"key": form.get("key", ""), "clear_upstream_password": bool(form.get("clear_upstream_password"))}
    try:
        choice = key_choice(form, KEY_CHOICES_EDIT)
        key = {"keep": None, "generate": new_authorization_key(), "given": form.get("password", ""), "none": None}[
            choice
        ]
        if choice == "given" and not key:
            raise InvalidInput("type the key, or choose another option", field="password")
        async with console.transaction() as session:
            changed = await stations.update_station(
                session,
                signed.caller,
                hasher_of(request),
                cipher_of(request),
                station_id,
                now=console.clock.now(),
                password=key,
                clear_password=choice == "none",
                upstream_password=form.get("station_upstream_password") or None,
                clear_upstream_password=bool(kept["clear_upstream_password"]),
                expected_version=version_of(form),
            )
    except InvalidInput as error:
        errors = field_errors(error, STATION_FIELDS, "key")
        return await _station_page(
            request, signed, station_id, status_code=422, form=kept, errors=errors, **edited(form)
        )
    except StaleChange as error:
        return await _station_page(request, signed, station_id, status_code=409, form=kept, stale=error.message)
    if choice == "generate":
        return key_page(request, signed, changed, key, created_now=False)
    return redirect(console.url(f"/stations/{station_id}"))


async def _delete(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    station_id = request.path_params["station_id"]
    form = await submitted(request)
    try:
        async with console.transaction() as session:
            station = await stations.get_station(session, signed.caller, station_id)
            await stations.delete_station(
                session,
                signed.caller,
                station_id,
                now=console.clock.now(),
                stations=console.stations,
                expected_version=version_of(form),
            )
    except Conflict as error:  # connected, metered, has transactions, or changed meanwhile
        return await _station_page(request, signed, station_id, status_code=409, delete_error=error.message)
    return go_to(request, console.url(f"/sites/{station.site_id}"))


async def _set_security_profile(request: Request, signed: Signed) -> Response:
    """Raise a station's security profile, or (owners) lower it: then the page says the station itself must be
    reconfigured on site, since stations refuse to lower their own."""
    console = console_of(request)
    station_id = request.path_params["station_id"]
    form = await submitted(request)
    try:
        async with console.transaction() as session:
            before = await stations.get_station(session, signed.caller, station_id)
            changed = await stations.update_station(
                session,
                signed.caller,
                hasher_of(request),
                cipher_of(request),
                station_id,
                now=console.clock.now(),
                security_profile=form.get("security_profile", ""),
                expected_version=version_of(form),
            )
    except InvalidInput as error:
        errors = {"security_profile": error.detail}
        return await _station_page(request, signed, station_id, status_code=422, profile_errors=errors)
    except StaleChange as error:
        return await _station_page(request, signed, station_id, status_code=409, profile_stale=error.message)
    if changed.security_profile < before.security_profile:
        notice = (
            f"Security profile lowered to {changed.security_profile}. Reconfigure the station on site: a station "
            "refuses to lower its own profile, so it keeps connecting as before until someone sets it there."
        )
        return await _station_page(request, signed, station_id, profile_notice=notice)
    return redirect(console.url(f"/stations/{station_id}"))


PROFILE_CHOICES = (
    ("0", "0: no password (closed networks only)"),
    ("1", "1: password (HTTP Basic) over ws:// or wss://"),
    ("2", "2: password over TLS (wss:// only)"),
    ("3", "3: TLS with a client certificate from the company's station CA, no password"),
)


def routes() -> list[Route]:
    admin = Role.ADMIN
    return [
        Route("/stations/{station_id}/security-profile", page(_set_security_profile, role=admin), methods=["POST"]),
        Route("/stations/{station_id}", page(_show), methods=["GET"]),
        Route("/stations/{station_id}", page(_update, role=admin), methods=["POST"]),
        Route("/stations/{station_id}/delete", page(_delete, role=admin), methods=["POST"]),
        Route("/stations/{station_id}/commands", page(_send, role=admin), methods=["POST"]),
        Route("/stations/{station_id}/logs/{log_id:int}", page(_download_log), methods=["GET"]),
    ]
