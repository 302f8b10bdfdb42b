"""Commands to a charge point over the API (decisions.md §1 "Sessions over the API"): a session started and
stopped (RemoteStartTransaction, RemoteStopTransaction), and Reset, UnlockConnector, ChangeAvailability and
TriggerMessage.

Each function finds the station behind a charge point or transaction (checking the caller's reach: `sessions:write`
for sessions, `charge-points:write` for the other commands), sends the command through the `StationCommands`
port, and turns the station's answer into a result or an error: `StationNotConnected` (503),
`StationDidNotAnswer` (504), `StationAnswerFailed` (502: a CALLERROR or an answer that breaks its schema),
`StationRejected` (409 for sessions), `NotFound` (404, also for what the caller may not see). A command's lookup
runs in a unit of work of `reading` (`Store.read`) that ends before the station is asked; a partner's session
start (`request_session`) looks up and stores its request in one unit of `transaction` before, and the station's
answer in another after.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain.generations import OCPP16, OCPP201
from chargenet.domain.scopes import Scope
from chargenet.domain.session_requests import RequestStatus
from chargenet.domain.tenants import (
    ConnectorAddress,
    StationLayout,
    charge_point_connector_ids,
    ocpp_connector_id,
)
from chargenet.edge.ocpp16 import frames
from chargenet.edge.ocpp16.errors import LocalProtocolError, PayloadViolation
from chargenet.edge.ocpp16.frames import Payload
from chargenet.edge.ocpp201 import commands as commands201
from chargenet.edge.ocpp201 import frames as frames201
from chargenet.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    StationCommandError,
    StationDidNotAnswer,
    StationNotConnected,
    StationRejected,
)
from chargenet.ports import StationCommands
from chargenet.services import session_requests
from chargenet.services.callers import Caller
from chargenet.services.localauth import validate_id_tag
from chargenet.services.reach import reachable_on_site
from chargenet.services.views import View, optional
from chargenet.store.db import Transactions
from chargenet.store.models import ChargePoint, EdgeTransaction, MeterSession, Station, StationPresence

MAX_SESSION_ID_TAG = 36  # OCPP 2.0.1's IdToken is 36 characters; 1.6's idTag 20


class CommandAnswer(View):
    """The station's answer to a command (its `status`)."""

    status: str


class ConnectorAnswer(View):
    connector_id: int
    status: str


class AvailabilityAnswer(View):
    """The least favourable answer of the charge point's connectors, and each one's when there are several."""

    status: str
    connectors: list[ConnectorAnswer] | None = optional()


@dataclass(frozen=True, slots=True)
class Target:
    site_id: str
    station_id: str
    ocpp_connector_id: int
    layout: StationLayout
    address: ConnectorAddress
    generation: str = OCPP16

    @property
    def evse(self) -> commands201.Evse:
        return commands201.evse_of(self.layout, self.address)


async def generation_of(session: AsyncSession, station_id: str) -> str:
    """The OCPP generation of the station's latest connection, as its stored presence says (1.6 until it first
    connected); the edge refuses a command worded for the other one should the station have changed since."""
    presence = await session.get(StationPresence, station_id)
    return OCPP201 if presence is not None and presence.ocpp_version == OCPP201 else OCPP16


def worded(generation: str, action: str, payload: Payload, evse: commands201.Evse | None) -> commands201.Command:
    """A command body of the API (1.6's words) as the station's generation says it (`ocpp201.commands`), checked
    against that generation's schema: `InvalidInput` naming the field for what the station would refuse (an idTag
    over 1.6's 20 characters, a trigger the generation does not have). `evse` is where the body's connector is on
    a 2.0.1 station; None for the whole station."""
    if generation == OCPP201:
        return checked(OCPP201, commands201.command(action, payload, evse))
    if action == "TriggerMessage":
        commands201.check_trigger_for_16(str(payload.get("requestedMessage")))
    return checked(OCPP16, commands201.Command(action, payload))


def checked(generation: str, command: commands201.Command) -> commands201.Command:
    """`command` as `generation`'s schema takes it, or `InvalidInput` naming the field (its values come from an
    operator or a partner)."""
    build = frames201.build_call if generation == OCPP201 else frames.build_call
    try:
        build("check", command.action, command.payload)
    except LocalProtocolError as exc:
        cause = exc.__cause__
        if isinstance(cause, PayloadViolation):
            raise InvalidInput(f"{command.action}: {cause.message}", field=cause.field or None) from None
        raise InvalidInput(exc.message) from None
    return command


