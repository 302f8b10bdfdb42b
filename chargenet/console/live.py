"""The process's one live feed of connector status, and the waits of the browser streams it serves.

One reader per process follows the store (`services.connector_status.read_changes`), never a query per browser.
While at least one browser stream is open, it reads at once after this process's own commits that published
events (`outbox.signal.outbox_committed`, which a StatusNotification's write does); at once after any process
sharing a PostgreSQL store, this one included, wrote connector statuses or station connections (their
notification on `store.notify.CONNECTOR_STATUS`); and otherwise every `poll_every` seconds of the injected clock.
The poll finds what no wake-up told of: on SQLite, what other processes committed and what raises no event (a
connection, a new error code under the same status); on PostgreSQL only heartbeats, and what a dropped listening
connection missed, so while the process listens it slows to `poll_every_listening`. With no stream open it does
not read at all: the first browser's stream wakes it, and it catches up by reading every connector and link
again, as at its start (bounded by the fleet, where reading the events raised meanwhile is not: a day of a busy
network's statuses), publishing what differs; the page the browser shows was read from the store, and its stream
resumes from the mark taken then, so nothing in between is lost. What changed goes through the sans-IO core
(`domain.live`): `LiveState` drops what is already known, `Fanout` queues it for each open stream of the row's
company, bounded, and drops a stream that falls behind to a resync.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain.live import DEFAULT_CAPACITY, Fanout, LiveRow, LiveState, Mark, StreamEnd, Subscription
from chargenet.outbox.signal import outbox_committed
from chargenet.services import connector_status
from chargenet.store.notify import CONNECTOR_STATUS, Listener
from chargenet.waiting import first_of, sleep_until

log = logging.getLogger(__name__)

POLL_EVERY = 0.5  # seconds between reads for what other processes committed
POLL_EVERY_LISTENING = 2.0  # the same while PostgreSQL's notifications tell of it
OVERLAP = timedelta(seconds=2)  # re-read behind the newest instant seen: a row stamped earlier may commit later


class LiveFeed:
    """A worker (`run`) that follows the store, and the subscriptions of this process's browser streams."""

    name = "console-live-feed"

    def __init__(
        self,
        read: Callable[[], AbstractAsyncContextManager[AsyncSession]],
        clock: Clock,
        *,
        poll_every: float = POLL_EVERY,
        poll_every_listening: float = POLL_EVERY_LISTENING,
        listener: Listener | None = None,
        overlap: timedelta = OVERLAP,
        capacity: int = DEFAULT_CAPACITY,
    ) -> None:
        self._read = read
        self.clock = clock
        self.poll_every = poll_every
        self.poll_every_listening = poll_every_listening
        self.listener = listener
        self.overlap = overlap
        self.capacity = capacity
        self.state = LiveState()
        self.fanout = Fanout(secrets.token_hex(8))
        self._marks: connector_status.Marks | None = None
        self._behind = False  # nobody watched for a while: the next read reads everything again
        self._wakers: dict[int, asyncio.Event] = {}
        self._watched = asyncio.Event()
        self.started = asyncio.Event()  # set once the first read is in
        self.stopped = False  # the process is stopping: streams end without telling browsers to reload

    # --- the reader -----------------------------------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        committed = outbox_committed()
        notified = self.listener.subscribe(CONNECTOR_STATUS) if self.listener is not None else asyncio.Event()
        try:
            while not stopping.is_set():
                # A commit or a first browser while reading sets them again: the next wait returns at once.
                committed.clear()
                notified.clear()
                self._watched.clear()
                read_at = self.clock.now()
                try:
                    await self.run_once()
                except Exception:
                    # The store may be away for a moment; the streams stay open and the next read catches up.
                    log.exception("the live feed could not read the store")
                await self._wait(read_at, committed, notified, stopping)
        finally:
            if self.listener is not None:
                self.listener.unsubscribe(CONNECTOR_STATUS, notified)
            self.end_all()

    async def _wait(
        self, read_at: datetime, committed: asyncio.Event, notified: asyncio.Event, stopping: asyncio.Event
    ) -> None:
        if not self._wakers:
            # Nobody watches: reading for nobody, after every commit or even twice a second, was 6 % of the edge's
            # time under a flood of StatusNotifications. The first browser wakes the feed, which then catches up.
            self._behind = True
            await first_of(stopping.wait(), self._watched.wait())
            return
        poll = self.poll_every
        if self.listener is not None and self.listener.listening(CONNECTOR_STATUS):
            poll = max(poll, self.poll_every_listening)
        # The poll is due a period after the last read began, not after it ended.
        due = read_at + timedelta(seconds=poll)
        await first_of(
            sleep_until(self.clock, due), stopping.wait(), self._watched.wait(), committed.wait(), notified.wait()
        )

    async def run_once(self) -> int:
        """One read of the store; answers how many rows changed (0 for the first read, which only learns)."""
        async with self._read() as session:
            if self._marks is None or self._behind:
                whole = await connector_status.read_everything(session, now=self.clock.now())
                first = self._marks is None
                rows = self.state.absorb(whole.connectors, whole.links)
                self._marks, self._behind = whole.marks, False
                if first:
                    self.started.set()
                    return 0
            else:
                read = await connector_status.read_changes(
                    session, self._marks, now=self.clock.now(), overlap=self.overlap
                )
                # A station met first through its link (created after the first read): its connectors, so that its
                # rows follow its connection too.
                unknown = sorted(
                    {link.station_id for link in read.links if not self.state.knows_station(link.station_id)}
                )
                extra = await connector_status.read_station_connectors(session, unknown)
                self._marks = read.marks
                rows = self.state.absorb([*extra, *read.connectors], read.links)
        if rows:
            for subscription in self.fanout.publish(rows, self.clock.now()):
                self._wake(subscription)
        return len(rows)

    # --- the streams ----------------------------------------------------------------------------------------

    def mark(self) -> Mark:
        """Where a page read from the store now stands in this feed (its stream resumes from there)."""
        return self.fanout.mark(self.clock.now())

    def subscribe(self, company_id: str, *, session_hash: str | None = None, since: Mark | None = None) -> Subscription:
        subscription = self.fanout.subscribe(company_id, capacity=self.capacity, session_hash=session_hash, since=since)
        if not self._wakers:
            self._watched.set()  # the reader, idle while nobody watched, catches up and then follows every commit
        self._wakers[id(subscription)] = asyncio.Event()
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self.fanout.unsubscribe(subscription)
        self._wakers.pop(id(subscription), None)

    async def next(self, subscription: Subscription, quiet: float) -> list[LiveRow] | StreamEnd:
        """What to send the stream now: its queued rows, or the end of the stream; an empty list after
        `quiet` seconds (of the injected clock) without anything."""
        waker = self._wakers.get(id(subscription))
        if waker is not None and not subscription.ready:
            waker.clear()
            timer = asyncio.create_task(self.clock.sleep(quiet))
            woken = asyncio.create_task(waker.wait())
            try:
                await asyncio.wait([timer, woken], return_when=asyncio.FIRST_COMPLETED)
            finally:
                timer.cancel()
                woken.cancel()
        return subscription.take()

    def end_session(self, session_hash: str) -> None:
        """The operator signed out: the streams of that console session close."""
        for subscription in self.fanout.end_session(session_hash):
            self._wake(subscription)

    def end_all(self) -> None:
        """The process is stopping: every stream closes (the browsers reconnect to whichever process serves)."""
        self.stopped = True
        for subscription in self.fanout.end_all():
            self._wake(subscription)

    def _wake(self, subscription: Subscription) -> None:
        waker = self._wakers.get(id(subscription))
        if waker is not None:
            waker.set()
