"""One OCPP 2.0.1 station's connection at run time: what each of its CALLs does.

`Station201Link` answers a 2.0.1 station's CALLs: the 2.0.1 face reads each into a core record (`ocpp201.parse`),
the core plans it (`core`, `domain.evse`), one unit of work writes what happened with its events through the
outbox, and the answer goes back in 2.0.1 words (`ocpp201.render`). The events are the same four a 1.6 station
raises (decisions.md §5).

On a site whose upstream takes 2.0.1 the station has a 2.0.1 link to it (`upstream.UpstreamLink`), and each CALL,
once the edge has done its part, is forwarded, answered by the edge, or queued by `ocpp201.proxy`'s table; the
upstream's CALLs are relayed to the station. On a site whose upstream does not take 2.0.1 the edge answers as the
central system itself, as it does for a 1.6 station while its upstream is away (the cache is asked, nothing is
queued), and the station page says why. The link keeps what it derives statuses from (`domain.evse.EvseConnector`)
in memory: a station that reconnects restarts each connector from the status last written for it and the
transaction still open on it (`domain.evse` Rule 5), so a process other than the one it left restarts it alike.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.certificate_requests import CertificateKind, parse_kind
from chargenet.domain.events import ChargePointErrorCode
from chargenet.domain.evse import (
    ChargingState,
    DerivedStatus,
    EvseConnector,
    connector_reported,
    derive,
    fault_reported,
    restored,
    transaction_may_be_open,
    transaction_reported,
)
from chargenet.domain.generations import OCPP201
from chargenet.domain.tenants import ConnectorAddress
from chargenet.edge import records, statuses
from chargenet.edge.authorizers import AuthorizeRequest, ask_plugins
from chargenet.edge.certificates import certificate_signed_logged
from chargenet.edge.connection import ConnectionLost
from chargenet.edge.core import authorize as auth
from chargenet.edge.core import transaction_events as te
from chargenet.edge.core.messages import ConnectorRef, IdToken, StatusReport, TransactionEventKind, TransactionReport
from chargenet.edge.ocpp16.errors import CallTimedOut, UnsupportedAction
from chargenet.edge.ocpp16.frames import Call, Payload
from chargenet.edge.ocpp16.proxy import Fallback, Handling
from chargenet.edge.ocpp201 import parse, proxy, render
from chargenet.edge.ocpp201.dialect import Ocpp201Dialect
from chargenet.edge.station import CloseTransport, EdgeRuntime, LinkBase, UpstreamFailed
from chargenet.edge.upstream import OCPP201_UPSTREAM
from chargenet.store.models import EdgeTransaction, UnstartedTransaction

log = logging.getLogger(__name__)

# Kept as received and shown on the station page.
NOTICES = frozenset(
    {
        "NotifyEvent",
        "NotifyReport",
        "SecurityEventNotification",
        "FirmwareStatusNotification",
        "LogStatusNotification",
        "ReservationStatusUpdate",
    }
)


MAX_RUNNING = 64  # transactions a connection keeps running in memory (a station runs one per EVSE)


class SecurityEvents:
    """SecurityEventNotifications received, by type: read by `/metrics`."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()


