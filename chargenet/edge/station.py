"""One station's connection at run time: what each of its CALLs does, and the CALLs relayed to it.

`StationLink` answers a station's CALLs: the 1.6 face reads each into a core record (`ocpp16.parse`), the core
plans it (`core`), one unit of work writes what happened with its events through the outbox, and the answer goes
back in 1.6 words (`ocpp16.render`) per the relay rules of `ocpp16.proxy`. What it needs of the edge it runs in
(`hub.Edge`) is `EdgeRuntime`.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain import charging_profiles
from chargenet.domain.certificate_requests import CertificateKind
from chargenet.domain.events import AuthorizationStatus
from chargenet.domain.generations import OCPP16
from chargenet.domain.tenants import ConnectorAddress
from chargenet.edge import power, records, statuses
from chargenet.edge.authorizers import Authorizer, AuthorizeRequest, ask_plugins
from chargenet.edge.certificates import StationCertificates, certificate_signed_logged
from chargenet.edge.connection import AnswerLate, CallTimer, ConnectionLost, OwnFaults, RpcConnection, RpcDialect
from chargenet.edge.core import authorize as auth
from chargenet.edge.core import starts
from chargenet.edge.core import transactions as tx
from chargenet.edge.core.messages import StatusReport, TransactionStarted
from chargenet.edge.core.status import TransitionCounts
from chargenet.edge.messagelog import MessageLog
from chargenet.edge.ocpp16 import meter_values, parse, proxy, relaying, render
from chargenet.edge.ocpp16.dialect import Ocpp16Dialect
from chargenet.edge.ocpp16.errors import CallErrorReceived, CallTimedOut, PayloadViolation, UnsupportedAction
from chargenet.edge.ocpp16.frames import Call, FrameLimits, Payload
from chargenet.edge.ocpp16.proxy import Fallback, Handling, UpstreamFailure
from chargenet.edge.ocpp16.session import SessionLimits
from chargenet.edge.upstream import (
    OCPP16_UPSTREAM,
    UpstreamFace,
    UpstreamLink,
    UpstreamLinks,
    UpstreamSettings,
    UpstreamUnavailable,
    tls_context,
)
from chargenet.keys import KeyStore
from chargenet.keys.upstream_tls import UpstreamTlsContexts
from chargenet.outbox import Outbox
from chargenet.store.db import Store

log = logging.getLogger(__name__)

CloseTransport = Callable[[int, str], Awaitable[None]]


class EdgeRuntime(Protocol):
    """What a station link uses of the edge that holds it (`hub.Edge`)."""

    store: Store
    clock: Clock
    outbox: Outbox
    keys: KeyStore
    limits: FrameLimits
    command_timeout: timedelta
    upstream_timeout: timedelta
    upstream_late_wait: timedelta
    authorizers: list[Authorizer]
    message_log: MessageLog
    transitions: TransitionCounts
    own_faults: OwnFaults
    upstream_links: UpstreamLinks
    upstream_tls: UpstreamTlsContexts
    time_station_call: CallTimer | None
    time_upstream_call: CallTimer | None
    certificates: StationCertificates

    def unit(self) -> AbstractAsyncContextManager[AsyncSession]: ...

    def note_progress(self, progress: records.Progress) -> None: ...

    async def load_connector(self, address: ConnectorAddress, ocpp_connector_id: int) -> statuses.LoadedConnector: ...

    async def write_status(self, write: statuses.StatusWrite) -> None: ...

    def write_status_with_unit(self, write: statuses.StatusWrite) -> asyncio.Future[None]: ...

    async def record_boot(self, boot: records.Boot) -> None: ...

    def heartbeat_interval(self, station_id: str) -> int: ...

    def gave_interval(self, station_id: str, interval: int) -> None: ...

    def power_changed(self, site_id: str, reconnected: str | None = None) -> None: ...


class LinkBase(abc.ABC):
    """What a station's link is whichever generation it speaks: its RPC connection, its liveness, the commands
    sent to it, and its connectors' statuses written through the status table."""

    generation = OCPP16

    def __init__(
        self,
        edge: EdgeRuntime,
        station: records.StationInfo,
        send: Callable[[str], Awaitable[None]],
        close: CloseTransport,
        dialect: RpcDialect,
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
            dialect=dialect,
            quick=self.quick_answer,
        )
        self.upstream: UpstreamLink | None = None
        self.last_seen = edge.clock.now()  # when the station last sent anything, a ping included
        self._shut = False
        self._connectors: dict[tuple[str, int], statuses.LoadedConnector] = {}
        # Statuses handed over with the unit running now, written in its batch (`_statuses_written`).
        self._statuses_with_unit: list[asyncio.Future[None]] = []

    @abc.abstractmethod
    async def handle(self, call: Call) -> Payload | None:
        """Answer one CALL from the station, in its generation's words (None: answered already)."""

    def quick_answer(self, call: Call) -> Payload | None:
        """The answer to a CALL that needs no wait for anything (no store, no upstream), given at once; None: the
        CALL goes to `handle`."""
        return None

    @abc.abstractmethod
    async def open_upstream(self) -> None:
        """Open the station's link to its site's upstream, when it has one that takes the station's generation."""

    @property
    def upstream_takes_generation(self) -> bool:
        """The site has an upstream, and it takes the generation this station speaks (generations Rule 4)."""
        return bool(self.station.upstream_url) and self.generation in self.station.upstream_versions

    async def _link_upstream(self, face: UpstreamFace) -> None:
        """Open the link to the site's upstream in `face`'s generation, with the station's upstream credentials."""
        assert self.station.upstream_url is not None
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
        tls = None
        if self.station.upstream_tls is not None:
            tls = tls_context(edge.upstream_tls, self.station.site_id, self.station.upstream_tls)
        self.upstream = UpstreamLink(
            settings, self.station, self.station.upstream_url, password, self.relay_to_station, face=face, tls=tls
        )
        await self.upstream.start()

    @abc.abstractmethod
    async def relay_to_station(self, call: Call) -> Payload | None:
        """A CALL from the upstream, relayed to the station; its answer, or None to leave it unanswered."""

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

    async def upstream_sets_profile(self, payload: Payload) -> Payload:
        """The station gets, per purpose, the lower of the upstream's profile and the edge's limit (decisions.md
        "Site power"); the upstream's is kept for the edge's next profiles once the station accepted it."""
        station_id = self.station.station_id
        wording = charging_profiles.wording(self.generation)
        async with self.edge.unit() as session:
            limits = await power.edge_limits(session, station_id, self.generation)
        if limits is None:
            return await self.call_station("SetChargingProfile", payload)
        connector_id, purpose = wording.key(payload)
        connectors = [connector_id]
        if connector_id == 0 and purpose == charging_profiles.TX_DEFAULT and limits.defaults:
            connectors = sorted(limits.defaults)  # the edge's defaults per connector would override it on connector 0
        answer: Payload = {"status": "Accepted"}
        for connector in connectors:
            upstream = wording.on_connector(payload, connector)
            merged = wording.merged(power.edge_limit(limits, connector, purpose), upstream)
            assert merged is not None
            answer = await self.call_station("SetChargingProfile", merged)
            if answer.get("status") != "Accepted":
                return answer
        async with self.edge.unit() as session:
            await power.keep_upstream_profile(session, station_id, payload, self.edge.clock.now(), wording)
        return answer

    async def upstream_clears_profiles(self, payload: Payload) -> Payload:
        """The upstream's profiles it names are forgotten; where the edge limits the same purpose, the station gets
        the edge's profile alone instead of losing its limit."""
        station_id = self.station.station_id
        wording = charging_profiles.wording(self.generation)
        async with self.edge.unit() as session:
            limits = await power.edge_limits(session, station_id, self.generation)
            cleared = await power.drop_upstream_profiles(session, station_id, payload, wording) if limits else []
        if limits is None:
            return await self.call_station("ClearChargingProfile", payload)
        for connector_id, purpose in cleared:
            connectors = (
                sorted(limits.defaults)
                if connector_id == 0 and purpose == charging_profiles.TX_DEFAULT
                else [connector_id]
            )
            for connector in connectors:
                limit = power.edge_limit(limits, connector, purpose)
                if limit is not None:
                    await self.call_station("SetChargingProfile", wording.profile(limit))
                elif purpose in charging_profiles.EDGE_PURPOSES:
                    # The upstream's profile went to the station under the edge's id (`charging_profiles`), and
                    # the edge has no limit there to put in its place.
                    await self.call_station("ClearChargingProfile", wording.clear_edge_profile(connector, purpose))
        return {"status": "Accepted" if cleared else "Unknown"}

    @property
    def upstream_state(self) -> auth.UpstreamState:
        if self.upstream is None:
            return auth.UpstreamState.NONE
        return auth.UpstreamState.CONNECTED if self.upstream.connected else auth.UpstreamState.AWAY

    async def _upstream_call(self, action: str, payload: Payload, *, listen_late: bool = False) -> Payload:
        """The upstream's answer, or `UpstreamFailed`; with `listen_late`, a call that timed out after it was sent
        fails carrying the answer still listened for (proxy Rule 4a)."""
        assert self.upstream is not None
        try:
            return await self.upstream.call(action, payload, listen_late=listen_late)
        except CallErrorReceived as exc:
            raise UpstreamFailed(UpstreamFailure.CALL_ERROR, exc) from None
        except AnswerLate as exc:
            raise UpstreamFailed(UpstreamFailure.TIMEOUT, None, exc.answer) from None
        except (CallTimedOut, ConnectionLost, UpstreamUnavailable, PayloadViolation):
            raise UpstreamFailed(UpstreamFailure.TIMEOUT, None) from None

    def _queued(self, sequence: int, late_answer: asyncio.Task[Payload] | None = None) -> None:
        if self.upstream is not None:
            self.upstream.enqueued(sequence, late_answer)

    async def _record_status(self, report: StatusReport, *, with_unit: bool = False) -> None:
        """A connector's status, decided against its last known one and written in the group commit's next batch
        with its ChargePointStatus event (the pre-status-notification hook: before anything goes upstream); with
        `with_unit`, handed over from the body of the caller's unit and written with the bulk writes of its batch,
        committed with it (the caller then waits for `_statuses_written` after the unit)."""
        now = self.edge.clock.now()
        address = report.connector.address
        key = (address.charge_point_id, address.connector_id)
        loaded = self._connectors.get(key)
        if loaded is None:
            number = report.connector.station_number
            loaded = await self.edge.load_connector(address, number)
        reported = report.status
        write, assessment = statuses.decide(
            self.station.station_id, self.station.site_id, address, loaded, reported, now
        )
        try:
            if with_unit:
                self._statuses_with_unit.append(self.edge.write_status_with_unit(write))
            else:
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

    async def _statuses_written(self) -> None:
        """Once the unit that handed statuses over (`_record_status`) has committed: they were written in its batch.
        A status whose write failed had been written alone already (the batch's bulk writes are retried item by
        item), so it would fail again: the unit's writes are committed and the CALL is answered as they say, the
        failure is logged once with its cause, and the link's connectors are left to the store again."""
        written, self._statuses_with_unit = self._statuses_with_unit, []
        if not written:
            return
        outcomes = await asyncio.gather(*written, return_exceptions=True)
        failed = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
        if failed:
            self._connectors.clear()
            for error in failed:
                log.error(
                    "derived connector status not written",
                    extra={"fields": {"station": self.station.station_id, "error": repr(error)}},
                )


