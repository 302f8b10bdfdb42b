"""The edge at run time: connected stations, their upstream links, and what each station CALL does.

`Edge` is the registry (a second connection of a station replaces the first) and the entry point for commands
(API, CLI). `StationLink` answers one station's CALLs: it records what happened and publishes events through the
outbox in the same transaction, then answers per the relay rules of `protocol.proxy`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain.connectors import KnownStatus
from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus
from chargenet.domain.tenants import locate_connector
from chargenet.edge import records, relay, statuses
from chargenet.edge.authorizers import Authorizer, AuthorizeRequest, ask_plugins
from chargenet.edge.committer import GroupCommitter
from chargenet.edge.connection import AnswerLate, CallTimer, ConnectionLost, OwnFaults, RpcConnection
from chargenet.edge.core import authorize as auth
from chargenet.edge.core import transactions as tx
from chargenet.edge.core.status import TransitionCounts
from chargenet.edge.messagelog import MessageLog
from chargenet.edge.ocpp16 import frames, meter_values, proxy
from chargenet.edge.ocpp16.errors import CallErrorReceived, CallTimedOut, PayloadViolation, UnsupportedAction
from chargenet.edge.ocpp16.frames import Call, FrameLimits, Payload
from chargenet.edge.ocpp16.proxy import Fallback, Handling, UpstreamFailure
from chargenet.edge.ocpp16.session import SessionLimits
from chargenet.edge.upstream import UpstreamLink, UpstreamLinks, UpstreamSettings, UpstreamUnavailable
from chargenet.errors import StationAnswerFailed, StationDidNotAnswer, StationNotConnected
from chargenet.keys import KeyStore
from chargenet.outbox import Outbox
from chargenet.store.db import Store
from chargenet.store.models import EdgeTransaction
from chargenet.workers import LoopWorker

log = logging.getLogger(__name__)

CloseTransport = Callable[[int, str], Awaitable[None]]

IDLE_SWEEP_INTERVAL = 10.0


class Edge:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        outbox: Outbox,
        keys: KeyStore,
        *,
        limits: FrameLimits = frames.DEFAULT_LIMITS,
        command_timeout: timedelta = timedelta(seconds=30),
        upstream_timeout: timedelta = timedelta(seconds=10),
        upstream_late_wait: timedelta = proxy.LATE_ANSWER_WAIT,
        authorizers: Sequence[Authorizer] = (),
        message_log: MessageLog | None = None,
        time_station_call: CallTimer | None = None,
        time_upstream_call: CallTimer | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.outbox = outbox
        self.keys = keys
        self.limits = limits
        self.command_timeout = command_timeout
        self.upstream_timeout = upstream_timeout
        self.upstream_late_wait = upstream_late_wait
        self.authorizers = list(authorizers)
        self.message_log = message_log or MessageLog(store, clock)
        self.transitions = TransitionCounts()
        self.own_faults = OwnFaults()
        self.upstream_links = UpstreamLinks()
        self.time_station_call = time_station_call
        self.time_upstream_call = time_upstream_call
        self._links: dict[str, StationLink] = {}
        # The heartbeat interval each station was last given (proxy Rule 7), kept across its reconnects: a
        # station may carry on after a reconnect without a new BootNotification.
        self._intervals: dict[str, int] = {}
        self._committer = GroupCommitter(store)
        self._status_writer = statuses.bulk_writer(outbox)

    def unit(self) -> AbstractAsyncContextManager[AsyncSession]:
        """A unit of database work sharing a group commit (see `committer`)."""
        return self._committer.unit()

    @property
    def connected_stations(self) -> list[str]:
        return sorted(self._links)

    @property
    def connected_count(self) -> int:
        return len(self._links)

    def is_connected(self, station_id: str) -> bool:
        return station_id in self._links

    async def attach(
        self, station: records.StationInfo, send: Callable[[str], Awaitable[None]], close: CloseTransport
    ) -> StationLink:
        """A station connected. An older connection of the same station is closed first (it is stale: the
        station itself has moved on), so commands never go to a dead socket."""
        previous = self._links.pop(station.station_id, None)
        if previous is not None:
            await previous.shut(1000, "replaced by a new connection")
        link = StationLink(self, station, send, close)
        self._links[station.station_id] = link
        self.message_log.connection(station.station_id, True, self.clock.now())
        await link.open_upstream()
        return link

    async def detach(self, link: StationLink) -> None:
        if self._links.get(link.station.station_id) is link:
            del self._links[link.station.station_id]
            self.message_log.connection(link.station.station_id, False, self.clock.now())
        await link.shut(None, "")

    async def command(self, station_id: str, action: str, payload: Payload) -> Payload:
        """Send a command to a station and return its answer: over this process's connection to it, or through
        the process holding its connection (`relay`).

        Raises `StationNotConnected`; `StationDidNotAnswer` on a timeout or a lost connection; `StationAnswerFailed`
        on a CALLERROR or an answer that breaks its schema."""
        if station_id in self._links:
            return await self.command_here(station_id, action, payload)
        # A margin over the call timeout: the other process's own timeout decides first.
        timeout = self.command_timeout + timedelta(seconds=5)
        return await relay.forward(self.store, self.clock, station_id, action, payload, answer_timeout=timeout)

    async def command_here(self, station_id: str, action: str, payload: Payload) -> Payload:
        """Send a command over this process's own connection to the station (what the relay calls)."""
        link = self._links.get(station_id)
        if link is None:
            raise StationNotConnected(station_id)
        try:
            return await link.call_station(action, payload)
        except CallTimedOut:
            raise StationDidNotAnswer(station_id, action, "timed out") from None
        except ConnectionLost:
            raise StationDidNotAnswer(station_id, action, "connection lost") from None
        except CallErrorReceived as exc:
            raise StationAnswerFailed(station_id, action, exc.code.value, exc.description) from None
        except PayloadViolation as exc:
            raise StationAnswerFailed(station_id, action, None, f"{exc.field}: {exc.message}") from None

    async def write_status(self, write: statuses.StatusWrite) -> None:
        await self._committer.bulk(self._status_writer, write)

    async def record_boot(self, boot: records.Boot) -> None:
        """Written with the boots of the group commit's batch, in one statement."""
        await self._committer.bulk(records.record_boots, boot)

    def heartbeat_interval(self, station_id: str) -> int:
        """The heartbeat interval `station_id` was last given, in seconds."""
        return self._intervals.get(station_id, proxy.HEARTBEAT_INTERVAL)

    def gave_interval(self, station_id: str, interval: int) -> None:
        self._intervals[station_id] = interval

    async def close_idle(self) -> int:
        """Close every connection silent for two of its heartbeat intervals and a minute; returns how many."""
        now = self.clock.now()
        idle = [link for link in self._links.values() if now - link.last_seen >= link.idle_limit]
        for link in idle:
            log.info("closing idle station", extra={"fields": {"station": link.station.station_id}})
            await link.shut(1000, "idle")
        return len(idle)

    async def close(self) -> None:
        for link in list(self._links.values()):
            await link.shut(1001, "server shutting down")
        self._links.clear()
        await self._committer.close()


