"""Commands to a station from its operator (`chargenet admin station ...`).

Reset, unlock, availability and trigger are the API's station commands: those for one charge point go through
`charge_point_commands`, with the operator's reach (every site); those for the station as a whole (a reset, the
station's own availability, a trigger without a connector) go to the station itself. The other central-system commands
the edge sends (`proxy.COMMAND_ACTIONS`: configuration, cache, local list, reservations, data transfer) are for
stations without an upstream: where the site has an upstream central system they are its business, and a
second source of them would fight it (`Conflict`).

Every command goes through `Edge.command`, which reaches a station held by another process through the store.
Each function takes `reading`, units of work that only read (`Store.read`): it looks up what it needs in one and
waits for the station after it, holding no unit of work while the station answers.
Each function raises `NotFound`, `InvalidInput` for values OCPP would refuse, and the edge's errors
(`StationNotConnected`, `StationDidNotAnswer`, `StationAnswerFailed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from chargenet.domain.generations import OCPP16, OCPP201
from chargenet.domain.scopes import Scope
from chargenet.edge.ocpp16 import frames
from chargenet.edge.ocpp16.errors import LocalProtocolError
from chargenet.edge.ocpp16.frames import Call, FrameLimits, Payload
from chargenet.edge.ocpp16.proxy import ocpp_time
from chargenet.edge.ocpp201 import commands as commands201
from chargenet.errors import Conflict, InvalidInput, NotFound
from chargenet.ports import StationCommands
from chargenet.services import charge_point_commands
from chargenet.services.callers import Caller
from chargenet.services.charge_point_commands import AvailabilityAnswer, CommandAnswer, checked, generation_of, worded
from chargenet.services.localauth import entries_of_site, fits_16, validate_id_tag_for
from chargenet.services.reach import reachable_station, site_of
from chargenet.store.db import Transactions

LocalListUpdate = Literal["Full", "Differential"]
LOCAL_LIST_UPDATES: tuple[LocalListUpdate, ...] = ("Full", "Differential")


@dataclass(frozen=True, slots=True)
class StationTarget:
    station_id: str
    site_id: str
    charge_point_ids: list[str]
    has_upstream: bool
    generation: str = OCPP16

    def charge_point(self, charge_point_id: str | None) -> str:
        """The charge point named, or the station's only one when none is."""
        if charge_point_id is None:
            if len(self.charge_point_ids) == 1:
                return self.charge_point_ids[0]
            # The body is sound; the station's layout (several charge points) is what leaves it ambiguous: 409.
            raise Conflict(f"station {self.station_id} has charge points {', '.join(self.charge_point_ids)}: name one")
        if charge_point_id not in self.charge_point_ids:
            raise NotFound("charge point", f"{charge_point_id} of station {self.station_id}")
        return charge_point_id


@dataclass(frozen=True, slots=True)
class StationConnector:
    """One connector of the station a command names: its number on the charge point named, or on the station's
    only charge point when none is."""

    charge_point_id: str | None
    connector_id: int


async def _station(
    reading: Transactions, caller: Caller, station_id: str, *, central_only: bool = False
) -> StationTarget:
    """The station, if the caller's `charge-points:write` reaches its site; `NotFound` otherwise."""
    async with reading() as session:
        row = await reachable_station(session, caller, Scope.CHARGE_POINTS_WRITE, station_id)
        site = await site_of(session, row)
        generation = await generation_of(session, row.id)
        target = StationTarget(
            row.id, row.site_id, row.layout().charge_point_ids, site.upstream_url is not None, generation
        )
    if central_only and target.has_upstream:
        raise Conflict(
            f"station {station_id}'s site has an upstream central system, which owns its configuration, local "
            "list, reservations and data transfers: send this command from there"
        )
    return target


async def _to_station(edge: StationCommands, target: StationTarget, action: str, payload: Payload) -> Payload:
    """`action` to the station as a whole, in its generation's words (`charge_point_commands.worded`)."""
    return await _ask(edge, target, worded(target.generation, action, payload, None))


async def _ask(edge: StationCommands, target: StationTarget, command: commands201.Command) -> Payload:
    """The command sent, and the station's answer in the API's words (`ocpp201.commands.answer_in_api_words`)."""
    answer = await edge.command(target.station_id, command.action, command.payload)
    return commands201.answer_in_api_words(command.action, answer) if target.generation == OCPP201 else answer