class Station201Link(LinkBase):
    generation = OCPP201

    def __init__(
        self,
        edge: EdgeRuntime,
        station: records.StationInfo,
        send: Callable[[str], Awaitable[None]],
        close: CloseTransport,
        security_events: SecurityEvents,
    ):
        super().__init__(edge, station, send, close, Ocpp201Dialect(edge.limits))
        self._evse: dict[ConnectorAddress, EvseConnector] = {}
        self._derived: dict[ConnectorAddress, DerivedStatus] = {}  # the status last written for each
        # The transactions running on this connection, by the station's id for them: their Updated events are
        # planned here and their progress written behind the answers (`_progress`).
        self._running: dict[str, _Running] = {}
        self._security_events = security_events

    @property
    def answers_for_upstream(self) -> bool:
        """The site has an upstream that does not take 2.0.1: the edge answers this station itself."""
        return bool(self.station.upstream_url) and not self.upstream_takes_generation

    @property
    def upstream_state(self) -> auth.UpstreamState:
        """To the authorization chain, an upstream the edge answers for is one that is away: the cache is asked."""
        if self.answers_for_upstream:
            return auth.UpstreamState.AWAY
        return super().upstream_state

    @property
    def _start_state(self) -> auth.UpstreamState:
        """What a start's token is decided with: a connected upstream gets the TransactionEvent itself and is not
        asked first, so what it said of the token before (the cache) counts, as when it is away."""
        state = self.upstream_state
        return auth.UpstreamState.AWAY if state is auth.UpstreamState.CONNECTED else state

    @property
    def _route_state(self) -> auth.UpstreamState:
        """To the relay table, only a link is an upstream: without one there is nothing to forward or queue for."""
        return super().upstream_state

    async def open_upstream(self) -> None:
        if self.upstream_takes_generation:
            await self._link_upstream(OCPP201_UPSTREAM)

    async def relay_to_station(self, call: Call) -> Payload | None:
        """proxy Rule 5: as for 1.6, without ids to rewrite (a 2.0.1 transaction's id is the station's own); the
        upstream's charging profiles are merged with the edge's limits as for 1.6 (decisions.md "Site power")."""
        proxy.check_upstream_may_send(call.action, call.unique_id)
        try:
            if call.action == "SetChargingProfile":
                return await self.upstream_sets_profile(call.payload)
            if call.action == "ClearChargingProfile":
                return await self.upstream_clears_profiles(call.payload)
            return await self.call_station(call.action, call.payload)
        except (CallTimedOut, ConnectionLost):
            return None  # the upstream sees the station's silence

    async def handle(self, call: Call) -> Payload | None:
        self.heard()
        queue_empty = self.upstream is None or self.upstream.queued == 0
        route = proxy.route_station_call(call.action, self._route_state, queue_empty)
        if route is Handling.UNSUPPORTED:
            raise UnsupportedAction(call.action, unique_id=call.unique_id)
        if call.action == "Authorize":
            return await self._authorize(call)
        if call.action == "SignCertificate":
            return await self._sign_certificate(call)
        if call.action == "TransactionEvent":
            local, sequence = await self._transaction_event(call, queue=route is Handling.QUEUE)
            return await self._send_up(call, route, local, sequence)
        if call.action in render.NOT_SUPPORTED:
            return await self._forward_or_local(call, route, None)  # forwarded: the route says so
        handler = _HANDLERS.get(call.action)
        if handler is not None:
            local = await handler(self, call)
        elif call.action in NOTICES:
            local = await self._notice(call)
        else:
            local = render.local_answer(call.action, self.edge.clock.now())
        answer = await self._forward_or_local(call, route, local)
        if call.action == "BootNotification":
            self._answered(call.action, call.payload, answer)  # the interval given, the edge's or the upstream's
        return answer

    # The upstream ------------------------------------------------------------------------------------------

    async def _forward_or_local(self, call: Call, route: Handling, local: Payload | None) -> Payload:
        """The upstream's answer to a forwarded CALL, else the edge's own (`local`; None: the edge has none)."""
        if route is not Handling.FORWARD:
            assert local is not None
            return local
        try:
            return await self._upstream_call(call.action, call.payload)
        except UpstreamFailed as failed:
            if local is None or proxy.fallback(call.action, failed.kind) is Fallback.RELAY_ERROR:
                if failed.error is not None:
                    raise failed.error from None
                raise UnsupportedAction(call.action, unique_id=call.unique_id) from None
            return local

    async def _send_up(self, call: Call, route: Handling, local: Payload, sequence: int | None) -> Payload:
        """A TransactionEvent after the edge applied it: kept (no upstream), queued (at `sequence`, when its own unit
        queued it), or forwarded, whatever the edge made of it, since the upstream follows the station's
        transaction by the station's own id. Forwarded, the station gets the upstream's answer, with the edge's
        idTokenInfo when the upstream gave none; not answered in time, it is queued (proxy Rule 4)."""
        if route is Handling.LOCAL:
            return local
        if route is Handling.QUEUE:
            self._queued(sequence if sequence is not None else await self._enqueue(call))
            return local
        try:
            answer = await self._upstream_call(call.action, call.payload, listen_late=True)
        except UpstreamFailed as failed:
            if proxy.fallback(call.action, failed.kind) is Fallback.ANSWER_AND_QUEUE:
                self._queued(await self._enqueue(call), failed.late_answer)
            return local
        return {**local, **answer}

    async def _enqueue(self, call: Call) -> int:
        async with self.edge.unit() as session:
            return await self._enqueue_in(session, call)

    async def _enqueue_in(self, session: AsyncSession, call: Call) -> int:
        return await records.enqueue(
            session, self.station.station_id, call.action, call.payload, None, self.edge.clock.now()
        )

    async def _boot(self, call: Call) -> Payload:
        booted = parse.station_booted(call.payload)
        now = self.edge.clock.now()
        await self.edge.record_boot(records.boot_of(self.station.station_id, booted, now))
        return render.local_answer(call.action, now)

    def quick_answer(self, call: Call) -> Payload | None:
        # As for 1.6: a Heartbeat the edge answers itself costs no task and no turn of the event loop.
        if call.action != "Heartbeat":
            return None
        queue_empty = self.upstream is None or self.upstream.queued == 0
        if proxy.route_station_call(call.action, self._route_state, queue_empty) is not Handling.LOCAL:
            return None
        self.heard()
        return self._heartbeat_answer()

    async def _heartbeat(self, call: Call) -> Payload:
        return self._heartbeat_answer()

    def _heartbeat_answer(self) -> Payload:
        now = self.edge.clock.now()
        self.edge.message_log.heartbeat(self.station.station_id, now)
        return render.local_answer("Heartbeat", now)

    async def _notice(self, call: Call) -> Payload:
        """Kept as received; a NotifyEvent's Problems also set their connectors' statuses, in the same unit."""
        found = parse.problems(self.station.layout, call.payload) if call.action == "NotifyEvent" else []
        try:
            async with self.edge.unit() as session:
                await records.record_notice(
                    session, self.station.station_id, call.action, call.payload, self.edge.clock.now()
                )
                for problem in found:
                    state = fault_reported(await self._known(problem.connector, session), problem.fault)
                    self._evse[problem.connector.address] = state
                    await self._derive(problem.connector, state, problem.timestamp, session=session)
            await self._statuses_written()
        except BaseException:
            self._forget()
            raise
        if call.action == "SecurityEventNotification":
            self._security_events.counts[call.payload["type"]] += 1
        return {}

    # Statuses ----------------------------------------------------------------------------------------------

    async def _status(self, call: Call) -> Payload:
        report = parse.connector_report(self.station.layout, call.payload)  # InvalidInput: an EVSE never given
        state = connector_reported(await self._known(report.connector), report.state)
        self._evse[report.connector.address] = state
        await self._derive(report.connector, state, report.timestamp, reported=True)
        return {}

    async def _known(self, connector: ConnectorRef, session: AsyncSession | None = None) -> EvseConnector:
        """What the link knows of a connector; the first time on this connection, what the store says of it
        (Rule 5), read in `session` when given."""
        address = connector.address
        known = self._evse.get(address)
        if known is not None:
            return known
        number = connector.station_number
        # One statement each, the second only when it may matter: the first StatusNotification of a connection
        # is on the path a reconnect storm takes.
        if session is None:
            loaded = await self.edge.load_connector(address, number)
        else:
            loaded = await session.run_sync(lambda sync: statuses.load_connector(sync.connection(), address, number))
        last = loaded.last
        transaction_open = False
        if transaction_may_be_open(last.status if last is not None else None):
            transaction_open = await self._transaction_open(address, session)
        if last is None:
            known = restored(None, ChargePointErrorCode.NO_ERROR, None, transaction_open=transaction_open)
        else:
            known = restored(last.status, last.error_code, last.info, transaction_open=transaction_open)
            self._derived[address] = DerivedStatus(last.status, last.error_code, last.info)
        self._connectors[(address.charge_point_id, address.connector_id)] = loaded
        self._evse[address] = known
        return known

    async def _transaction_open(self, address: ConnectorAddress, session: AsyncSession | None) -> bool:
        station_id = self.station.station_id

        def transaction(connection: Connection) -> bool:
            return records.transaction_open_on(connection, station_id, address)

        if session is None:
            return await self.edge.store.read_statement(transaction)
        return await session.run_sync(lambda sync: transaction(sync.connection()))

    def _forget(self) -> None:
        """What this link knew of transactions and connectors may not have been written: the store is the truth
        again."""
        self._evse.clear()
        self._connectors.clear()
        self._derived.clear()
        self._statuses_with_unit.clear()

    async def _derive(
        self,
        connector: ConnectorRef,
        state: EvseConnector,
        timestamp: datetime,
        *,
        reported: bool = False,
        session: AsyncSession | None = None,
    ) -> None:
        """decisions.md §5: the connector's ChargePointStatus derived from what the station said of it (`state`, what
        the link now knows of the connector); an event when it changes (`LinkBase._record_status`). A
        StatusNotification is written as a report even when the status stays; a TransactionEvent that leaves it as
        it was writes nothing. Derived in a unit (`session`), it is handed over with the unit and written with its
        batch's status writes, its caller waiting for `_statuses_written` after the unit."""
        derived = derive(state)
        if derived is None or (not reported and self._derived.get(connector.address) == derived):
            return
        report = StatusReport(connector, parse.known_status(derived, timestamp))
        await self._record_status(report, with_unit=session is not None)
        self._derived[connector.address] = derived

    # Authorization -----------------------------------------------------------------------------------------

    async def _authorize(self, call: Call) -> Payload:
        """The chain decides; with the upstream connected, it asks the upstream for a token that neither the local
        list nor a plugin decided, caches its answer as it came, and the station gets that answer as it came
        unless the edge's own ConcurrentTx changed it (as for 1.6)."""
        token = parse.token_presented(call.payload).token
        decision, relayed = await self._decide(token, publish=True, upstream_call=call.payload)
        return relayed if relayed is not None else {"idTokenInfo": render.id_token_info(decision)}

    async def _decide(
        self, token: IdToken, *, publish: bool, upstream_call: Payload | None = None
    ) -> tuple[auth.AuthDecision, Payload | None]:
        """The authorization chain every token goes through (local list, plugins, the upstream when connected and
        `upstream_call` is the Authorize to send it, else the cache when the site has an upstream), as for 1.6:
        one unit that reads (and, when nobody else is asked, publishes), the plugins and the upstream asked outside
        it, and one that writes. Returns the decision and the upstream's answer to relay as it came, if any."""
        upstream = self.upstream_state if upstream_call is not None else self._start_state
        async with self.edge.unit() as reading:
            ctx = await self._authorize_context(reading, token.value, upstream)
            step = auth.begin(ctx)
            if isinstance(step, auth.AuthDecision) and publish:
                await self._publish(reading, token, step)
        if isinstance(step, auth.AuthDecision):
            return step, None
        if step is auth.NextSource.PLUGINS:
            request = AuthorizeRequest(self.station.site_id, self.station.station_id, token.value, None)
            step = auth.after_plugins(ctx, await ask_plugins(self.edge.authorizers, request, self.edge.clock))
        relayed: Payload | None = None
        cached: auth.CachedAuthorization | None = None
        if isinstance(step, auth.AuthDecision):
            decision = step
        else:
            assert upstream_call is not None
            try:
                answer = await self._upstream_call("Authorize", upstream_call)
            except UpstreamFailed:
                decision = auth.after_upstream(ctx, None)
            else:
                verdict = parse.upstream_verdict(answer["idTokenInfo"])
                decision = auth.after_upstream(ctx, verdict)
                cached = auth.cache_entry(token.value, verdict, ctx.now)
                relayed = answer if decision.status is verdict.status else None
        if publish or cached is not None:
            async with self.edge.unit() as writing:
                if cached is not None:
                    await records.cache_authorization(writing, self.station.site_id, cached)
                if publish:
                    await self._publish(writing, token, decision)
        return decision, relayed

    async def _publish(
        self,
        session: AsyncSession,
        token: IdToken,
        decision: auth.AuthDecision,
        address: ConnectorAddress | None = None,
    ) -> None:
        await records.publish_authorize(
            session,
            self.edge.outbox,
            self.station,
            token.value,
            decision,
            address=address,
            id_token_type=token.type,
        )

    async def _authorize_context(
        self, session: AsyncSession, id_tag: str, upstream: auth.UpstreamState
    ) -> auth.AuthorizeContext:
        site_id = self.station.site_id
        return auth.AuthorizeContext(
            id_tag=id_tag,
            now=self.edge.clock.now(),
            local_entry=await records.local_entry(session, site_id, id_tag),
            plugin_count=len(self.edge.authorizers),
            upstream=upstream,
            cached=await records.cached_authorization(session, site_id, id_tag),
            has_active_transaction=await records.has_active_transaction(session, site_id, id_tag),
        )

    # Transactions ------------------------------------------------------------------------------------------

    async def _transaction_event(self, call: Call, *, queue: bool) -> tuple[Payload, int | None]:
        """One unit that reads, plans (`core.transaction_events`), decides a start's token and writes, and with
        `queue` puts the event in the upstream queue; with plugins to ask about a start's token, a unit that reads
        before them and one that writes after, which plans again on what it reads (as a 1.6 StartTransaction).
        Returns the edge's answer and the event's place in the queue when it was queued here."""
        received = parse.transaction_report(self.station.layout, call.payload)  # InvalidInput: an EVSE never given
        running = self._running.get(received.station_transaction_id)
        if running is not None and received.kind is TransactionEventKind.UPDATED:
            return await self._progress(call, received, running), None  # no unit of its own to queue it in
        decision: auth.AuthDecision | None = None
        sequence: int | None = None
        try:
            async with self.edge.unit() as session:
                report, planned, row, unstarted = await self._plan(session, received)
                if isinstance(planned, te.Start):
                    assert report.token is not None
                    # The upstream is not asked here: the TransactionEvent itself goes to it (`_send_up`).
                    step = auth.begin(await self._authorize_context(session, report.token.value, self._start_state))
                    decision = step if isinstance(step, auth.AuthDecision) else None
                if decision is not None or not isinstance(planned, te.Start):
                    await self._apply(session, call, report, planned, row, unstarted, decision)
                    sequence = await self._enqueue_in(session, call) if queue else None
            if isinstance(planned, te.Start) and decision is None:
                assert report.token is not None
                decision, _ = await self._decide(report.token, publish=False)
                async with self.edge.unit() as session:
                    report, planned, row, unstarted = await self._plan(session, received)
                    await self._apply(session, call, report, planned, row, unstarted, decision)
                    sequence = await self._enqueue_in(session, call) if queue else None
            await self._statuses_written()
        except BaseException:
            self._running.pop(received.station_transaction_id, None)
            self._forget()
            raise
        self.edge.power_changed(self.station.site_id)  # a transaction began or ended: the site's rounds run at once
        if isinstance(planned, te.Start) and decision is not None:
            return {"idTokenInfo": render.id_token_info(decision)}, sequence
        return {}, sequence

    async def _apply(
        self,
        session: AsyncSession,
        call: Call,
        report: TransactionReport,
        planned: te.TransactionPlan,
        row: EdgeTransaction | None,
        unstarted: UnstartedTransaction | None,
        decision: auth.AuthDecision | None,
    ) -> None:
        """The plan written in the caller's unit, with the status its connector derives from it (one commit for
        both), and what the link keeps of a running transaction."""
        self._log_plan(report, planned)
        written = await self._write_transaction(session, report, planned, row, unstarted, decision)
        if written is None:
            return
        known, connector = written
        if known.ended:
            self._running.pop(report.station_transaction_id, None)
        else:
            if len(self._running) >= MAX_RUNNING and report.station_transaction_id not in self._running:
                del self._running[next(iter(self._running))]  # the oldest: its station never ended it
            self._running[report.station_transaction_id] = _Running(known, connector)
        await self._applied(call, report, known, connector, ended=known.ended, session=session)

    async def _progress(self, call: Call, report: TransactionReport, running: _Running) -> Payload:
        """An Updated event of a transaction running on this connection: planned on what the link knows of it,
        answered at once, its seqNo and reading written behind the answer (`records.write_progress`). Nothing it
        changes raises an event, and a station's resend of it after a crash would be applied again harmlessly."""
        planned = te.plan(report, running.known)
        self._log_plan(report, planned)
        if not isinstance(planned, te.Update):
            return {}
        meter_last = planned.meter_last_wh if planned.meter_last_wh is not None else running.known.meter_last_wh
        known = replace(running.known, last_seq_no=report.seq_no, meter_last_wh=meter_last)
        self._running[report.station_transaction_id] = _Running(known, running.connector)
        self.edge.note_progress(records.Progress(known.transaction_id, report.seq_no, planned.meter_last_wh))
        await self._applied(call, report, known, running.connector, ended=False)
        return {}

    async def _applied(
        self,
        call: Call,
        report: TransactionReport,
        known: te.KnownTransaction,
        connector: ConnectorRef,
        *,
        ended: bool,
        session: AsyncSession | None = None,
    ) -> None:
        """What an applied event tells beyond its transaction: its readings to the session's samples, and the status
        its connector derives (handed over with the unit of `session` when given)."""
        readings = parse.energy_readings(call.payload.get("meterValue"))
        station_id = self.station.station_id
        self.edge.message_log.samples(station_id, known.transaction_id, parse.samples(readings), last=ended)
        flowed = report.charging is ChargingState.CHARGING or any(r.energy_wh > known.meter_start_wh for r in readings)
        state = transaction_reported(
            await self._known(connector, session), ended=ended, charging=report.charging, energy_flowed=flowed
        )
        self._evse[connector.address] = state
        await self._derive(connector, state, report.timestamp, session=session)

    async def _plan(
        self, session: AsyncSession, received: TransactionReport
    ) -> tuple[TransactionReport, te.TransactionPlan, EdgeTransaction | None, UnstartedTransaction | None]:
        """The event with what earlier ones said of its transaction while unstarted (Rule 6), and its plan."""
        station_id, station_transaction_id = self.station.station_id, received.station_transaction_id
        row = await records.station_transaction(session, station_id, station_transaction_id)
        unstarted = None
        report = received
        if row is None:
            unstarted = await records.unstarted_transaction(session, station_id, station_transaction_id)
            report = te.with_earlier(received, records.unstarted_of(unstarted) if unstarted else None)
        known = records.known_transaction(row) if row else None
        running = self._running.get(station_transaction_id)
        if known is not None and running is not None and running.known.transaction_id == known.transaction_id:
            known = _newer(known, running.known)  # its progress may still be on its way to the store
        return report, te.plan(report, known), row, unstarted

    async def _write_transaction(
        self,
        session: AsyncSession,
        report: TransactionReport,
        planned: te.TransactionPlan,
        row: EdgeTransaction | None,
        unstarted: UnstartedTransaction | None,
        decision: auth.AuthDecision | None,
    ) -> tuple[te.KnownTransaction, ConnectorRef] | None:
        """What the plan says, in the caller's unit; what is known of the transaction after it, and its connector,
        when it is the edge's."""
        outbox, station, now = self.edge.outbox, self.station, self.edge.clock.now()
        if isinstance(planned, te.Ignore) and planned.why is te.Ignored.NOT_STARTED:
            await records.remember_unstarted(
                session, station.station_id, report.station_transaction_id, unstarted, te.remembered(report), now
            )
            return None
        if unstarted is not None:  # started, or ended before it could start
            await records.forget_unstarted(session, unstarted)
        if isinstance(planned, te.Start):
            # A start is planned only for a transaction still unknown, so its token was decided on.
            assert report.connector is not None and report.token is not None and decision is not None
            transaction_id = await records.start_station_transaction(
                session, outbox, station, report, planned, decision.status, now
            )
            await self._publish(session, report.token, decision, report.connector.address)
            meter_last = planned.stop.meter_stop_wh if planned.stop is not None else report.meter_last_wh
            known = te.KnownTransaction(
                transaction_id, report.seq_no, planned.stop is not None, planned.meter_start_wh, meter_last
            )
            return known, report.connector
        if row is None:
            return None
        if isinstance(planned, te.Update):
            records.update_station_transaction(row, report)
        elif isinstance(planned, te.Stop):
            await records.stop_station_transaction(session, outbox, station, row, report, planned)
        else:
            return None
        address = ConnectorAddress(row.charge_point_id, row.connector_id)
        return records.known_transaction(row), ConnectorRef(address, row.ocpp_connector_id)

    def _log_plan(self, report: TransactionReport, planned: te.TransactionPlan) -> None:
        fields = {
            "station": self.station.station_id,
            "transaction": report.station_transaction_id,
            "seqNo": report.seq_no,
            "event": report.kind.value,
        }
        if isinstance(planned, te.Ignore):
            # A plug-first transaction waits for its token: the way of things, not a warning.
            level = logging.INFO if planned.why is te.Ignored.NOT_STARTED else logging.WARNING
            log.log(level, f"transaction event ignored: {planned.why.value}", extra={"fields": fields})
        elif isinstance(planned, te.Update | te.Stop) and planned.gap:
            log.warning(
                "transaction events missing before this one", extra={"fields": {**fields, "missing": planned.gap}}
            )

    async def _sign_certificate(self, call: Call) -> Payload:
        """proxy Rule 7: signed by the company's station CA, CertificateSigned sent after the answer
        (`edge.certificates`); relayed to a connected upstream where the site says so, and a V2G CSR always."""
        kind = parse_kind(call.payload.get("certificateType"))
        if self.station.relays_csrs or kind is not CertificateKind.CHARGING_STATION:
            if self._route_state is not auth.UpstreamState.CONNECTED:
                return {"status": "Rejected"}
            return await self._forward_or_local(call, Handling.FORWARD, {"status": "Rejected"})
        chain = await self.edge.certificates.sign(self.station, call.payload["csr"], kind)
        if chain is None:
            return {"status": "Rejected"}
        signed = {"certificateChain": chain, "certificateType": kind.value}
        self.rpc.after_answer(lambda: self._send_certificate(signed))
        return {"status": "Accepted"}

    async def _send_certificate(self, payload: Payload) -> None:
        certificate_signed_logged(self.station.station_id, await self.call_station("CertificateSigned", payload))

    async def _meter_values(self, call: Call) -> Payload:
        """Readings outside a TransactionEvent name no transaction in 2.0.1: checked (the EVSE must be the
        station's), logged with the frame, and kept nowhere else."""
        parse.connector(self.station.layout, call.payload["evseId"], None)
        return {}


@dataclass(frozen=True, slots=True)
class _Running:
    known: te.KnownTransaction
    connector: ConnectorRef


def _newer(stored: te.KnownTransaction, running: te.KnownTransaction) -> te.KnownTransaction:
    return running if running.last_seq_no > stored.last_seq_no and not stored.ended else stored


_Handler = Callable[[Station201Link, Call], Awaitable[Payload]]
# The edge's part of a message before it goes up or is answered (Authorize and TransactionEvent, which decide what
# goes up, take their own way in `handle`).
_HANDLERS: dict[str, _Handler] = {
    "BootNotification": Station201Link._boot,
    "Heartbeat": Station201Link._heartbeat,
    "StatusNotification": Station201Link._status,
    "MeterValues": Station201Link._meter_values,
}
