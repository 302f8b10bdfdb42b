"""The edge at run time: the connected stations and the entry point for commands.

`Edge` is the registry (a second connection of a station replaces the first), holds what every station link
shares (the group commit, the status writer, the heartbeat intervals given), and sends commands (API, CLI) over
a station's link (`station.StationLink`, which answers the station's own CALLs) or through the relay.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain.generations import OCPP16, OCPP201
from chargenet.domain.tenants import ConnectorAddress
from chargenet.edge import records, relay, statuses
from chargenet.edge.admission import Admission
from chargenet.edge.authorizers import Authorizer
from chargenet.edge.certificates import StationCertificates
from chargenet.edge.committer import GroupCommitter
from chargenet.edge.connection import CallTimer, ConnectionLost, OwnFaults
from chargenet.edge.connector_reads import ConnectorReads
from chargenet.edge.core.status import TransitionCounts
from chargenet.edge.messagelog import MessageLog
from chargenet.edge.ocpp16 import frames, proxy
from chargenet.edge.ocpp16.errors import CallErrorReceived, CallTimedOut, LocalProtocolError, PayloadViolation
from chargenet.edge.ocpp16.frames import FrameLimits, Payload
from chargenet.edge.ocpp201 import frames as frames201
from chargenet.edge.power import PowerController
from chargenet.edge.station import CloseTransport, LinkBase, StationLink
from chargenet.edge.station201 import SecurityEvents, Station201Link
from chargenet.edge.upstream import UpstreamLinks
from chargenet.errors import (
    CommandNotForGeneration,
    StationAnswerFailed,
    StationDidNotAnswer,
    StationNotConnected,
)
from chargenet.keys import KeyStore
from chargenet.keys.upstream_tls import UpstreamTlsContexts
from chargenet.outbox import Outbox
from chargenet.store.db import Store
from chargenet.workers import LoopWorker

log = logging.getLogger(__name__)

IDLE_SWEEP_INTERVAL = 10.0

_COMMANDS_OF = {OCPP16: frames.CENTRAL_ACTIONS, OCPP201: frames201.CENTRAL_ACTIONS}


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
        trusted_proxies: str | None = None,
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
        self.upstream_tls = UpstreamTlsContexts(keys)
        self.time_station_call = time_station_call
        self.time_upstream_call = time_upstream_call
        self.security_events = SecurityEvents()
        self.admission = Admission(store, keys, trusted_proxies)
        self.certificates = StationCertificates(keys, clock, self.unit)
        self._links: dict[str, LinkBase] = {}
        # The heartbeat interval each station was last given (proxy Rule 7), kept across its reconnects: a
        # station may carry on after a reconnect without a new BootNotification.
        self._intervals: dict[str, int] = {}
        self._committer = GroupCommitter(store)
        self._status_writer = statuses.bulk_writer(outbox)
        self._connector_reads = ConnectorReads(store)
        # Told of what changes a site's power: a session's start or end, a station's connection (`power`).
        self.power_listeners: list[Callable[[str, str | None], None]] = []
        self.power: PowerController | None = None  # the site power controller the app installed

    def unit(self) -> AbstractAsyncContextManager[AsyncSession]:
        """A unit of database work sharing a group commit (see `committer`)."""
        return self._committer.unit()

    def note_progress(self, progress: records.Progress) -> None:
        """A running transaction's progress, written with a coming batch that nobody waits for, all of a batch's
        in one statement (`records.write_progress`): bookkeeping whose loss in a crash costs nothing a station's
        next messages do not set right. A failure is logged by the committer."""
        self._committer.submit_bulk(records.write_progress, progress, now=False).add_done_callback(_retrieved)

    @property
    def connected_stations(self) -> list[str]:
        return sorted(self._links)

    @property
    def connected_count(self) -> int:
        return len(self._links)

    def is_connected(self, station_id: str) -> bool:
        return station_id in self._links

    def generation_here(self, station_id: str) -> str | None:
        """The subprotocol of this process's connection to the station; None when it is not connected here."""
        link = self._links.get(station_id)
        return None if link is None else link.generation

    def power_changed(self, site_id: str, reconnected: str | None = None) -> None:
        """A session started or ended on the site, or a station of it (`reconnected`) connected."""
        for listener in self.power_listeners:
            listener(site_id, reconnected)

    async def attach(
        self,
        station: records.StationInfo,
        send: Callable[[str], Awaitable[None]],
        close: CloseTransport,
        subprotocol: str = OCPP16,
    ) -> LinkBase:
        """A station connected, speaking `subprotocol`. An older connection of the same station is closed first
        (it is stale: the station itself has moved on), so commands never go to a dead socket."""
        previous = self._links.pop(station.station_id, None)
        if previous is not None:
            await previous.shut(1000, "replaced by a new connection")
        link: LinkBase
        if subprotocol == OCPP201:
            link = Station201Link(self, station, send, close, self.security_events)
        else:
            link = StationLink(self, station, send, close)
        self._links[station.station_id] = link
        self.message_log.connection(station.station_id, True, self.clock.now(), subprotocol)
        await link.open_upstream()
        self.power_changed(station.site_id, station.station_id)
        return link

    async def detach(self, link: LinkBase) -> None:
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
        # The use cases word each command for the generation the station's stored presence names; a station that
        # has since reconnected speaking the other one is refused rather than sent words it does not speak.
        if action not in _COMMANDS_OF[link.generation]:
            raise CommandNotForGeneration(station_id, action, link.generation)
        try:
            return await link.call_station(action, payload)
        except LocalProtocolError:
            # The same action in both generations, worded for the other one (its schema here refuses it).
            raise CommandNotForGeneration(station_id, action, link.generation) from None
        except CallTimedOut:
            raise StationDidNotAnswer(station_id, action, "timed out") from None
        except ConnectionLost:
            raise StationDidNotAnswer(station_id, action, "connection lost") from None
        except CallErrorReceived as exc:
            raise StationAnswerFailed(station_id, action, exc.code.value, exc.description) from None
        except PayloadViolation as exc:
            raise StationAnswerFailed(station_id, action, None, f"{exc.field}: {exc.message}") from None

    async def load_connector(self, address: ConnectorAddress, ocpp_connector_id: int) -> statuses.LoadedConnector:
        """A connector's last known status, read with the other links' first reads (`connector_reads`)."""
        return await self._connector_reads.load(address, ocpp_connector_id)

    async def write_status(self, write: statuses.StatusWrite) -> None:
        await self._committer.bulk(self._status_writer, write)

    def write_status_with_unit(self, write: statuses.StatusWrite) -> asyncio.Future[None]:
        """From the body of a unit (`unit`): the status written with the status writes of that unit's batch, in
        its transaction, and only if the unit ends well."""
        return self._committer.submit_bulk_with_unit(self._status_writer, write)

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
        await self._connector_reads.close()
        await self._committer.settled()  # what was written behind goes in too
        await self._committer.close()


def _retrieved(future: asyncio.Future[None]) -> None:
    """Nobody waits for a write behind the answers: its failure, logged where it failed, is taken here."""
    if not future.cancelled():
        future.exception()


class IdleSweeper(LoopWorker):
    """One task for all connections, rather than a timer per connection."""

    name = "ocpp-idle-sweeper"

    def __init__(self, edge: Edge, interval: float = IDLE_SWEEP_INTERVAL) -> None:
        super().__init__(edge.clock, interval)
        self._edge = edge

    async def run_once(self) -> None:
        await self._edge.close_idle()
