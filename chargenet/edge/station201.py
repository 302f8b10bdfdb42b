"""One OCPP 2.0.1 station's connection at run time: what each of its CALLs does.

`Station201Link` answers a 2.0.1 station's CALLs: the 2.0.1 face reads each into a core record (`ocpp201.parse`),
the core plans it (`core`, `domain.evse`), one unit of work writes what happened with its events through the
outbox, and the answer goes back in 2.0.1 words (`ocpp201.render`). The events are the same four a 1.6 station
raises (decisions.md §5).

No 2.0.1 upstream link exists yet: on a site with an upstream the edge answers as the central system itself, as it
does for a 1.6 station while its upstream is away (the cache is asked, nothing is queued), and the station page
says so. The link keeps what it derives statuses from (`domain.evse.EvseConnector`) in memory: a station that
reconnects restarts each connector from the status last written for it and the transaction still open on it
(`domain.evse` Rule 5), so a process other than the one it left restarts it alike.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.events import ChargePointErrorCode
from chargenet.domain.evse import (
    ChargingState,
    DerivedStatus,
    EvseConnector,
    connector_reported,
    derive,
    fault_reported,
    restored,
    transaction_reported,
)
from chargenet.domain.generations import OCPP201
from chargenet.domain.tenants import ConnectorAddress
from chargenet.edge import records, statuses
from chargenet.edge.authorizers import AuthorizeRequest, ask_plugins
from chargenet.edge.core import authorize as auth
from chargenet.edge.core import transaction_events as te
from chargenet.edge.core.messages import ConnectorRef, IdToken, StatusReport, TransactionEventKind, TransactionReport
from chargenet.edge.ocpp16.errors import UnsupportedAction
from chargenet.edge.ocpp16.frames import Call, Payload
from chargenet.edge.ocpp201 import parse, render
from chargenet.edge.ocpp201.dialect import Ocpp201Dialect
from chargenet.edge.ocpp201.frames import STATION_ACTIONS
from chargenet.edge.station import CloseTransport, EdgeRuntime, LinkBase
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
        """The site has an upstream, but the edge answers this station itself (no 2.0.1 upstream link yet)."""
        return bool(self.station.upstream_url)

    @property
    def upstream_state(self) -> auth.UpstreamState:
        return auth.UpstreamState.AWAY if self.answers_for_upstream else auth.UpstreamState.NONE

    async def open_upstream(self) -> None:
        """Nothing to open: a 2.0.1 station's upstream link is not built yet, so the edge is its central system
        (`answers_for_upstream`), as docs/edge.md says and the station page shows."""

    async def handle(self, call: Call) -> Payload | None:
        self.heard()
        if call.action not in STATION_ACTIONS or call.action in render.NOT_SUPPORTED:
            raise UnsupportedAction(call.action, unique_id=call.unique_id)
        handler = _HANDLERS.get(call.action)
        if handler is not None:
            return await handler(self, call)
        if call.action in NOTICES:
            return await self._notice(call)
        return render.local_answer(call.action, self.edge.clock.now())

    async def _boot(self, call: Call) -> Payload:
        booted = parse.station_booted(call.payload)
        now = self.edge.clock.now()
        await self.edge.record_boot(records.boot_of(self.station.station_id, booted, now))
        answer = render.local_answer(call.action, now)
        self._answered(call.action, call.payload, answer)
        return answer

    async def _heartbeat(self, call: Call) -> Payload:
        now = self.edge.clock.now()
        self.edge.message_log.heartbeat(self.station.station_id, now)
        return render.local_answer(call.action, now)

    async def _notice(self, call: Call) -> Payload:
        """Kept as received; a NotifyEvent's Problems also set their connectors' statuses, in the same unit."""
        found = parse.problems(self.station.layout, call.payload) if call.action == "NotifyEvent" else []
        for problem in found:
            await self._known(problem.connector)
        try:
            async with self.edge.unit() as session:
                await records.record_notice(
                    session, self.station.station_id, call.action, call.payload, self.edge.clock.now()
                )
                for problem in found:
                    address = problem.connector.address
                    self._evse[address] = fault_reported(self._evse[address], problem.fault)
                    await self._derive(problem.connector, problem.timestamp, session=session)
        except BaseException:
            self._forget()
            raise
        if call.action == "SecurityEventNotification":
            self._security_events.counts[call.payload["type"]] += 1
        return {}

    # Statuses ----------------------------------------------------------------------------------------------

    async def _status(self, call: Call) -> Payload:
        report = parse.connector_report(self.station.layout, call.payload)  # InvalidInput: an EVSE never given
        address = report.connector.address
        self._evse[address] = connector_reported(await self._known(report.connector), report.state)
        await self._derive(report.connector, report.timestamp, reported=True)
        return {}

    async def _known(self, connector: ConnectorRef, session: AsyncSession | None = None) -> EvseConnector:
        """What the link knows of a connector; the first time on this connection, what the store says of it
        (Rule 5), read in `session` when given."""
        address = connector.address
        known = self._evse.get(address)
        if known is not None:
            return known
        station_id, number = self.station.station_id, connector.station_number

        def read(connection: Connection) -> tuple[statuses.LoadedConnector, bool]:
            loaded = statuses.load_connector(connection, address, number)
            return loaded, records.transaction_open_on(connection, station_id, address)

        if session is None:
            loaded, transaction_open = await self.edge.store.read_at_once(read)
        else:
            loaded, transaction_open = await session.run_sync(lambda sync: read(sync.connection()))
        last = loaded.last
        if last is None:
            known = restored(None, ChargePointErrorCode.NO_ERROR, None, transaction_open=transaction_open)
        else:
            known = restored(last.status, last.error_code, last.info, transaction_open=transaction_open)
            self._derived[address] = DerivedStatus(last.status, last.error_code, last.info)
        self._connectors[(address.charge_point_id, address.connector_id)] = loaded
        self._evse[address] = known
        return known

    def _forget(self) -> None:
        """What this link knew of transactions and connectors may not have been written: the store is the truth
        again."""
        self._evse.clear()
        self._connectors.clear()
        self._derived.clear()

    async def _derive(
        self,
        connector: ConnectorRef,
        timestamp: datetime,
        *,
        reported: bool = False,
        session: AsyncSession | None = None,
    ) -> None:
        """decisions.md §5: the connector's ChargePointStatus derived from what the station said of it; an event
        when it changes (`LinkBase._record_status`). A StatusNotification is written as a report even when the
        status stays; a TransactionEvent that leaves it as it was writes nothing."""
        derived = derive(self._evse.get(connector.address, EvseConnector()))
        if derived is None or (not reported and self._derived.get(connector.address) == derived):
            return
        await self._record_status(StatusReport(connector, parse.known_status(derived, timestamp)), session)
        self._derived[connector.address] = derived

    # Authorization -----------------------------------------------------------------------------------------

    async def _authorize(self, call: Call) -> Payload:
        token = parse.token_presented(call.payload).token
        decision = await self._decide(token, publish=True)
        return {"idTokenInfo": render.id_token_info(decision)}

    async def _decide(self, token: IdToken, *, publish: bool) -> auth.AuthDecision:
        """The authorization chain every token goes through (local list, plugins, the cache when the site has an
        upstream), as for 1.6: one unit that reads (and, when nobody else is asked, publishes), the plugins
        asked outside it, and one that publishes."""
        async with self.edge.unit() as reading:
            ctx = await self._authorize_context(reading, token.value)
            step = auth.begin(ctx)
            if isinstance(step, auth.AuthDecision) and publish:
                await self._publish(reading, token, step)
        if isinstance(step, auth.AuthDecision):
            return step
        request = AuthorizeRequest(self.station.site_id, self.station.station_id, token.value, None)
        after = auth.after_plugins(ctx, await ask_plugins(self.edge.authorizers, request, self.edge.clock))
        decision = after if isinstance(after, auth.AuthDecision) else auth.after_upstream(ctx, None)
        if publish:
            async with self.edge.unit() as writing:
                await self._publish(writing, token, decision)
        return decision

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

    async def _authorize_context(self, session: AsyncSession, id_tag: str) -> auth.AuthorizeContext:
        site_id = self.station.site_id
        return auth.AuthorizeContext(
            id_tag=id_tag,
            now=self.edge.clock.now(),
            local_entry=await records.local_entry(session, site_id, id_tag),
            plugin_count=len(self.edge.authorizers),
            upstream=self.upstream_state,
            cached=await records.cached_authorization(session, site_id, id_tag),
            has_active_transaction=await records.has_active_transaction(session, site_id, id_tag),
        )

    # Transactions ------------------------------------------------------------------------------------------

    async def _transaction_event(self, call: Call) -> Payload:
        """One unit that reads, plans (`core.transaction_events`), decides a start's token and writes; with
        plugins to ask about a start's token, a unit that reads before them and one that writes after, which
        plans again on what it reads (as a 1.6 StartTransaction)."""
        received = parse.transaction_report(self.station.layout, call.payload)  # InvalidInput: an EVSE never given
        running = self._running.get(received.station_transaction_id)
        if running is not None and received.kind is TransactionEventKind.UPDATED:
            return await self._progress(call, received, running)
        decision: auth.AuthDecision | None = None
        try:
            async with self.edge.unit() as session:
                report, planned, row, unstarted = await self._plan(session, received)
                if isinstance(planned, te.Start):
                    assert report.token is not None
                    step = auth.begin(await self._authorize_context(session, report.token.value))
                    decision = step if isinstance(step, auth.AuthDecision) else None
                if decision is not None or not isinstance(planned, te.Start):
                    await self._apply(session, call, report, planned, row, unstarted, decision)
            if isinstance(planned, te.Start) and decision is None:
                assert report.token is not None
                decision = await self._decide(report.token, publish=False)
                async with self.edge.unit() as session:
                    report, planned, row, unstarted = await self._plan(session, received)
                    await self._apply(session, call, report, planned, row, unstarted, decision)
        except BaseException:
            # What this link knew of the transaction and its connectors may not have been written: the store is
            # the truth again.
            self._running.pop(received.station_transaction_id, None)
            self._connectors.clear()
            self._derived.clear()
            raise
        if isinstance(planned, te.Start) and decision is not None:
            return {"idTokenInfo": render.id_token_info(decision)}
        return {}

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
        answered at once, its seqNo and reading written behind the answer (`records.note_progress`). Nothing it
        changes raises an event, and a station's resend of it after a crash would be applied again harmlessly."""
        planned = te.plan(report, running.known)
        self._log_plan(report, planned)
        if not isinstance(planned, te.Update):
            return {}
        meter_last = planned.meter_last_wh if planned.meter_last_wh is not None else running.known.meter_last_wh
        known = replace(running.known, last_seq_no=report.seq_no, meter_last_wh=meter_last)
        self._running[report.station_transaction_id] = _Running(known, running.connector)

        async def write(session: AsyncSession) -> None:
            await records.note_progress(session, known.transaction_id, report.seq_no, planned.meter_last_wh)

        self.edge.write_behind(write)
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
        its connector derives (written in `session` when given)."""
        readings = parse.energy_readings(call.payload.get("meterValue"))
        station_id = self.station.station_id
        self.edge.message_log.samples(station_id, known.transaction_id, parse.samples(readings), last=ended)
        flowed = report.charging is ChargingState.CHARGING or any(r.energy_wh > known.meter_start_wh for r in readings)
        state = await self._known(connector, session)
        self._evse[connector.address] = transaction_reported(
            state, ended=ended, charging=report.charging, energy_flowed=flowed
        )
        await self._derive(connector, report.timestamp, session=session)

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
_HANDLERS: dict[str, _Handler] = {
    "BootNotification": Station201Link._boot,
    "Heartbeat": Station201Link._heartbeat,
    "StatusNotification": Station201Link._status,
    "Authorize": Station201Link._authorize,
    "TransactionEvent": Station201Link._transaction_event,
    "MeterValues": Station201Link._meter_values,
}
