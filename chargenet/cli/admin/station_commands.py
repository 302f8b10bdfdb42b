"""`chargenet admin station reset|unlock|availability|trigger|...`: commands to a connected station, of either
OCPP generation (the use cases word them for it; `get-variables`, `set-variables` and `get-base-report` are
2.0.1's own).

The station is connected to a `chargenet serve` process, never to the CLI: the command travels through the
store to that process and its answer comes back the same way (`chargenet.edge.relay`), so this works while
the server runs, on the same store, like every admin command. The answer is printed as the station gave it
(`--json`: one JSON object). A station not connected, silent, or answering with a CALLERROR exits 1 with a
message saying which.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from chargenet.cli.common import add_verb, emit, instant, run_with_context, settings_flags, table
from chargenet.cli.secret_options import add_secret_option
from chargenet.domain.triggers import MESSAGE_TRIGGERS

if TYPE_CHECKING:
    from pydantic import BaseModel

    from chargenet.context import AppContext
    from chargenet.edge.ocpp16.frames import Payload
    from chargenet.edge.ocpp201.commands import VariableRef
    from chargenet.services.station_commands import StationConnector


def _number(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be at least {minimum}")
        return value

    return parse


def register_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the command verbs to `admin station`."""

    def verb(name: str, text: str, run: Callable[[argparse.Namespace], None]) -> argparse.ArgumentParser:
        parser = add_verb(verbs, name, text, run)
        parser.add_argument("station_id", metavar="STATION_ID")
        return parser

    def charge_point(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--charge-point",
            dest="charge_point_id",
            metavar="CP",
            help="the charge point (needed on a station with several)",
        )

    reset = verb("reset", "reset a connected station", _reset)
    reset.add_argument("--type", dest="kind", choices=["Soft", "Hard"], default="Soft")

    unlock = verb("unlock", "unlock a connector of a connected station", _unlock)
    unlock.add_argument("--connector", required=True, type=_number(1), metavar="N", help="the charge point's own")
    charge_point(unlock)

    availability = verb(
        "availability",
        "make a station, a charge point or a connector operative or inoperative",
        _availability,
    )
    availability.add_argument("--type", dest="availability", required=True, choices=["Operative", "Inoperative"])
    availability.add_argument("--connector", type=_number(0), metavar="N", help="0: the whole charge point")
    charge_point(availability)

    trigger = verb("trigger", "ask a station to send a message now", _trigger)
    trigger.add_argument("--message", dest="requested_message", required=True, choices=MESSAGE_TRIGGERS)
    trigger.add_argument("--connector", type=_number(1), metavar="N")
    charge_point(trigger)

    # Central-system commands for stations without an upstream (see services.station_commands).
    get_configuration = verb("get-configuration", "read a station's configuration keys", _get_configuration)
    get_configuration.add_argument("--key", dest="keys", action="append", metavar="K", help="repeat; none: all")

    change_configuration = verb("change-configuration", "set a station's configuration key", _change_configuration)
    change_configuration.add_argument("--key", required=True, metavar="K")
    # A key's value may be a credential (AuthorizationKey): it can stay out of the process list like any secret.
    add_secret_option(change_configuration, "--value", metavar="V", help="the key's new value", required=True)

    verb("clear-cache", "clear a station's authorization cache", _clear_cache)

    send_list = verb("send-local-list", "send the site's local authorization list to a station", _send_local_list)
    send_list.add_argument("--list-version", dest="list_version", required=True, type=_number(1), metavar="N")
    send_list.add_argument(
        "--update-type",
        dest="update_type",
        choices=["Full", "Differential"],
        default="Full",
        help="Full (the default) replaces the station's list; Differential adds or changes the site's tags there",
    )

    verb("local-list-version", "ask a station which local list version it has", _local_list_version)

    reserve = verb("reserve", "reserve a connector for a tag", _reserve)
    reserve.add_argument("--connector", required=True, type=_number(0), metavar="N", help="the charge point's own")
    reserve.add_argument("--id-tag", dest="id_tag", required=True, metavar="TAG")
    reserve.add_argument("--expires", required=True, type=instant, metavar="ISO", help="ISO 8601 with offset")
    reserve.add_argument("--reservation-id", dest="reservation_id", required=True, type=_number(0), metavar="N")
    reserve.add_argument("--parent-id-tag", dest="parent_id_tag", metavar="TAG")
    charge_point(reserve)

    cancel = verb("cancel-reservation", "cancel a reservation", _cancel_reservation)
    cancel.add_argument("--reservation-id", dest="reservation_id", required=True, type=_number(0), metavar="N")

    # OCPP 2.0.1's own, for stations without an upstream: the device model's variables and its report.
    get_variables = verb("get-variables", "read variables of an OCPP 2.0.1 station", _get_variables)
    get_variables.add_argument(
        "--variable", dest="variables", action="append", required=True, type=_variable, metavar="COMPONENT.VARIABLE"
    )
    set_variables = verb("set-variables", "set variables of an OCPP 2.0.1 station", _set_variables)
    set_variables.add_argument(
        "--set", dest="values", action="append", required=True, type=_variable_value, metavar="COMPONENT.VARIABLE=V"
    )
    report = verb("get-base-report", "ask an OCPP 2.0.1 station for its device model report", _get_base_report)
    report.add_argument(
        "--report-base",
        dest="report_base",
        choices=["ConfigurationInventory", "FullInventory", "SummaryInventory"],
        default="FullInventory",
    )

    transfer = verb("data-transfer", "send a vendor-specific DataTransfer", _data_transfer)
    transfer.add_argument("--vendor-id", dest="vendor_id", required=True, metavar="V")
    transfer.add_argument("--message-id", dest="message_id", metavar="M")
    transfer.add_argument("--data", metavar="D")


