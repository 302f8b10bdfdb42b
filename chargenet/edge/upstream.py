"""The upstream link: one OCPP-J client connection per connected station to `{upstream-url}/{stationId}`, in the
generation the station speaks (`UpstreamFace`: OCPP 1.6J or 2.0.1).

It reconnects with backoff and jitter (`proxy.reconnect_delay`), relays the upstream's CALLs to the station,
and replays the station's queued transaction messages, in order and throttled, whenever it is connected.

To a `wss://` upstream it speaks TLS as its site says (domain.upstream_profiles): the server certificate checked
against the site's CA bundle or the system's, and the site's client certificate shown. Why an attempt failed (an
untrusted server certificate, a refused client certificate or password, an upstream out of reach) is the link's
state while it is down, logged once per change of reason.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import random
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

import websockets
from sqlalchemy.ext.asyncio import AsyncSession
from websockets.asyncio.client import ClientConnection, connect

from chargenet.clock import Clock
from chargenet.domain.upstream_profiles import LinkFailure, UpstreamTls, check, is_secure, sends_client_certificate
from chargenet.edge import records
from chargenet.edge.connection import (
    AnswerLate,
    CallHandler,
    CallTimer,
    ConnectionLost,
    OwnFaults,
    RpcConnection,
    RpcDialect,
)
from chargenet.edge.messagelog import MessageLog
from chargenet.edge.ocpp16 import proxy, relaying
from chargenet.edge.ocpp16.dialect import Ocpp16Dialect
from chargenet.edge.ocpp16.errors import CallErrorReceived, CallTimedOut, PayloadViolation
from chargenet.edge.ocpp16.frames import FrameLimits, Payload
from chargenet.edge.ocpp16.session import SessionLimits
from chargenet.edge.ocpp201.dialect import Ocpp201Dialect
from chargenet.errors import ChargenetError, InvalidInput
from chargenet.keys.upstream_tls import UpstreamTlsContexts, UpstreamTlsUnusable
from chargenet.store.db import Store

log = logging.getLogger(__name__)

OPEN_TIMEOUT = 10.0


class UpstreamFace(Protocol):
    """What the link asks of the generation it speaks to the upstream: its words on the wire, and what replaying a
    queued message of that generation reads and writes."""

    subprotocol: str

    def dialect(self, limits: FrameLimits) -> RpcDialect: ...

    async def next_replay(
        self,
        session: AsyncSession,
        station_id: str,
        head: relaying.QueuedMessage,
        last_sent: datetime | None,
        now: datetime,
        policy: relaying.ReplayPolicy,
    ) -> relaying.Replay:
        """What to do with the head of the queue now, in the unit that read it."""
        ...

    async def settle(self, session: AsyncSession, head: relaying.QueuedMessage, answer: Payload | None) -> None:
        """What the upstream's answer to a queued message (None: refused) leaves in the store, beside its dequeue."""
        ...


class Ocpp16Upstream:
    """1.6: the edge's transaction ids are rewritten into the upstream's on the way up, and a StartTransaction's
    answer gives the upstream's id for its transaction (`relaying`)."""

    subprotocol = "ocpp1.6"

    def dialect(self, limits: FrameLimits) -> RpcDialect:
        return Ocpp16Dialect(limits)

    async def next_replay(
        self,
        session: AsyncSession,
        station_id: str,
        head: relaying.QueuedMessage,
        last_sent: datetime | None,
        now: datetime,
        policy: relaying.ReplayPolicy,
    ) -> relaying.Replay:
        ids = await records.id_map_for(session, station_id, edge_id=head.transaction_id)
        return relaying.next_replay(head, ids, last_sent, now, policy)

    async def settle(self, session: AsyncSession, head: relaying.QueuedMessage, answer: Payload | None) -> None:
        if head.action == "StartTransaction" and head.transaction_id is not None:
            if answer is None:
                await records.refuse_upstream(session, head.transaction_id)
            else:
                await records.link_upstream(session, head.transaction_id, answer["transactionId"])


class Ocpp201Upstream:
    """2.0.1: a transaction's id is the station's own string, the same to the edge and the upstream, so a queued
    TransactionEvent goes up as the station sent it and its answer leaves nothing to map."""

    subprotocol = "ocpp2.0.1"

    def dialect(self, limits: FrameLimits) -> RpcDialect:
        return Ocpp201Dialect(limits)

    async def next_replay(
        self,
        session: AsyncSession,
        station_id: str,
        head: relaying.QueuedMessage,
        last_sent: datetime | None,
        now: datetime,
        policy: relaying.ReplayPolicy,
    ) -> relaying.Replay:
        if last_sent is not None and now < last_sent + policy.interval:
            return relaying.Replay(relaying.ReplayStep.WAIT_THROTTLE, not_before=last_sent + policy.interval)
        return relaying.Replay(relaying.ReplayStep.SEND, payload=head.payload)

    async def settle(self, session: AsyncSession, head: relaying.QueuedMessage, answer: Payload | None) -> None:
        return None