async def _to_charge_point(
    reading: Transactions, edge: StationCommands, caller: Caller, charge_point_id: str, action: str, payload: Payload
) -> CommandAnswer:
    """`action` to one charge point as the API sends it (`charge_point_commands`), to the connector its payload
    names."""
    connector_id = int(payload.get("connectorId", 0))
    return await charge_point_commands.charge_point_command(
        reading,
        edge,
        caller,
        charge_point_id=charge_point_id,
        action=action,
        payload=payload,
        connector_id=connector_id,
    )


async def reset(reading: Transactions, edge: StationCommands, caller: Caller, *, station_id: str, kind: str) -> Payload:
    target = await _station(reading, caller, station_id)
    return await _to_station(edge, target, "Reset", {"type": kind})


async def unlock(
    reading: Transactions, edge: StationCommands, caller: Caller, *, station_id: str, connector: StationConnector
) -> CommandAnswer:
    target = await _station(reading, caller, station_id)
    payload = {"connectorId": connector.connector_id}
    return await _to_charge_point(
        reading, edge, caller, target.charge_point(connector.charge_point_id), "UnlockConnector", payload
    )


async def change_availability(
    reading: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    station_id: str,
    charge_point_id: str | None,
    connector_id: int | None,
    availability: str,
) -> Payload | AvailabilityAnswer:
    """Without a charge point or connector, the station itself (OCPP connector 0); otherwise as the API does it."""
    target = await _station(reading, caller, station_id)
    if charge_point_id is None and connector_id is None:
        payload = {"connectorId": 0, "type": availability}
        return await _to_station(edge, target, "ChangeAvailability", payload)
    return await charge_point_commands.change_availability(
        reading,
        edge,
        caller,
        charge_point_id=target.charge_point(charge_point_id),
        connector_id=connector_id or 0,
        availability=availability,
    )


async def trigger(
    reading: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    station_id: str,
    requested_message: str,
    charge_point_id: str | None,
    connector_id: int | None,
) -> Payload | CommandAnswer:
    target = await _station(reading, caller, station_id)
    payload: Payload = {"requestedMessage": requested_message}
    if connector_id is None:
        return await _to_station(edge, target, "TriggerMessage", payload)
    charge_point = target.charge_point(charge_point_id)
    return await _to_charge_point(
        reading, edge, caller, charge_point, "TriggerMessage", {**payload, "connectorId": connector_id}
    )


async def central_command(
    reading: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    station_id: str,
    action: str,
    payload: Payload,
    limits: FrameLimits = frames.DEFAULT_LIMITS,
) -> Payload:
    """GetConfiguration, ChangeConfiguration, ClearCache, GetLocalListVersion, CancelReservation or DataTransfer,
    to a station without an upstream; the station's answer as it came. A command that does not fit in one frame
    (`limits`) is the caller's to shorten: `InvalidInput`, before the station is asked."""
    target = await _station(reading, caller, station_id, central_only=True)
    command = worded(target.generation, action, payload, None)
    try:
        frames.serialize_frame(Call("x" * 36, command.action, command.payload), limits)
    except LocalProtocolError:
        raise InvalidInput(f"{action} does not fit in one OCPP frame ({limits.max_frame_bytes} bytes)") from None
    return await _ask(edge, target, command)


async def send_local_list(
    reading: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    station_id: str,
    list_version: int,
    limits: FrameLimits,
    update_type: LocalListUpdate = "Full",
) -> Payload:
    """SendLocalList: the site's whole local authorization list, for the station to decide those tags itself while
    it cannot reach the edge. `Full` replaces the list the station has; `Differential` adds or changes each of the
    site's tags there and leaves the station's others as they are. `charge-points:write` on the station is what it
    takes. A 2.0.1 station gets each tag with its type; a 1.6 station never gets a tag (or parent) over 20
    characters: those are left out and named in the answer's `skippedIdTags` (decisions.md §5 "idTokens")."""
    target = await _station(reading, caller, station_id, central_only=True)
    async with reading() as session:
        entries = await entries_of_site(session, target.site_id)
    authorization = []
    skipped = []
    for entry in entries:
        if target.generation == OCPP16 and not (
            fits_16(entry.id_tag) and (entry.parent_id_tag is None or fits_16(entry.parent_id_tag))
        ):
            skipped.append(entry.id_tag)
            continue
        info: Payload = {"status": entry.status}
        if entry.expires_at is not None:
            info["expiryDate"] = ocpp_time(entry.expires_at)
        if entry.parent_id_tag is not None:
            info["parentIdTag"] = entry.parent_id_tag
        item: Payload = {"idTag": entry.id_tag, "idTagInfo": info}
        if target.generation == OCPP201:
            item["idTokenType"] = entry.id_token_type
        authorization.append(item)
    payload: Payload = {
        "listVersion": list_version,
        "updateType": update_type,
        "localAuthorizationList": authorization,
    }
    command = worded(target.generation, "SendLocalList", payload, None)
    try:
        frames.serialize_frame(Call("x" * 36, command.action, command.payload), limits)
    except LocalProtocolError:
        raise InvalidInput(
            f"the site's list of {len(entries)} tags does not fit in one OCPP frame ({limits.max_frame_bytes} bytes)",
            field="localAuthorizationList",
        ) from None
    answer = await _ask(edge, target, command)
    return {**answer, "skippedIdTags": skipped} if skipped else answer