def _variable(text: str) -> VariableRef:
    """`COMPONENT.VARIABLE`: a variable of a component without instance or EVSE (the API names those too)."""
    from chargenet.edge.ocpp201.commands import VariableRef

    component, dot, variable = text.partition(".")
    if not (component and dot and variable):
        raise argparse.ArgumentTypeError(f"{text!r} is not COMPONENT.VARIABLE")
    return VariableRef(component, variable)


def _variable_value(text: str) -> tuple[VariableRef, str]:
    name, equals, value = text.partition("=")
    if not equals:
        raise argparse.ArgumentTypeError(f"{text!r} is not COMPONENT.VARIABLE=VALUE")
    return _variable(name), value


def _run(args: argparse.Namespace, action: str, use_case: str, /, **fields: Any) -> None:
    """Call the use case `station_commands.<use_case>` as the operator, on the station the command names, with
    `fields`; print the answer."""
    from pydantic import BaseModel

    from chargenet.edge.ocpp16 import frames
    from chargenet.edge.relay import RelayedCommands
    from chargenet.services import station_commands
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    command = getattr(station_commands, use_case)

    async def run(context: AppContext) -> Payload | BaseModel:
        edge = RelayedCommands(context.store, context.clock)
        result: Payload | BaseModel = await command(
            context.store.read, edge, OPERATOR, station_id=args.station_id, **fields
        )
        return result

    result = run_with_context(args, run)
    # The station's answer as it came, or the use case's view of it; numbers as JSON has them.
    answer: dict[str, Any] = (
        rendered(result) if isinstance(result, BaseModel) else json.loads(frames.dump_payload(result))
    )
    emit(args, answer, _human(args.station_id, action, answer))


def _human(station_id: str, action: str, answer: dict[str, Any]) -> str:
    head = f"{station_id} answered {action}"
    if set(answer) == {"status"}:
        return f"{head}: {answer['status']}"
    if action == "GetConfiguration":
        keys = table(answer.get("configurationKey", []), ["key", "value", "readonly"])
        unknown = answer.get("unknownKey", [])
        return f"{head}:\n{keys}" + (f"\nunknown: {', '.join(unknown)}" if unknown else "")
    lines = [f"  {key}: {value if isinstance(value, str) else json.dumps(value)}" for key, value in answer.items()]
    return "\n".join([f"{head}:", *lines])


def _reset(args: argparse.Namespace) -> None:
    _run(args, "Reset", "reset", kind=args.kind)


def _unlock(args: argparse.Namespace) -> None:
    _run(args, "UnlockConnector", "unlock", connector=_station_connector(args))


def _availability(args: argparse.Namespace) -> None:
    _run(args, "ChangeAvailability", "change_availability", **_connector(args), availability=args.availability)


def _trigger(args: argparse.Namespace) -> None:
    _run(args, "TriggerMessage", "trigger", **_connector(args), requested_message=args.requested_message)


def _connector(args: argparse.Namespace) -> dict[str, Any]:
    """The `--charge-point` and `--connector` of a command about one connector (or, without them, the station)."""
    return {"charge_point_id": args.charge_point_id, "connector_id": args.connector}


def _station_connector(args: argparse.Namespace) -> StationConnector:
    """The `--charge-point` and `--connector` of a command to one connector."""
    from chargenet.services.station_commands import StationConnector

    return StationConnector(args.charge_point_id, args.connector)


def _central(args: argparse.Namespace, action: str, payload: Payload) -> None:
    _run(args, action, "central_command", action=action, payload=payload)


def _get_configuration(args: argparse.Namespace) -> None:
    _central(args, "GetConfiguration", {"key": args.keys} if args.keys else {})


def _change_configuration(args: argparse.Namespace) -> None:
    _central(args, "ChangeConfiguration", {"key": args.key, "value": args.value})


def _clear_cache(args: argparse.Namespace) -> None:
    _central(args, "ClearCache", {})


def _local_list_version(args: argparse.Namespace) -> None:
    _central(args, "GetLocalListVersion", {})


def _cancel_reservation(args: argparse.Namespace) -> None:
    _central(args, "CancelReservation", {"reservationId": args.reservation_id})


def _data_transfer(args: argparse.Namespace) -> None:
    payload: Payload = {"vendorId": args.vendor_id}
    if args.message_id is not None:
        payload["messageId"] = args.message_id
    if args.data is not None:
        payload["data"] = args.data
    _central(args, "DataTransfer", payload)


def _get_variables(args: argparse.Namespace) -> None:
    _run(args, "GetVariables", "get_variables", variables=args.variables)


def _set_variables(args: argparse.Namespace) -> None:
    _run(args, "SetVariables", "set_variables", values=args.values)


def _get_base_report(args: argparse.Namespace) -> None:
    _run(args, "GetBaseReport", "request_base_report", report_base=args.report_base)


def _send_local_list(args: argparse.Namespace) -> None:
    from chargenet.config import load_settings
    from chargenet.edge.ocpp16.frames import FrameLimits

    limits = FrameLimits(max_frame_bytes=load_settings(settings_flags(args)).ocpp_max_frame)
    _run(
        args,
        "SendLocalList",
        "send_local_list",
        list_version=args.list_version,
        limits=limits,
        update_type=args.update_type,
    )


def _reserve(args: argparse.Namespace) -> None:
    _run(
        args,
        "ReserveNow",
        "reserve_now",
        connector=_station_connector(args),
        id_tag=args.id_tag,
        expires_at=args.expires,
        reservation_id=args.reservation_id,
        parent_id_tag=args.parent_id_tag,
    )