OCPP16_UPSTREAM = Ocpp16Upstream()
OCPP201_UPSTREAM = Ocpp201Upstream()


class UpstreamLinks:
    """The upstream links of one edge, for `/metrics`: how many are open (their station connected here), how many of
    those are connected now, and how often one connected or failed to."""

    def __init__(self) -> None:
        self.open = 0
        self.connected = 0
        self.connects = 0
        self.failures = 0


@dataclass(frozen=True, slots=True)
class UpstreamSettings:
    """What an upstream link needs from the edge that opens it; a snapshot taken when the link opens."""

    store: Store
    clock: Clock
    limits: FrameLimits
    call_timeout: timedelta
    late_wait: timedelta
    message_log: MessageLog
    own_faults: OwnFaults
    links: UpstreamLinks
    time_call: CallTimer | None = None


class UpstreamUnavailable(ChargenetError):
    """The upstream link is not connected right now."""


def basic_auth(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


TlsContext = Callable[[], ssl.SSLContext]


def tls_context(contexts: UpstreamTlsContexts, site_id: str, settings: UpstreamTls) -> TlsContext | None:
    """What makes the TLS context of a link to a `wss://` upstream, read again at every attempt (the site's files
    may change meanwhile); None where websockets' own default does (a `ws://` URL, or nothing of the site's to
    load: the system's CAs check the server)."""
    try:
        check(settings)
    except InvalidInput as exc:
        refused = UpstreamTlsUnusable(f"site {site_id}: {exc.detail}")  # a site changed by hand in the store

        def refuse() -> ssl.SSLContext:
            raise refused

        return refuse
    client_certificate = sends_client_certificate(settings)
    if not client_certificate and not (settings.ca_bundle and settings.url is not None and is_secure(settings.url)):
        return None
    return lambda: contexts.context(site_id, client_certificate=client_certificate)


def describe_failure(exc: BaseException, *, over_tls: bool) -> tuple[LinkFailure, str]:
    """Why an attempt to open a link failed, and the detail for the operator."""
    if isinstance(exc, UpstreamTlsUnusable):
        return LinkFailure.TLS_SETTINGS, str(exc)
    if isinstance(exc, ssl.SSLCertVerificationError):
        return LinkFailure.SERVER_CERTIFICATE, exc.verify_message or str(exc)
    if isinstance(exc, ssl.SSLError) and "ALERT" in (exc.reason or ""):
        return LinkFailure.CLIENT_CERTIFICATE_REFUSED, f"TLS alert {exc.reason}"
    if isinstance(exc, websockets.InvalidStatus) and exc.response.status_code in (401, 403):
        return LinkFailure.CREDENTIALS_REFUSED, f"HTTP {exc.response.status_code}"
    if over_tls and isinstance(exc, websockets.InvalidMessage) and isinstance(exc.__cause__, EOFError):
        # TLS 1.3 ends the client's handshake before the server has checked its certificate: a server refusing
        # it closes the connection, and its alert, if it sends one, is not surfaced by asyncio's TLS layer.
        return LinkFailure.CLIENT_CERTIFICATE_REFUSED, "the connection closed after the TLS handshake, unanswered"
    return LinkFailure.UNREACHABLE, f"{type(exc).__name__}: {exc}"


# The system's generator rather than the `random` module's shared one: the jitter needs no reproducible sequence,
# and a service has no business moving the state that the code embedding it may have seeded.
_JITTER = random.SystemRandom()


class UpstreamLink:
    def __init__(
        self,
        settings: UpstreamSettings,
        station: records.StationInfo,
        url: str,
        password: str | None,
        relay: CallHandler,
        *,
        face: UpstreamFace = OCPP16_UPSTREAM,
        rng: Callable[[], float] = _JITTER.random,
        tls: TlsContext | None = None,
    ) -> None:
        self._settings = settings
        self._face = face
        self._station = station
        self._uri = url.rstrip("/") + "/" + station.station_id
        self._password = password
        self._relay = relay
        self._rng = rng
        self._tls = tls
        self._failure: str | None = None  # why the latest attempt failed, as the link's state says it
        self._rpc: RpcConnection | None = None
        self._closing = asyncio.Event()
        self._first_attempt = asyncio.Event()
        self._kick = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._counted = False
        self.connects = 0
        # Messages of this station waiting in the upstream queue (this process owns the link): raised as the hub
        # queues one, lowered as the replay settles or drops one. While it is above zero, the hub queues every
        # new transaction message behind them (proxy Rule 2); at zero it forwards them live again.
        self.queued = 0
        # Answers still awaited for queued messages that were sent once and timed out, by queue sequence (proxy
        # Rule 4a): the replay takes them instead of sending those messages again.
        self._late_answers: dict[int, asyncio.Task[Payload]] = {}

    @property
    def connected(self) -> bool:
        return self._rpc is not None

    async def start(self) -> None:
        """Begin connecting, and return once the first attempt has succeeded or failed (decisions.md §4: the
        upstream connection opens before the station's BootNotification is forwarded)."""
        async with self._settings.store.transaction() as session:
            self.queued = await records.queue_length(session, self._station.station_id)
        self._task = asyncio.create_task(self._run(), name=f"upstream-{self._station.station_id}")
        self._settings.links.open += 1
        self._counted = True
        await self._first_attempt.wait()

    async def close(self) -> None:
        if self._counted:
            self._counted = False
            self._settings.links.open -= 1
        self._closing.set()
        # A link closed while `start` waits (its station gone mid-attach) may be cancelled before its first attempt
        # ran: that attempt will never come, so nobody may wait for it.
        self._first_attempt.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def kick(self) -> None:
        """Wake the replay (after a message was queued)."""
        self._kick.set()

    def enqueued(self, sequence: int, late_answer: asyncio.Task[Payload] | None = None) -> None:
        """A message was queued (committed) at `sequence`. `late_answer`: it was sent once and the upstream may
        still answer that call (`AnswerLate`); the replay waits for that answer before sending it again."""
        if late_answer is not None:
            self._late_answers[sequence] = late_answer
        self.queued += 1
        self._kick.set()

    async def call(self, action: str, payload: Payload, *, listen_late: bool = False) -> Payload:
        """Raises `UpstreamUnavailable`, what `RpcConnection.call` raises, and with `listen_late`, `AnswerLate`
        for a call that timed out after it was sent (proxy Rule 4a)."""
        rpc = self._rpc
        if rpc is None:
            raise UpstreamUnavailable(f"upstream of {self._station.station_id} is not connected")
        return await rpc.call(action, payload, late_within=self._settings.late_wait if listen_late else None)

    # The connection loop ---------------------------------------------------------------------------------

    async def _run(self) -> None:
        attempt = 0
        while not self._closing.is_set():
            connects = self.connects
            try:
                async with connect(
                    self._uri,
                    subprotocols=[websockets.Subprotocol(self._face.subprotocol)],
                    additional_headers=self._headers(),
                    open_timeout=OPEN_TIMEOUT,
                    max_size=self._settings.limits.max_frame_bytes,
                    ping_interval=20,
                    ssl=self._tls() if self._tls is not None else None,
                ) as socket:
                    if socket.subprotocol != self._face.subprotocol:
                        raise ConnectionError(f"upstream did not accept subprotocol {self._face.subprotocol}")
                    attempt = 0
                    await self._serve(socket)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.connects == connects:
                    self._settings.links.failures += 1
                    self._failed(exc)
                else:
                    log.info(
                        "upstream connection lost",
                        extra={
                            "fields": {"station": self._station.station_id, "error": f"{type(exc).__name__}: {exc}"}
                        },
                    )
            finally:
                self._first_attempt.set()
            if self._closing.is_set():
                return
            await self._settings.clock.sleep(proxy.reconnect_delay(attempt, self._rng()))
            attempt += 1

    def _failed(self, exc: Exception) -> None:
        """An attempt failed: the link's state says why, and a new reason is logged (the same one, retried with
        backoff, only at debug level)."""
        failure, detail = describe_failure(exc, over_tls=self._uri.startswith("wss://"))
        state = f"{failure.value} ({detail})"[:300]
        fields = {"station": self._station.station_id, "failure": failure.name, "error": detail}
        if state == self._failure:
            log.debug("upstream connection failed", extra={"fields": fields})
            return
        self._failure = state
        level = logging.INFO if failure is LinkFailure.UNREACHABLE else logging.WARNING
        log.log(level, "upstream connection failed", extra={"fields": fields})
        self._settings.message_log.upstream(self._station.station_id, False, state)

    def _headers(self) -> dict[str, str]:
        if self._password is None:
            return {}
        return {"Authorization": basic_auth(self._station.station_id, self._password)}

    async def _serve(self, socket: ClientConnection) -> None:
        rpc = RpcConnection(
            f"upstream:{self._station.station_id}",
            socket.send,
            self._settings.clock,
            self._relay,
            limits=self._settings.limits,
            session_limits=SessionLimits(call_timeout=self._settings.call_timeout),
            log_frame=self._settings.message_log.logger(self._station.station_id, "upstream"),
            on_own_fault=self._settings.own_faults,
            time_call=self._settings.time_call,
            dialect=self._face.dialect(self._settings.limits),
        )
        self._rpc = rpc
        self._failure = None
        self.connects += 1
        self._settings.links.connects += 1
        self._settings.links.connected += 1
        self._settings.message_log.upstream(self._station.station_id, True)
        self._first_attempt.set()
        replay = asyncio.create_task(self._replay_loop(rpc))
        self._kick.set()
        try:
            async for message in socket:
                closing = await rpc.feed(message)
                if closing is not None:
                    await socket.close(closing.code, closing.reason)
                    break
        finally:
            self._rpc = None
            self._settings.links.connected -= 1
            self._settings.message_log.upstream(self._station.station_id, False)
            replay.cancel()
            await rpc.close()

    # Replay ----------------------------------------------------------------------------------------------

    async def _replay_loop(self, rpc: RpcConnection) -> None:
        policy = relaying.ReplayPolicy()
        last_sent = None
        while True:
            await self._kick.wait()
            self._kick.clear()
            while True:
                async with self._settings.store.transaction() as session:
                    head = await records.queue_head(session, self._station.station_id)
                    if head is None:
                        break
                    listened = self._late_answers.get(head.sequence)
                    if listened is None:
                        step = await self._face.next_replay(
                            session, self._station.station_id, head, last_sent, self._settings.clock.now(), policy
                        )
                if listened is not None:
                    await asyncio.wait([listened])  # wait, but a cancelled replay must not cancel the listening
                    del self._late_answers[head.sequence]
                    await self._settle_with(head, listened)  # unsettled, it is sent again by the next round
                    continue
                if step.step is relaying.ReplayStep.WAIT_THROTTLE:
                    assert step.not_before is not None
                    await self._settings.clock.sleep((step.not_before - self._settings.clock.now()).total_seconds())
                    continue
                if step.step is relaying.ReplayStep.DROP:
                    log.warning("queued message dropped", extra={"fields": {"action": head.action, "why": step.reason}})
                    async with self._settings.store.transaction() as session:
                        await records.dequeue(session, head.sequence)
                    self.queued -= 1
                    continue
                assert step.payload is not None
                last_sent = self._settings.clock.now()
                try:
                    answer = await rpc.call(head.action, step.payload, late_within=self._settings.late_wait)
                except AnswerLate as late:
                    self._late_answers[head.sequence] = late.answer
                    continue  # stays at the head, whose answer the next round waits for
                except CallTimedOut:
                    continue  # timed out before it was sent: stays at the head, sent again with a new message id
                except ConnectionLost:
                    return
                except (CallErrorReceived, PayloadViolation) as exc:
                    await self._refused(head, exc)
                    continue
                await self._settle(head, answer)

    async def _settle_with(self, head: relaying.QueuedMessage, late: asyncio.Task[Payload]) -> bool:
        """Settle the head with the late answer to a call that sent it. False when none came and none can come
        any more (the connection lost, or the wait over): the head is then sent again."""
        try:
            answer = late.result()
        except (CallTimedOut, ConnectionLost):
            return False
        except (CallErrorReceived, PayloadViolation) as exc:
            await self._refused(head, exc)
            return True
        await self._settle(head, answer)
        return True

    async def _refused(self, head: relaying.QueuedMessage, exc: CallErrorReceived | PayloadViolation) -> None:
        # Refused, or answered with something unusable: sending it again would get the same.
        log.warning(
            "upstream refused a queued message", extra={"fields": {"action": head.action, "error": exc.message}}
        )
        await self._settle(head, None)

    async def _settle(self, head: relaying.QueuedMessage, answer: Payload | None) -> None:
        async with self._settings.store.transaction() as session:
            await self._face.settle(session, head, answer)
            await records.dequeue(session, head.sequence)
        self.queued -= 1