async def _target(
    session: AsyncSession, caller: Caller, scope: Scope, charge_point_id: str, connector_id: int
) -> Target:
    point = await session.get(ChargePoint, charge_point_id)
    point = await reachable_on_site(session, caller, scope, point, NotFound("charge point", charge_point_id))
    station = await session.get(Station, point.station_id)
    assert station is not None
    layout = station.layout()
    per = layout.connectors_per_charge_point
    if connector_id < 0 or (per is not None and connector_id > per):
        # A connector the charge point does not have is an object named in the body that does not exist.
        raise NotFound("connector", f"{connector_id} of {charge_point_id}")
    address = ConnectorAddress(charge_point_id, connector_id)
    generation = await generation_of(session, station.id)
    return Target(station.site_id, station.id, ocpp_connector_id(layout, address), layout, address, generation)


async def _command(edge: StationCommands, target: Target, action: str, payload: Payload) -> Payload:
    command = worded(target.generation, action, payload, target.evse)
    return await edge.command(target.station_id, command.action, command.payload)


def _accepted(station_id: str, action: str, answer: Payload) -> CommandAnswer:
    status = str(answer.get("status"))
    if status != "Accepted":
        raise StationRejected(station_id, action, status)
    return CommandAnswer(status=status)


async def start_session(
    reading: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    charge_point_id: str,
    connector_id: int,
    id_tag: str,
) -> CommandAnswer:
    """RemoteStartTransaction; `{"status": "Accepted"}` once the station accepted it. The API's starts are
    followed by a request of their own (`request_session`)."""
    check_session_start(connector_id, id_tag)
    async with reading() as session:
        target = await session_target(session, caller, charge_point_id, connector_id)
    return await _remote_start(edge, target, id_tag, new_station_request_id())


def new_station_request_id() -> int:
    """An id a 2.0.1 station names back (RequestStartTransaction's `remoteStartId`, GetBaseReport's `requestId`):
    positive and 32-bit, fresh (random) for each request, so that what answers it names that request alone."""
    return secrets.randbelow(2**31 - 1) + 1


def check_session_start(connector_id: int, id_tag: str) -> None:
    """`InvalidInput` for a session that cannot start: an idTag that is none or over 2.0.1's 36 characters, or no
    numbered connector. A 1.6 station takes 20 at most (`check_tag_for`)."""
    if not 1 <= len(id_tag) <= MAX_SESSION_ID_TAG:
        raise InvalidInput(f"must be 1 to {MAX_SESSION_ID_TAG} characters", field="idTag")
    if connector_id < 1:
        raise InvalidInput("a session starts on a connector numbered from 1", field="connectorId")


async def session_target(session: AsyncSession, caller: Caller, charge_point_id: str, connector_id: int) -> Target:
    """The station and connector a session starts on, if the caller's `sessions:write` reaches them."""
    return await _target(session, caller, Scope.SESSIONS_WRITE, charge_point_id, connector_id)


def check_tag_for(target: Target, id_tag: str) -> None:
    """A tag longer than 20 characters never reaches a 1.6 station (decisions.md §5 "idTokens")."""
    if target.generation == OCPP16:
        validate_id_tag(id_tag)


async def _remote_start(
    edge: StationCommands, target: Target, id_tag: str, remote_start_id: int, id_token_type: str | None = None
) -> CommandAnswer:
    """RemoteStartTransaction (RequestStartTransaction, with `remote_start_id` and the token's type, to a 2.0.1
    station) to `target`; `StationRejected` unless the station accepted it."""
    check_tag_for(target, id_tag)
    if target.generation == OCPP201:
        command = commands201.request_start(id_tag, remote_start_id, target.evse, id_token_type)
        answer = await edge.command(target.station_id, command.action, command.payload)
        return _accepted(target.station_id, command.action, answer)
    payload: Payload = {"connectorId": target.ocpp_connector_id, "idTag": id_tag}
    answer = await _command(edge, target, "RemoteStartTransaction", payload)
    return _accepted(target.station_id, "RemoteStartTransaction", answer)


class SessionRequested(CommandAnswer):
    """The station's answer to a session started over the API, and the request that follows it."""

    request_id: str


def _request_status(exc: StationCommandError) -> RequestStatus:
    """What a request records when its command did not end with the station's acceptance."""
    if isinstance(exc, StationRejected):
        return RequestStatus.REJECTED
    if isinstance(exc, StationNotConnected):
        return RequestStatus.NOT_CONNECTED
    if isinstance(exc, StationDidNotAnswer):
        return RequestStatus.TIMEOUT
    return RequestStatus.FAILED  # StationAnswerFailed: a CALLERROR, or an answer that breaks its schema


