"""The live connector table, sans-IO: what a process knows of every connector and station link, which reads
change it, and what each open browser still has to be sent.

Theory of operation. One reader per process (`chargenet.console.live`) follows what the edge commits and hands
what it read to `LiveState.absorb`, which answers the rows whose display changed: a connector's own status, or
every connector of a station whose link (connected, last heartbeat) changed. The reader reads overlapping
windows, so most of what it hands in is already known; that is filtered here, once, not per browser.
`Fanout` then queues each changed row for the subscribers (one per open browser) of the row's company.

Rule 1: a read never takes a row back in time: a connector state older than the one known (by the time the edge
        received it) is ignored, and so is a station link state whose newest instant is older than the known one's.
Rule 2: a subscriber's queue holds at most one entry per row, its latest state; a row changed again while queued
        moves to the end, so rows are sent in the order of their last change and a slow browser gets the newest
        state, never a stale one.
Rule 3: a queue is bounded (`capacity` rows). A subscriber that would exceed it is dropped to `RESYNC`: its
        queue is freed and the browser is told to read the table again, rather than being left wrong or holding
        the process's memory.
Rule 4: a subscriber sees only rows of its own company.
Rule 5: every published row gets the next `generation`, and the last `history` rows are kept with the instant
        they were published. A page read from the store carries a `Mark` (this feed, its generation, the
        instant); its stream, opened a moment later, is first sent the rows published since, so nothing
        published between the two is lost. A mark of another feed (the page came from another process sharing
        the store) is sent the whole history, whose latest state of each row is at least as new as the page's
        (the feeds follow the same store), if the history reaches back to the page's instant; otherwise, and
        when rows after the mark are no longer all kept, the stream gets `RESYNC`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Final

ConnectorKey = tuple[str, int]  # (charge point id, connector id): connector ids are per charge point


@dataclass(frozen=True, slots=True)
class ConnectorState:
    """A connector's last known status as stored (`connectors`), with where it sits in the tenant tree.
    `status_at` is the station's timestamp of the report, `received_at` when the edge recorded it."""

    company_id: str
    site_id: str
    station_id: str
    charge_point_id: str
    connector_id: int
    status: str | None
    error_code: str | None
    info: str | None
    status_at: datetime | None
    received_at: datetime | None

    @property
    def key(self) -> ConnectorKey:
        return (self.charge_point_id, self.connector_id)


@dataclass(frozen=True, slots=True)
class StationLink:
    """A station's OCPP link as stored (`station_presence`): any process sharing the store may hold it."""

    station_id: str
    connected: bool
    connected_at: datetime | None = None
    disconnected_at: datetime | None = None
    last_heartbeat_at: datetime | None = None
    ocpp_version: str | None = None  # the subprotocol of its latest connection

    @property
    def newest(self) -> datetime | None:
        instants = [t for t in (self.connected_at, self.disconnected_at, self.last_heartbeat_at) if t is not None]
        return max(instants) if instants else None


@dataclass(frozen=True, slots=True)
class LiveRow:
    """One row of the table: a connector and its station's link. A station without a link is offline, and so
    are its connectors, whatever they last reported."""

    connector: ConnectorState
    link: StationLink | None

    @property
    def key(self) -> ConnectorKey:
        return self.connector.key

    @property
    def company_id(self) -> str:
        return self.connector.company_id

    @property
    def online(self) -> bool:
        return self.link is not None and self.link.connected

    @property
    def shown_status(self) -> str:
        """What the status column says: `Offline` for a station not connected, else the reported status."""
        if not self.online:
            return "Offline"
        return self.connector.status or "Not reported"


def _older(new: datetime | None, known: datetime | None) -> bool:
    return new is not None and known is not None and new < known


class LiveState:
    """Every connector and station link the process has read, and which rows a new read changes."""

    def __init__(self) -> None:
        self._connectors: dict[ConnectorKey, ConnectorState] = {}
        self._links: dict[str, StationLink] = {}
        self._by_station: dict[str, dict[ConnectorKey, None]] = {}

    def __len__(self) -> int:
        return len(self._connectors)

    def knows_station(self, station_id: str) -> bool:
        return station_id in self._by_station

    def row(self, key: ConnectorKey) -> LiveRow | None:
        connector = self._connectors.get(key)
        if connector is None:
            return None
        return LiveRow(connector, self._links.get(connector.station_id))

    def absorb(self, connectors: Iterable[ConnectorState], links: Iterable[StationLink] = ()) -> list[LiveRow]:
        """Take in what a read found; answer the rows whose display changed, each once, in the order of the
        changes (connectors first, then the rows of stations whose link changed)."""
        changed: dict[ConnectorKey, None] = {}
        for connector in connectors:
            known = self._connectors.get(connector.key)
            if known == connector or (known is not None and _older(connector.received_at, known.received_at)):
                continue  # Rule 1, and the overlap of the reader's windows
            self._connectors[connector.key] = connector
            self._by_station.setdefault(connector.station_id, {})[connector.key] = None
            changed.pop(connector.key, None)
            changed[connector.key] = None
        for link in links:
            known_link = self._links.get(link.station_id)
            if known_link == link or (known_link is not None and _older(link.newest, known_link.newest)):
                continue
            self._links[link.station_id] = link
            for key in self._by_station.get(link.station_id, {}):
                changed.pop(key, None)
                changed[key] = None
        rows = [self.row(key) for key in changed]
        return [row for row in rows if row is not None]