class StationLink:
    def __init__(
        self, edge: Edge, station: records.StationInfo, send: Callable[[str], Awaitable[None]], close: CloseTransport
    ):
        self.edge = edge
        self.station = station
        self._close_transport = close
        self.rpc = RpcConnection(
            f"station:{station.station_id}",
            send,
            edge.clock,
            self.handle,
            limits=edge.limits,
            session_limits=SessionLimits(call_timeout=edge.command_timeout),
            log_frame=edge.message_log.logger(station.station_id, "station"),
            on_own_fault=edge.own_faults,
            time_call=edge.time_station_call,
        )
        self.upstream: UpstreamLink | None = None
        self.last_seen = edge.clock.now()  # when the station last sent anything, a ping included
        self._shut = False
        self._connectors: dict[tuple[str, int], statuses.LoadedConnector] = {}

    async def open_upstream(self) -> None:
        if not self.station.upstream_url:
            return
        password = None
        if self.station.upstream_password is not None:
            password = self.edge.keys.credential_cipher().decrypt(self.station.upstream_password)
        edge = self.edge
        settings = UpstreamSettings(
            edge.store,
            edge.clock,
            edge.limits,
            edge.upstream_timeout,
            edge.upstream_late_wait,
            edge.message_log,
            edge.own_faults,
            edge.upstream_links,
            edge.time_upstream_call,
        )
        edge.message_log.upstream(self.station.station_id, False)  # down until it first connects
        self.upstream = UpstreamLink(settings, self.station, self.station.upstream_url, password, self.relay_to_station)
        await self.upstream.start()

    async def shut(self, code: int | None, reason: str) -> None:
        if self._shut:
            return
        self._shut = True
        if self.upstream is not None:
            await self.upstream.close()
        await self.rpc.close()
        if code is not None:
            try:
                await self._close_transport(code, reason)
            except Exception:
                log.debug("closing a station socket failed", exc_info=True)

    def heard(self) -> None:
        """The station sent something: a frame of any kind counts against the idle limit."""
        self.last_seen = self.edge.clock.now()

    @property
    def idle_limit(self) -> timedelta:
        return proxy.idle_limit(self.edge.heartbeat_interval(self.station.station_id))

    def _answered(self, action: str, payload: Payload, answer: Payload) -> None:
        station_id = self.station.station_id
        current = self.edge.heartbeat_interval(station_id)
        given = proxy.interval_given(action, payload, answer, current)
        if given != current:
            self.edge.gave_interval(station_id, given)

    async def call_station(self, action: str, payload: Payload) -> Payload:
        """Send a CALL to the station (a command, or one relayed from the upstream) and return its answer."""
        answer = await self.rpc.call(action, payload)
        self._answered(action, payload, answer)
        return answer

    @property
    def upstream_state(self) -> auth.UpstreamState:
        if self.upstream is None:
            return auth.UpstreamState.NONE
        return auth.UpstreamState.CONNECTED if self.upstream.connected else auth.UpstreamState.AWAY

    # Upstream -> station ---------------------------------------------------------------------------------

    async def relay_to_station(self, call: Call) -> Payload | None:
        proxy.check_upstream_may_send(call.action, call.unique_id)
        async with self.edge.unit() as session:
            ids = tx.IdMap()
            upstream_id = _upstream_transaction_id(call)
            if upstream_id is not None:
                ids = await records.id_map_for(session, self.station.station_id, upstream_id=upstream_id)
        try:
            payload = tx.rewrite_for_station(call.action, call.payload, ids)
        except tx.UnknownUpstreamId:
            return dict(tx.REJECTED_BY_EDGE)
        try:
            return await self.call_station(call.action, payload)
        except (CallTimedOut, ConnectionLost):
            return None  # proxy Rule 5: the upstream sees the station's silence

    # Station -> edge -------------------------------------------------------------------------------------

    async def handle(self, call: Call) -> Payload | None:
        self.heard()
        handler = _HANDLERS.get(call.action)
        queue_empty = self.upstream is None or self.upstream.queued == 0
        route = proxy.route_station_call(call.action, self.upstream_state, queue_empty)
        if route is Handling.UNSUPPORTED:
            raise UnsupportedAction(call.action, unique_id=call.unique_id)
        if handler is None:
            return await self._forward_or_local(call, route)
        return await handler(self, call, route)

    async def _forward_or_local(self, call: Call, route: Handling, local: Payload | None = None) -> Payload:
        answer = local if local is not None else proxy.local_answer(call.action, self.edge.clock.now())
        if route is not Handling.FORWARD:
            return answer
        try:
            return await self._upstream_call(call.action, call.payload)
        except _UpstreamFailed as failed:
            if proxy.fallback(call.action, failed.kind) is Fallback.RELAY_ERROR:
                if failed.error is not None:
                    raise failed.error from None
                raise UnsupportedAction(call.action, unique_id=call.unique_id) from None
            return answer

    async def _upstream_call(self, action: str, payload: Payload, *, listen_late: bool = False) -> Payload:
        """The upstream's answer, or `_UpstreamFailed`; with `listen_late`, a call that timed out after it was sent
        fails carrying the answer still listened for (proxy Rule 4a)."""
        assert self.upstream is not None
        try:
            return await self.upstream.call(action, payload, listen_late=listen_late)
        except CallErrorReceived as exc:
            raise _UpstreamFailed(UpstreamFailure.CALL_ERROR, exc) from None
        except AnswerLate as exc:
            raise _UpstreamFailed(UpstreamFailure.TIMEOUT, None, exc.answer) from None
        except (CallTimedOut, ConnectionLost, UpstreamUnavailable, PayloadViolation):
            raise _UpstreamFailed(UpstreamFailure.TIMEOUT, None) from None

    async def _boot(self, call: Call, route: Handling) -> Payload:
        await self.edge.record_boot(records.boot_of(self.station.station_id, call.payload, self.edge.clock.now()))
        answer = await self._forward_or_local(call, route)
        self._answered(call.action, call.payload, answer)
        return answer

    async def _heartbeat(self, call: Call, route: Handling) -> Payload:
        self.edge.message_log.heartbeat(self.station.station_id, self.edge.clock.now())
        return await self._forward_or_local(call, route)

    async def _status(self, call: Call, route: Handling) -> Payload:
        p = call.payload
        now = self.edge.clock.now()
        address = locate_connector(self.station.layout, p["connectorId"])  # InvalidInput: bad connector id
        key = (address.charge_point_id, address.connector_id)
        loaded = self._connectors.get(key)
        if loaded is None:
            loaded = await self.edge.store.read_statement(
                lambda connection: statuses.load_connector(connection, address, p["connectorId"])
            )
        reported = KnownStatus(
            ConnectorStatus(p["status"]),
            ChargePointErrorCode(p["errorCode"]),
            p.get("info"),
            datetime.fromisoformat(p["timestamp"]) if "timestamp" in p else now,
        )
        write, assessment = statuses.decide(
            self.station.station_id, self.station.site_id, address, loaded, reported, now
        )
        # The pre-status-notification hook: recorded and published before anything goes upstream.
        try:
            await self.edge.write_status(write)
        except BaseException:
            self._connectors.pop(key, None)  # the store is the truth again after a failed write
            raise
        last = reported if assessment.decision.becomes_current else loaded.last
        self._connectors[key] = statuses.LoadedConnector(exists=True, last=last)
        self.edge.transitions.record(assessment)
        if not assessment.expected:
            log.warning(
                "unexpected connector transition",
                extra={"fields": {"station": self.station.station_id, "transition": assessment.transition}},
            )
        return await self._forward_or_local(call, route)

    async def _authorize(self, call: Call, route: Handling) -> Payload:
        id_tag = call.payload["idTag"]
        decision, upstream_answer = await self._decide(id_tag, None, ask_upstream=True)
        async with self.edge.unit() as session:
            await records.publish_authorize(session, self.edge.outbox, self.station, id_tag, decision)
        if upstream_answer is not None:
            return upstream_answer
        return {"idTagInfo": decision.id_tag_info()}

    async def _decide(
        self, id_tag: str, connector_id: int | None, *, ask_upstream: bool
    ) -> tuple[auth.AuthDecision, Payload | None]:
        """Walk the authorization chain. Returns the decision, and the upstream's Authorize answer when it
        decided (relayed to the station as it came)."""
        site_id = self.station.site_id
        upstream = (
            self.upstream_state
            if ask_upstream
            else (auth.UpstreamState.AWAY if self.upstream is not None else auth.UpstreamState.NONE)
        )
        async with self.edge.unit() as session:
            ctx = auth.AuthorizeContext(
                id_tag=id_tag,
                now=self.edge.clock.now(),
                local_entry=await records.local_entry(session, site_id, id_tag),
                plugin_count=len(self.edge.authorizers),
                upstream=upstream,
                cached=await records.cached_authorization(session, site_id, id_tag),
                has_active_transaction=await records.has_active_transaction(session, site_id, id_tag),
            )
        step = auth.begin(ctx)
        if step is auth.NextSource.PLUGINS:
            request = AuthorizeRequest(site_id, self.station.station_id, id_tag, connector_id)
            step = auth.after_plugins(ctx, await ask_plugins(self.edge.authorizers, request, self.edge.clock))
        if isinstance(step, auth.AuthDecision):
            return step, None
        try:
            answer = await self._upstream_call("Authorize", {"idTag": id_tag})
        except _UpstreamFailed:
            return auth.after_upstream(ctx, None), None
        decision = auth.after_upstream(ctx, answer["idTagInfo"])
        cached = auth.cache_entry(id_tag, answer["idTagInfo"], ctx.now)
        if cached is not None:
            async with self.edge.unit() as session:
                await records.cache_authorization(session, site_id, cached)
        relayed = (
            answer if decision.status.value == answer["idTagInfo"]["status"] else {"idTagInfo": decision.id_tag_info()}
        )
        return decision, relayed

    def _check_connector(self, connector_id: int) -> None:
        locate_connector(self.station.layout, connector_id)  # InvalidInput -> PropertyConstraintViolation

    async def _start(self, call: Call, route: Handling) -> Payload:
        p = call.payload
        self._check_connector(p["connectorId"])
        id_tag = p["idTag"]
        now = self.edge.clock.now()
        async with self.edge.unit() as session:
            existing = await records.find_start(session, records.start_key(self.station, p))
        if existing is not None:
            return _repeat_answer(existing)
        async with self.edge.unit() as session:
            closed = await records.close_superseded(session, self.edge.outbox, self.station, p)
        if closed:
            log.warning(
                "open transactions closed by a new start on their connector",
                extra={"fields": {"station": self.station.station_id, "connector": p["connectorId"], "ids": closed}},
            )
        # StartTransaction re-evaluates the tag without asking the upstream: the forwarded start itself is the
        # upstream's question, and its answer carries the upstream's idTagInfo.
        decision, _ = await self._decide(id_tag, p["connectorId"], ask_upstream=False)
        started = await self._store_start(p, decision, now)
        if not started.is_new:
            async with self.edge.unit() as session:
                existing = await records.find_start(session, records.start_key(self.station, p))
            assert existing is not None
            return _repeat_answer(existing)
        transaction_id = started.transaction_id
        if route is Handling.FORWARD:
            try:
                upstream_answer = await self._upstream_call("StartTransaction", p, listen_late=True)
            except _UpstreamFailed as failed:
                queue = proxy.fallback(call.action, failed.kind) is Fallback.ANSWER_AND_QUEUE
                sequence = None
                async with self.edge.unit() as session:
                    if queue:
                        sequence = await records.enqueue(
                            session, self.station.station_id, call.action, p, transaction_id, now
                        )
                    else:
                        await records.refuse_upstream(session, transaction_id)
                    await records.publish_authorize(
                        session, self.edge.outbox, self.station, id_tag, decision, ocpp_connector_id=p["connectorId"]
                    )
                if sequence is not None:
                    # Queued so that nothing overtakes it; sent again only if the late answer cannot come.
                    self._queued(sequence, failed.late_answer)
                return {"transactionId": transaction_id, "idTagInfo": decision.id_tag_info()}
            if decision.source is not auth.AuthSource.LOCAL_LIST:
                decision = auth.after_upstream(_start_context(id_tag, now), upstream_answer["idTagInfo"])
            async with self.edge.unit() as session:
                await records.link_upstream(session, transaction_id, upstream_answer, auth_status=decision.status.value)
                await records.publish_authorize(
                    session, self.edge.outbox, self.station, id_tag, decision, ocpp_connector_id=p["connectorId"]
                )
            return tx.for_station_start(transaction_id, {"idTagInfo": decision.id_tag_info()})
        sequence = None
        async with self.edge.unit() as session:
            if route is Handling.QUEUE:
                sequence = await records.enqueue(session, self.station.station_id, call.action, p, transaction_id, now)
            await records.publish_authorize(
                session, self.edge.outbox, self.station, id_tag, decision, ocpp_connector_id=p["connectorId"]
            )
        if sequence is not None:
            self._queued(sequence)
        return {"transactionId": transaction_id, "idTagInfo": decision.id_tag_info()}

    async def _store_start(self, payload: Payload, decision: auth.AuthDecision, now: datetime) -> records.StartOutcome:
        for _ in range(2):
            try:
                async with self.edge.unit() as session:
                    return await records.start_transaction(
                        session, self.edge.outbox, self.station, payload, now, auth_status=decision.status.value
                    )
            except IntegrityError as exc:
                # An identical start committed concurrently (a station resending on a second connection):
                # the retry finds it and answers with its id.
                if not records.is_duplicate_start(exc):
                    raise
        raise RuntimeError("StartTransaction could not be stored")

    async def _stop(self, call: Call, route: Handling) -> Payload:
        p = call.payload
        now = self.edge.clock.now()
        async with self.edge.unit() as session:
            outcome = await records.stop_transaction(session, self.edge.outbox, self.station, p, now)
        self.edge.message_log.samples(
            self.station.station_id, p["transactionId"], meter_values.reported(p.get("transactionData")), last=True
        )
        if outcome is not tx.StopOutcome.STOPPED or route is Handling.LOCAL:
            return {}  # a repeat or a stranger's stop is acknowledged and goes nowhere (transactions Rule 3)
        return await self._transaction_message(call, route, p["transactionId"])

    async def _meter_values(self, call: Call, route: Handling) -> Payload:
        p = call.payload
        self._check_connector(p["connectorId"])
        transaction_id = p.get("transactionId")
        if transaction_id is not None:
            # Buffered for the log's next batch: no store round trip per frame, whoever owns the transaction
            # (a session reads only its own station's samples).
            self.edge.message_log.samples(
                self.station.station_id, transaction_id, meter_values.reported(p.get("meterValue"))
            )
        if route is Handling.LOCAL:
            return {}
        if transaction_id is not None:
            async with self.edge.unit() as session:
                row = await session.get(EdgeTransaction, transaction_id)
            if row is None or row.station_id != self.station.station_id:
                return {}  # values for a transaction the station does not own stay with us (logged)
        return await self._transaction_message(call, route, transaction_id)

    async def _transaction_message(self, call: Call, route: Handling, transaction_id: int | None) -> Payload:
        now = self.edge.clock.now()
        late_answer = None
        if route is Handling.FORWARD:
            async with self.edge.unit() as session:
                ids = await records.id_map_for(session, self.station.station_id, edge_id=transaction_id)
            try:
                payload = tx.rewrite_for_upstream(call.action, call.payload, ids)
            except tx.UpstreamIdRefused:
                return {}
            except tx.UpstreamIdPending:
                route = Handling.QUEUE
            else:
                try:
                    await self._upstream_call(call.action, payload, listen_late=True)
                    return {}
                except _UpstreamFailed as failed:
                    if proxy.fallback(call.action, failed.kind) is not Fallback.ANSWER_AND_QUEUE:
                        return {}
                    route, late_answer = Handling.QUEUE, failed.late_answer
        if route is Handling.QUEUE:
            async with self.edge.unit() as session:
                sequence = await records.enqueue(
                    session, self.station.station_id, call.action, call.payload, transaction_id, now
                )
            self._queued(sequence, late_answer)
        return {}

    def _queued(self, sequence: int, late_answer: asyncio.Task[Payload] | None = None) -> None:
        if self.upstream is not None:
            self.upstream.enqueued(sequence, late_answer)