async def request_session(
    transaction: Transactions,
    edge: StationCommands,
    caller: Caller,
    clock: Clock,
    *,
    charge_point_id: str,
    connector_id: int,
    id_tag: str,
    id_token_type: str | None = None,
) -> SessionRequested:
    """RemoteStartTransaction for a partner, followed by a session request (`session_requests`): stored before
    the station is asked, its answer recorded after, each in a unit of its own. A refusal, a station not connected
    or silent, raise as `start_session`'s do, naming the request (`request_id`); refused input stores nothing."""
    check_session_start(connector_id, id_tag)
    remote_start_id = new_station_request_id()
    async with transaction() as session:
        target = await session_target(session, caller, charge_point_id, connector_id)
        check_tag_for(target, id_tag)  # before the request is stored: refused input stores nothing
        request_id = await session_requests.open_request(
            session,
            caller,
            site_id=target.site_id,
            station_id=target.station_id,
            charge_point_id=charge_point_id,
            connector_id=connector_id,
            ocpp_connector_id=target.ocpp_connector_id,
            id_tag=id_tag,
            now=clock.now(),
            remote_start_id=remote_start_id if target.generation == OCPP201 else None,
        )
    try:
        answer = await _remote_start(edge, target, id_tag, remote_start_id, id_token_type)
    except StationCommandError as exc:
        async with transaction() as session:
            await session_requests.record_answer(session, request_id, _request_status(exc), now=clock.now())
        exc.request_id = request_id
        raise
    async with transaction() as session:
        await session_requests.record_answer(session, request_id, RequestStatus.ACCEPTED, now=clock.now())
    return SessionRequested(status=answer.status, request_id=request_id)


async def stop_session(
    reading: Transactions, edge: StationCommands, caller: Caller, *, transaction_id: int
) -> CommandAnswer:
    """RemoteStopTransaction, sent to the transaction's own station only."""
    async with reading() as session:
        missing = NotFound("transaction", str(transaction_id))
        row = await session.get(EdgeTransaction, transaction_id)
        if row is None:
            metered = await session.get(MeterSession, transaction_id)
            await reachable_on_site(session, caller, Scope.SESSIONS_WRITE, metered, missing)
            raise Conflict(
                f"transaction {transaction_id} was detected from a meter; it cannot be stopped remotely "
                "and ends when the meter sees the charging stop"
            )
        row = await reachable_on_site(session, caller, Scope.SESSIONS_WRITE, row, missing)
        if row.stopped_at is not None:
            raise StationRejected(row.station_id, "RemoteStopTransaction", "AlreadyStopped")
        station_id, station_transaction_id = row.station_id, row.station_transaction_id
    # A 2.0.1 station named the transaction itself; a 1.6 one took the edge's id.
    if station_transaction_id is not None:
        command = commands201.request_stop(station_transaction_id)
    else:
        command = commands201.Command("RemoteStopTransaction", {"transactionId": transaction_id})
    answer = await edge.command(station_id, command.action, command.payload)
    return _accepted(station_id, command.action, answer)


async def charge_point_command(
    reading: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    charge_point_id: str,
    action: str,
    payload: Payload,
    connector_id: int = 0,
) -> CommandAnswer:
    """Reset, UnlockConnector, ChangeAvailability, TriggerMessage: the station's answer, whatever it is."""
    async with reading() as session:
        target = await _target(session, caller, Scope.CHARGE_POINTS_WRITE, charge_point_id, connector_id)
    if "connectorId" in payload:
        payload = {**payload, "connectorId": target.ocpp_connector_id}
    answer = await _command(edge, target, action, payload)
    return CommandAnswer(status=str(answer.get("status")))


# The least favourable answer of several stands for them all: a charge point is only as available as its
# least available connector.
_AVAILABILITY_ANSWERS = ("Rejected", "Scheduled", "Accepted")


async def change_availability(
    reading: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    charge_point_id: str,
    connector_id: int,
    availability: str,
) -> AvailabilityAnswer:
    """ChangeAvailability of one connector of a charge point, or with connector 0 of the whole charge point.

    On a station with several charge points OCPP's connector 0 is the whole station, so a charge point's own
    availability goes to each of its connectors, one command each; the answer is then the least favourable
    status (Rejected, Scheduled, Accepted) with each connector's own under `connectors`."""
    async with reading() as session:
        target = await _target(session, caller, Scope.CHARGE_POINTS_WRITE, charge_point_id, connector_id)
    if target.generation == OCPP201:
        # 2.0.1 names a whole EVSE (a charge point), so one command does what 1.6 does one connector at a time.
        payload: Payload = {"connectorId": target.ocpp_connector_id, "type": availability}
        answer = await _command(edge, target, "ChangeAvailability", payload)
        return AvailabilityAnswer(status=str(answer.get("status")))
    ids = charge_point_connector_ids(target.layout, target.address)
    statuses = []
    for ocpp_id in ids:  # in turn: the station takes one command at a time anyway
        answer = await _command(edge, target, "ChangeAvailability", {"connectorId": ocpp_id, "type": availability})
        statuses.append(str(answer.get("status")))
    if len(ids) == 1:
        return AvailabilityAnswer(status=statuses[0])
    worst = next((s for s in _AVAILABILITY_ANSWERS if s in statuses), statuses[0])
    per_connector = [ConnectorAnswer(connector_id=j, status=s) for j, s in enumerate(statuses, start=1)]
    return AvailabilityAnswer(status=worst, connectors=per_connector)