class StreamEnd(Enum):
    """Why a subscriber's stream ends: it fell behind (Rule 3: the browser reads the table again), or it was
    ended (its operator signed out, or the process is stopping)."""

    RESYNC = "resync"
    ENDED = "ended"


RESYNC: Final = StreamEnd.RESYNC
ENDED: Final = StreamEnd.ENDED
DEFAULT_CAPACITY = 2_000
DEFAULT_HISTORY = 10_000
# Clocks of processes sharing a store differ a little, and a feed reads a little behind the store.
MARK_MARGIN = timedelta(seconds=5)


@dataclass(frozen=True, slots=True)
class Mark:
    """Where a page read from the store stands in a feed's sequence (Rule 5)."""

    feed_id: str
    generation: int
    at: datetime

    def encode(self) -> str:
        return f"{self.feed_id}.{self.generation}.{int(self.at.timestamp() * 1000)}"

    @classmethod
    def decode(cls, text: str) -> Mark | None:
        """The mark a page carried; None for text that is not one (the stream then starts with `RESYNC`)."""
        feed_id, _, rest = text.partition(".")
        generation, _, millis = rest.partition(".")
        if not feed_id.isalnum() or len(feed_id) > 32 or not generation.isdigit() or not millis.isdigit():
            return None
        if len(generation) > 18 or len(millis) > 15:
            return None
        return cls(feed_id, int(generation), datetime.fromtimestamp(int(millis) / 1000, tz=UTC))


@dataclass(eq=False, slots=True)
class Subscription:
    """One open browser stream: the rows it still has to be sent (Rule 2), or `behind` once it overflowed."""

    company_id: str
    capacity: int = DEFAULT_CAPACITY
    session_hash: str | None = None  # the console session it belongs to, so signing out can end it
    pending: dict[ConnectorKey, LiveRow] = field(default_factory=dict)
    behind: bool = False
    ended: bool = False

    def offer(self, row: LiveRow) -> bool:
        """Queue `row`; False when it was not for this subscriber or the subscriber is already behind."""
        if self.behind or self.ended or row.company_id != self.company_id:  # Rule 4
            return False
        self.pending.pop(row.key, None)
        if len(self.pending) >= self.capacity:
            self.pending = {}  # Rule 3: free what it held; it reads the whole table again
            self.behind = True
            return True
        self.pending[row.key] = row
        return True

    def take(self) -> list[LiveRow] | StreamEnd:
        """What to send now: the queued rows (emptying the queue), `RESYNC` once behind, `ENDED` once ended."""
        if self.ended:
            return ENDED
        if self.behind:
            return RESYNC
        rows = list(self.pending.values())
        self.pending = {}
        return rows

    @property
    def ready(self) -> bool:
        return self.behind or self.ended or bool(self.pending)


class Fanout:
    """The subscribers of one process, and which of them a batch of changed rows concerns."""

    def __init__(self, feed_id: str, history: int = DEFAULT_HISTORY) -> None:
        self.feed_id = feed_id
        self._subscriptions: dict[int, Subscription] = {}
        self._history: deque[tuple[int, datetime, LiveRow]] = deque(maxlen=history)
        self.generation = 0  # of the last row published (Rule 5)

    def __len__(self) -> int:
        return len(self._subscriptions)

    def mark(self, now: datetime) -> Mark:
        return Mark(self.feed_id, self.generation, now)

    def subscribe(
        self,
        company_id: str,
        *,
        capacity: int = DEFAULT_CAPACITY,
        session_hash: str | None = None,
        since: Mark | None = None,
    ) -> Subscription:
        """A new subscriber; with `since`, first queued the rows published after the page's mark (Rule 5)."""
        subscription = Subscription(company_id, capacity, session_hash)
        self._subscriptions[id(subscription)] = subscription
        if since is None:
            return subscription
        if since.feed_id == self.feed_id:
            complete = since.generation <= self.generation and (
                since.generation == self.generation
                or (bool(self._history) and self._history[0][0] <= since.generation + 1)
            )
            after = since.generation
        else:
            # Everything published since the page was read is kept while nothing older than it has been dropped.
            complete = not self._history or self._history[0][0] == 1 or self._history[0][1] <= since.at - MARK_MARGIN
            after = 0
        if not complete:
            subscription.behind = True
            return subscription
        for generation, _, row in self._history:
            if generation > after:
                subscription.offer(row)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.pop(id(subscription), None)
        subscription.pending = {}

    def publish(self, rows: Iterable[LiveRow], now: datetime) -> list[Subscription]:
        """Queue each row for the subscribers of its company; answer those that got something."""
        by_company: dict[str, list[LiveRow]] = {}
        for row in rows:
            self.generation += 1
            self._history.append((self.generation, now, row))
            by_company.setdefault(row.company_id, []).append(row)
        woken = []
        for subscription in self._subscriptions.values():
            offered = False
            for row in by_company.get(subscription.company_id, ()):
                offered = subscription.offer(row) or offered
            if offered:
                woken.append(subscription)
        return woken

    def end_session(self, session_hash: str) -> list[Subscription]:
        """Mark the subscriptions of a console session that ended (signed out): their streams close."""
        ended = [s for s in self._subscriptions.values() if s.session_hash == session_hash]
        for subscription in ended:
            subscription.ended = True
            subscription.pending = {}
        return ended

    def end_all(self) -> list[Subscription]:
        """Mark every subscription ended (the process is stopping)."""
        for subscription in self._subscriptions.values():
            subscription.ended = True
            subscription.pending = {}
        return list(self._subscriptions.values())