class StationLink(LinkBase):
    """A station speaking OCPP 1.6J."""

    def __init__(
        self,
        edge: EdgeRuntime,
        station: records.StationInfo,
        send: Callable[[str], Awaitable[None]],
        close: CloseTransport,
    ):
        super().__init__(edge, station, send, close, Ocpp16Dialect(edge.limits))

    async def open_upstream(self) -> None:
        # An upstream that does not take 1.6 is no upstream to this station: the edge is its central system.
        if self.upstream_takes_generation:
            await self._link_upstream(OCPP16_UPSTREAM)

    # Upstream -> station ---------------------------------------------------------------------------------

    async def relay_to_station(self, call: Call) -> Payload | None:
        proxy.check_upstream_may_send(call.action, call.unique_id)
        ids = tx.IdMap()
        upstream_id = relaying.upstream_transaction_id(call.action, call.payload)
        if upstream_id is not None:  # only a call naming a transaction needs the store
            async with self.edge.unit() as session:
                ids = await records.id_map_for(session, self.station.station_id, upstream_id=upstream_id)
        try:
            payload = relaying.rewrite_for_station(call.action, call.payload, ids)
        except tx.UnknownUpstreamId:
            return dict(relaying.REJECTED_BY_EDGE)
        try:
            if call.action == "SetChargingProfile":
                return await self.upstream_sets_profile(payload)
            if call.action == "ClearChargingProfile":
                return await self.upstream_clears_profiles(payload)
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

    def quick_answer(self, call: Call) -> Payload | None:
        # A Heartbeat the edge answers itself (no upstream, or one that is away) is the message stations send most.
        if call.action != "Heartbeat":
            return None
        queue_empty = self.upstream is None or self.upstream.queued == 0
        if proxy.route_station_call(call.action, self.upstream_state, queue_empty) is not Handling.LOCAL:
            return None
        self.heard()
        now = self.edge.clock.now()
        self.edge.message_log.heartbeat(self.station.station_id, now)
        return proxy.local_answer(call.action, now)

    async def _forward_or_local(self, call: Call, route: Handling, local: Payload | None = None) -> Payload:
        answer = local if local is not None else proxy.local_answer(call.action, self.edge.clock.now())
        if route is not Handling.FORWARD:
            return answer
        try:
            return await self._upstream_call(call.action, call.payload)
        except UpstreamFailed as failed:
            if proxy.fallback(call.action, failed.kind) is Fallback.RELAY_ERROR:
                if failed.error is not None:
                    raise failed.error from None
                raise UnsupportedAction(call.action, unique_id=call.unique_id) from None
            return answer

    async def _boot(self, call: Call, route: Handling) -> Payload:
        booted = parse.station_booted(call.payload)
        await self.edge.record_boot(records.boot_of(self.station.station_id, booted, self.edge.clock.now()))
        answer = await self._forward_or_local(call, route)
        self._answered(call.action, call.payload, answer)
        return answer

    async def _heartbeat(self, call: Call, route: Handling) -> Payload:
        self.edge.message_log.heartbeat(self.station.station_id, self.edge.clock.now())
        return await self._forward_or_local(call, route)

    async def _status(self, call: Call, route: Handling) -> Payload:
        report = parse.status_report(self.station.layout, call.payload, self.edge.clock.now())  # InvalidInput
        await self._record_status(report)
        return await self._forward_or_local(call, route)

    async def _authorize(self, call: Call, route: Handling) -> Payload:
        """One unit when the local list decides (or nobody: no plugins, no upstream connected); otherwise a unit
        that reads, the plugins and the upstream asked outside any unit, and a unit that writes."""
        id_tag = parse.token_presented(call.payload).token.value
        async with self.edge.unit() as session:
            ctx = await self._authorize_context(session, id_tag)
            step = auth.begin(ctx)
            if isinstance(step, auth.AuthDecision):
                await records.publish_authorize(session, self.edge.outbox, self.station, id_tag, step)
        if isinstance(step, auth.AuthDecision):
            return {"idTagInfo": render.id_tag_info(step)}
        if step is auth.NextSource.PLUGINS:
            request = AuthorizeRequest(self.station.site_id, self.station.station_id, id_tag, None)
            step = auth.after_plugins(ctx, await ask_plugins(self.edge.authorizers, request, self.edge.clock))
        relayed: Payload | None = None
        cached = None
        if isinstance(step, auth.AuthDecision):
            decision = step
        else:
            try:
                answer = await self._upstream_call("Authorize", {"idTag": id_tag})
            except UpstreamFailed:
                decision = auth.after_upstream(ctx, None)
            else:
                verdict = parse.upstream_verdict(answer["idTagInfo"])
                decision = auth.after_upstream(ctx, verdict)
                cached = auth.cache_entry(id_tag, verdict, ctx.now)
                # Relayed as it came, unless the edge's own ConcurrentTx changed it.
                relayed = answer if decision.status is verdict.status else None
        async with self.edge.unit() as session:
            if cached is not None:
                await records.cache_authorization(session, self.station.site_id, cached)
            await records.publish_authorize(session, self.edge.outbox, self.station, id_tag, decision)
        return relayed if relayed is not None else {"idTagInfo": render.id_tag_info(decision)}

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

    async def _notice(self, call: Call, route: Handling) -> Payload:
        """A security event or diagnostics status, kept as received (a 2.0.1 station's notices are), then relayed
        to a connected upstream."""
        async with self.edge.unit() as session:
            await records.record_notice(
                session, self.station.station_id, call.action, call.payload, self.edge.clock.now()
            )
        return await self._forward_or_local(call, route)

    async def _sign_certificate(self, call: Call, route: Handling) -> Payload:
        """proxy Rule 8: signed here, CertificateSigned sent after the answer; or relayed to the upstream."""
        if self.station.relays_csrs:
            if self.upstream_state is not auth.UpstreamState.CONNECTED:
                return dict(REJECTED)
            return await self._forward_or_local(call, Handling.FORWARD, local=dict(REJECTED))
        chain = await self.edge.certificates.sign(self.station, call.payload["csr"], CertificateKind.CHARGING_STATION)
        if chain is None:
            return dict(REJECTED)
        self.rpc.after_answer(lambda: self._send_certificate({"certificateChain": chain}))
        return {"status": "Accepted"}

    async def _send_certificate(self, payload: Payload) -> None:
        answer = await self.call_station("CertificateSigned", payload)
        certificate_signed_logged(self.station.station_id, answer)

    async def _start(self, call: Call, route: Handling) -> Payload:
        """One unit that reads, plans (`core.starts`) and writes; with plugins to ask, a unit that reads before
        them. A forwarded start adds one unit for the upstream's answer."""
        started = parse.transaction_started(self.station.layout, call.payload)  # InvalidInput: bad connector id
        key = started.key(self.station.station_id)
        planned = await self._write_start(call, route, started, key, None)
        if isinstance(planned, starts.AskPlugins):
            request = AuthorizeRequest(
                self.station.site_id, self.station.station_id, key.id_tag, started.connector.station_number
            )
            opinions = await ask_plugins(self.edge.authorizers, request, self.edge.clock)
            planned = await self._write_start(call, route, started, key, opinions)
        if isinstance(planned, starts.RepeatedStart):
            return render.repeated_start_answer(planned)
        assert not isinstance(planned, starts.AskPlugins)  # the plugins have spoken
        decision, written = planned
        if written.closed:
            log.warning(
                "open transactions closed by a new start on their connector",
                extra={
                    "fields": {
                        "station": self.station.station_id,
                        "connector": started.connector.station_number,
                        "ids": written.closed,
                    }
                },
            )
        transaction_id = written.transaction_id
        self.edge.power_changed(self.station.site_id)
        if route is not Handling.FORWARD:
            if written.sequence is not None:
                self._queued(written.sequence)
            return render.start_answer(transaction_id, decision)
        now = self.edge.clock.now()
        address = started.connector.address
        try:
            upstream_answer = await self._upstream_call(call.action, call.payload, listen_late=True)
        except UpstreamFailed as failed:
            queue = proxy.fallback(call.action, failed.kind) is Fallback.ANSWER_AND_QUEUE
            sequence = None
            async with self.edge.unit() as session:
                if queue:
                    sequence = await records.enqueue(
                        session, self.station.station_id, call.action, call.payload, transaction_id, now
                    )
                else:
                    await records.refuse_upstream(session, transaction_id)
                await records.publish_authorize(
                    session, self.edge.outbox, self.station, key.id_tag, decision, address=address
                )
            if sequence is not None:
                # Queued so that nothing overtakes it; sent again only if the late answer cannot come.
                self._queued(sequence, failed.late_answer)
            return render.start_answer(transaction_id, decision)
        if decision.source is not auth.AuthSource.LOCAL_LIST:
            verdict = parse.upstream_verdict(upstream_answer["idTagInfo"])
            decision = auth.after_upstream(_start_context(key.id_tag, now), verdict)
        async with self.edge.unit() as session:
            await records.link_upstream(
                session, transaction_id, upstream_answer["transactionId"], auth_status=decision.status.value
            )
            await records.publish_authorize(
                session, self.edge.outbox, self.station, key.id_tag, decision, address=address
            )
        return relaying.for_station_start(transaction_id, {"idTagInfo": render.id_tag_info(decision)})

    async def _write_start(
        self,
        call: Call,
        route: Handling,
        started: TransactionStarted,
        key: tx.StartKey,
        opinions: list[AuthorizationStatus | None] | None,
    ) -> starts.RepeatedStart | starts.AskPlugins | tuple[auth.AuthDecision, records.StartWritten]:
        """Read what a start needs, plan it and write it, in one unit. The station's answer is the edge's own
        unless the start is forwarded: then the Authorize event waits for the upstream's say."""
        now = self.edge.clock.now()
        queue = records.QueuedCall(call.action, call.payload) if route is Handling.QUEUE else None
        for _ in range(2):
            try:
                async with self.edge.unit() as session:
                    facts = await records.start_facts(session, self.station, key)
                    plan = starts.plan_start(
                        key,
                        facts,
                        now=now,
                        plugin_count=len(self.edge.authorizers),
                        has_upstream=self.upstream is not None,
                        opinions=opinions,
                    )
                    if not isinstance(plan, starts.NewStart):
                        return plan
                    written = await records.record_start(
                        session,
                        self.edge.outbox,
                        self.station,
                        started,
                        plan,
                        now,
                        publish_authorize_now=route is not Handling.FORWARD,
                        queue=queue,
                    )
                return plan.decision, written
            except IntegrityError as exc:
                # An identical start committed concurrently (a station resending on a second connection):
                # the retry finds it and answers with its id.
                if not records.is_duplicate_start(exc):
                    raise
        raise RuntimeError("StartTransaction could not be stored")

    async def _stop(self, call: Call, route: Handling) -> Payload:
        """One unit: the stop, its event, and its place in the upstream queue when it waits there. A forwarded
        stop the upstream does not take in time adds one unit that queues it."""
        p = call.payload
        ended = parse.transaction_ended(p)
        now = self.edge.clock.now()
        queue = records.QueuedCall(call.action, p) if route is not Handling.LOCAL else None
        async with self.edge.unit() as session:
            written = await records.stop_transaction(
                session,
                self.edge.outbox,
                self.station,
                ended,
                now,
                as_sent=p,
                forward=route is Handling.FORWARD,
                queue=queue,
            )
        self.edge.message_log.samples(
            self.station.station_id, ended.transaction_id, meter_values.reported(p.get("transactionData")), last=True
        )
        if written.outcome is tx.StopOutcome.STOPPED:
            self.edge.power_changed(self.station.site_id)
        if written.outcome is not tx.StopOutcome.STOPPED or route is Handling.LOCAL:
            return {}  # a repeat or a stranger's stop is acknowledged and goes nowhere (transactions Rule 3)
        return await self._send_up(call, route, ended.transaction_id, written.ids, written.sequence)

    async def _meter_values(self, call: Call, route: Handling) -> Payload:
        """At most one unit (the transaction's owner and upstream id, and the queue), as a stop."""
        p = call.payload
        report = parse.meter_report(self.station.layout, p)  # InvalidInput: bad connector id
        transaction_id = report.transaction_id
        if transaction_id is not None:
            # Buffered for the log's next batch: no store round trip per frame, whoever owns the transaction
            # (a session reads only its own station's samples).
            self.edge.message_log.samples(
                self.station.station_id, transaction_id, meter_values.reported(p.get("meterValue"))
            )
        if route is Handling.LOCAL:
            return {}
        if transaction_id is None and route is Handling.FORWARD:
            return await self._send_up(call, route, None, tx.IdMap(), None)  # nothing to read, nothing to queue
        async with self.edge.unit() as session:
            written = await records.meter_readings(
                session,
                self.station.station_id,
                report,
                self.edge.clock.now(),
                forward=route is Handling.FORWARD,
                queue=records.QueuedCall(call.action, p),
            )
        if not written.owned:
            return {}  # values for a transaction the station does not own stay with us (logged)
        return await self._send_up(call, route, transaction_id, written.ids, written.sequence)

    async def _send_up(
        self, call: Call, route: Handling, transaction_id: int | None, ids: tx.IdMap, sequence: int | None
    ) -> Payload:
        """A transaction message after its unit: queued there (`sequence`), kept, or sent up now; one the upstream
        does not answer in time is queued in a unit of its own (proxy Rule 4)."""
        if sequence is not None:
            self._queued(sequence)
            return {}
        if route is not Handling.FORWARD or tx.delivery(transaction_id, ids) is not tx.Delivery.SEND:
            return {}
        payload = relaying.rewrite_for_upstream(call.action, call.payload, ids)
        try:
            await self._upstream_call(call.action, payload, listen_late=True)
        except UpstreamFailed as failed:
            if proxy.fallback(call.action, failed.kind) is Fallback.ANSWER_AND_QUEUE:
                now = self.edge.clock.now()
                async with self.edge.unit() as session:
                    sequence = await records.enqueue(
                        session, self.station.station_id, call.action, call.payload, transaction_id, now
                    )
                self._queued(sequence, failed.late_answer)
        return {}


class UpstreamFailed(Exception):
    """A call to the upstream got no answer the station can have: `kind` says why (proxy Rule 4)."""

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
    "SecurityEventNotification": StationLink._notice,
    "DiagnosticsStatusNotification": StationLink._notice,
    "SignCertificate": StationLink._sign_certificate,
}
REJECTED: Payload = {"status": "Rejected"}