class _UpstreamFailed(Exception):
    def __init__(
        self,
        kind: UpstreamFailure,
        error: CallErrorReceived | None,
        late_answer: asyncio.Task[Payload] | None = None,
    ) -> None:
        super().__init__(kind.value)
        self.kind = kind
        self.error = error
        self.late_answer = late_answer  # the call was sent and timed out; its answer is still listened for


def _upstream_transaction_id(call: Call) -> int | None:
    if call.action == "RemoteStopTransaction":
        value = call.payload.get("transactionId")
        return value if isinstance(value, int) else None
    if call.action == "SetChargingProfile":
        value = call.payload.get("csChargingProfiles", {}).get("transactionId")
        return value if isinstance(value, int) else None
    return None


def _repeat_answer(row: EdgeTransaction) -> Payload:
    """A resent StartTransaction gets what the first one got (decisions.md §4), and no event."""
    return {"transactionId": row.id, "idTagInfo": {"status": row.auth_status or "Accepted"}}


def _start_context(id_tag: str, now: datetime) -> auth.AuthorizeContext:
    # Concurrency was already judged when the start was stored; the upstream's own verdict stands as given.
    return auth.AuthorizeContext(id_tag, now, None, 0, auth.UpstreamState.CONNECTED, None, False)


_Handler = Callable[[StationLink, Call, Handling], Awaitable[Payload]]
_HANDLERS: dict[str, _Handler] = {
    "BootNotification": StationLink._boot,
    "Heartbeat": StationLink._heartbeat,
    "StatusNotification": StationLink._status,
    "Authorize": StationLink._authorize,
    "StartTransaction": StationLink._start,
    "StopTransaction": StationLink._stop,
    "MeterValues": StationLink._meter_values,
}


class IdleSweeper(LoopWorker):
    """One task for all connections, rather than a timer per connection."""

    name = "ocpp-idle-sweeper"

    def __init__(self, edge: Edge, interval: float = IDLE_SWEEP_INTERVAL) -> None:
        super().__init__(edge.clock, interval)
        self._edge = edge

    async def run_once(self) -> None:
        await self._edge.close_idle()