async def reserve_now(
    reading: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    station_id: str,
    connector: StationConnector,
    id_tag: str,
    expires_at: datetime,
    reservation_id: int,
    parent_id_tag: str | None = None,
) -> CommandAnswer:
    """ReserveNow of one connector. Connector 0 (a reservation of no particular connector) is refused: on a
    station with several charge points it would reserve the whole station. The tags are up to 20 characters for a
    1.6 station (idTag), 36 for a 2.0.1 one (idToken)."""
    target = await _station(reading, caller, station_id, central_only=True)
    if connector.connector_id < 1:
        raise InvalidInput("a reservation names a connector numbered from 1", field="connector")
    validate_id_tag_for(target.generation, id_tag, "id-tag")
    payload: Payload = {
        "connectorId": connector.connector_id,
        "expiryDate": ocpp_time(expires_at),
        "idTag": id_tag,
        "reservationId": reservation_id,
    }
    if parent_id_tag is not None:
        payload["parentIdTag"] = validate_id_tag_for(target.generation, parent_id_tag, "parent-id-tag")
    return await _to_charge_point(
        reading, edge, caller, target.charge_point(connector.charge_point_id), "ReserveNow", payload
    )


# OCPP 2.0.1's own: the device model's variables and its report ---------------------------------------------


async def _station_201(reading: Transactions, caller: Caller, station_id: str, action: str) -> StationTarget:
    """A station without an upstream (variables are the central system's, as 1.6's configuration is) that speaks
    2.0.1: `InvalidInput` for a 1.6 one, whose configuration keys are read and changed instead."""
    target = await _station(reading, caller, station_id, central_only=True)
    if target.generation != OCPP201:
        raise InvalidInput(
            f"{action} is OCPP 2.0.1's; station {station_id} speaks OCPP 1.6: read or change its configuration instead"
        )
    return target


async def get_variables(
    reading: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    station_id: str,
    variables: list[commands201.VariableRef],
    attribute_type: str | None = None,
) -> Payload:
    """GetVariables; the station's answer (`getVariableResult`) as it came."""
    await _station_201(reading, caller, station_id, "GetVariables")
    return await _send_201(edge, station_id, commands201.get_variables(variables, attribute_type))


async def set_variables(
    reading: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    station_id: str,
    values: list[tuple[commands201.VariableRef, str]],
    attribute_type: str | None = None,
) -> Payload:
    """SetVariables; the station's answer (`setVariableResult`, a status per variable) as it came."""
    await _station_201(reading, caller, station_id, "SetVariables")
    return await _send_201(edge, station_id, commands201.set_variables(values, attribute_type))


async def request_base_report(
    reading: Transactions, edge: StationCommands, caller: Caller, *, station_id: str, report_base: str
) -> Payload:
    """GetBaseReport with a fresh `requestId`: the station's answer and that id (`{"status", "requestId"}`). The
    report itself comes in NotifyReport parts, stored as they arrive and read assembled
    (`station_notices.device_model_report`)."""
    await _station_201(reading, caller, station_id, "GetBaseReport")
    request_id = charge_point_commands.new_station_request_id()
    answer = await _send_201(edge, station_id, commands201.get_base_report(request_id, report_base))
    return {**answer, "requestId": request_id}


async def _send_201(edge: StationCommands, station_id: str, command: commands201.Command) -> Payload:
    return await edge.command(station_id, command.action, checked(OCPP201, command).payload)
