"""The OCPP message log (every frame to and from stations and upstreams), station heartbeats and the meter-value
samples of transactions, written in batches.

Writing each frame in its own transaction would cost a commit per Heartbeat; frames are buffered in memory
and flushed every second by a worker, so the log lags by at most a second and costs one insert per batch.
Rows older than `RETENTION_DAYS` are purged by the same worker (decisions.md §4: 30 days).

Each frame is logged with its head (message type, message id, and action; an answer's action is its CALL's,
which the logger of that connection remembers), so the log can be searched by them. The buffer is bounded:
when it is full the oldest frames are dropped, and never silently. The log counts them per station and writes,
with the next batch and ahead of its frames, one `gap` row per station and peer saying how many frames, from
when to when, are missing there; a batch the store refused is counted the same way.

Samples (the energy of a transaction over time, for its chart) ride on the same batches: a MeterValues frame costs
no store round trip of its own. They are thinned per transaction (`domain.samples`), bounded like the frames
(the oldest dropped and counted), and purged with the log. They are written apart from the transaction's own
state change, which is acceptable because they are no event: a sample lost to a crash in the last second leaves
a point out of a chart, nothing a partner or a bill depends on (the start and stop readings are the transaction's).
"""

from __future__ import annotations

import json
import logging
import re
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from sqlalchemy import Table, bindparam, insert, update
from sqlalchemy.exc import SQLAlchemyError

from chargenet.clock import Clock
from chargenet.domain.samples import Sample, Thinning
from chargenet.edge.ocpp16.meter_values import Reported
from chargenet.edge.records import presence_upsert
from chargenet.store import samples as sample_store
from chargenet.store.db import Store
from chargenet.store.models import OcppMessage, StationNotice, StationPresence
from chargenet.store.notify import CONNECTOR_STATUS, notify
from chargenet.store.purge import purge_in_batches
from chargenet.workers import LoopWorker

log = logging.getLogger(__name__)

RETENTION_DAYS = 30
PURGE_EVERY = timedelta(minutes=1)
MAX_BUFFERED = 100_000  # beyond this the oldest unflushed frames are dropped rather than memory growing
MAX_BUFFERED_SAMPLES = 100_000
ROWS_PER_TRANSACTION = 1_000  # frames, and presence rows, that one transaction of the log writes at most
# Samples are purged by their own time: one a station stamps further ahead (a clock set wrong) is left out
# rather than kept past the retention.
SAMPLE_AHEAD = timedelta(days=1)
MAX_PENDING_CALLS = 256  # CALLs per connection whose answer's action the logger remembers
GAP = "gap"

# The head of an OCPP-J frame: `[2, "id", "Action", ...`, `[3, "id", ...` or `[4, "id", ...`.
_HEAD = re.compile(r'\s*\[\s*([234])\s*,\s*"([^"\\\x00-\x1f]{1,64})"\s*(?:,\s*"([A-Za-z0-9_]{1,64})")?')


@dataclass(frozen=True, slots=True)
class FrameHead:
    message_type: int | None
    message_id: str | None
    action: str | None


NO_HEAD = FrameHead(None, None, None)


def frame_head(frame: str) -> FrameHead:
    """The message type, message id and (for a CALL) action of a frame, read from its first bytes only; NO_HEAD
    for a frame that does not start as OCPP-J does. A CALLERROR's third element is its error code, not an action."""
    found = _HEAD.match(frame)
    if found is None:
        return NO_HEAD
    kind = int(found.group(1))
    return FrameHead(kind, found.group(2), found.group(3) if kind == 2 else None)


@dataclass(slots=True)
class _Gap:
    dropped: int
    first: datetime
    last: datetime


class MessageLog(LoopWorker):
    name = "ocpp-message-log"

    def __init__(self, store: Store, clock: Clock, interval: float = 1.0) -> None:
        super().__init__(clock, interval)
        self._store = store
        self._buffer: deque[dict[str, object]] = deque(maxlen=MAX_BUFFERED)
        self._heartbeats: dict[str, datetime] = {}
        self._presence: dict[str, dict[str, object]] = {}
        self._gaps: dict[tuple[str, str], _Gap] = {}
        self._samples: deque[Sample] = deque(maxlen=MAX_BUFFERED_SAMPLES)
        self._thinning = Thinning()
        self.dropped = 0
        self.samples_dropped = 0
        # The first purge comes PURGE_EVERY after start, not at it: a process starting after days down writes its
        # first batches (the stations reconnecting) before it clears the backlog of old frames.
        self._purged_at: datetime = clock.now()

    def logger(self, station_id: str, peer: str) -> _FrameLogger:
        return _FrameLogger(self, station_id, peer)

    def add(self, station_id: str, peer: str, direction: str, frame: str, head: FrameHead | None = None) -> None:
        if len(self._buffer) == MAX_BUFFERED:
            self.dropped += 1  # the deque drops the oldest
            self._count_lost([self._buffer[0]])
        head = head or frame_head(frame)
        row = {
            "station_id": station_id,
            "peer": peer,
            "direction": direction,
            "frame": frame,
            "at": self.clock.now(),
            "message_type": head.message_type,
            "message_id": head.message_id,
            "action": head.action,
        }
        self._buffer.append(row)

    def _count_lost(self, rows: list[dict[str, object]]) -> None:
        for row in rows:
            # A gap row lost again carries its count over.
            dropped = int(json.loads(cast(str, row["frame"]))["dropped"]) if row["direction"] == GAP else 1
            at = cast(datetime, row["at"])
            key = (cast(str, row["station_id"]), cast(str, row["peer"]))
            gap = self._gaps.get(key)
            if gap is None:
                self._gaps[key] = _Gap(dropped, at, at)
            else:
                gap.dropped += dropped
                gap.first, gap.last = min(gap.first, at), max(gap.last, at)

    def _gap_rows(self) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = []
        for (station_id, peer), gap in self._gaps.items():
            note = {"dropped": gap.dropped, "from": gap.first.isoformat(), "to": gap.last.isoformat()}
            rows.append(
                {
                    "station_id": station_id,
                    "peer": peer,
                    "direction": GAP,
                    "frame": json.dumps(note),
                    "at": gap.first,
                    "message_type": None,
                    "message_id": None,
                    "action": None,
                }
            )
        self._gaps = {}
        return rows

    def samples(self, station_id: str, transaction_id: int, reported: list[Reported], *, last: bool = False) -> None:
        """Meter values a station reported for a transaction, written with the next batch (those the thinning
        keeps); `last` when they are its final ones (StopTransaction's transactionData)."""
        latest = self.clock.now() + SAMPLE_AHEAD
        for value in reported:
            if value.at > latest or not self._thinning.keep(transaction_id, value.at):
                continue
            if len(self._samples) == MAX_BUFFERED_SAMPLES:
                self.samples_dropped += 1  # the deque drops the oldest
            self._samples.append(Sample(transaction_id, station_id, value.at, value.energy_wh, value.power_w))
        if last:
            self._thinning.forget(transaction_id)

    def heartbeat(self, station_id: str, at: datetime) -> None:
        """A station's heartbeat, written with the next batch: Heartbeats are the most frequent message and
        need no commit of their own (the API shows the last one with at most a second's lag)."""
        self._heartbeats[station_id] = at

    def connection(self, station_id: str, connected: bool, at: datetime, ocpp_version: str | None = None) -> None:
        """A station connected (with the subprotocol `ocpp_version`) or went away; written with the next batch (the
        live state is `Edge.is_connected`; the stored one, for other processes and the API, lags by at most a
        second)."""
        fields = self._presence.setdefault(station_id, {})
        fields["connected"] = connected
        fields["connected_at" if connected else "disconnected_at"] = at
        fields["upstream_connected"] = None  # until its upstream link, if it has one, says otherwise
        fields["upstream_failure"] = None
        if connected:
            fields["last_seen_at"] = at
            if ocpp_version is not None:
                fields["ocpp_version"] = ocpp_version

    def upstream(self, station_id: str, connected: bool, failure: str | None = None) -> None:
        """The station's link to its site's upstream came up or went down (`failure`: why its latest attempt
        failed); written with the next batch, so that every process's console can count the links that are down."""
        fields = self._presence.setdefault(station_id, {})
        fields["upstream_connected"] = connected
        fields["upstream_failure"] = None if connected else failure

    async def run_once(self) -> None:
        # Gaps first: the frames they stand for were older than every frame still buffered.
        frames = self._gap_rows() + list(self._buffer)
        self._buffer = deque(maxlen=MAX_BUFFERED)
        heartbeats, self._heartbeats = self._heartbeats, {}
        presence = list(self._presence.items())
        self._presence = {}
        samples = list(self._samples)
        self._samples = deque(maxlen=MAX_BUFFERED_SAMPLES)
        tail_written = False
        try:
            # In transactions of at most ROWS_PER_TRANSACTION frames and presence rows: after thousands of stations
            # dropped at once, one transaction writing them all held the store's writer for the stations'
            # reconnecting Boots and statuses to wait behind. Heartbeats and samples go with the last one, after
            # every presence row they may update.
            while not tail_written:
                chunk, presence_chunk = frames[:ROWS_PER_TRANSACTION], presence[:ROWS_PER_TRANSACTION]
                last = len(frames) <= ROWS_PER_TRANSACTION and len(presence) <= ROWS_PER_TRANSACTION
                if last:
                    await self._write(chunk, heartbeats, dict(presence_chunk), samples)
                    tail_written = True
                else:
                    await self._write(chunk, {}, dict(presence_chunk), [])
                frames, presence = frames[len(chunk) :], presence[len(presence_chunk) :]
        except BaseException:
            if not tail_written:
                self.samples_dropped += len(samples)
                for station_id, at in heartbeats.items():
                    self._heartbeats.setdefault(station_id, at)
            self.dropped += sum(1 for row in frames if row["direction"] != GAP)
            self._count_lost(frames)  # shown as a gap by the next batch that is written
            for station_id, fields in presence:  # the newer news, if any came meanwhile, wins
                self._presence[station_id] = {**fields, **self._presence.get(station_id, {})}
            raise
        await self._purge_when_due()

    async def _purge_when_due(self) -> None:
        """Frames past the retention, every PURGE_EVERY, in transactions of their own after the batch's (a purge
        that found a backlog, after days down, would otherwise hold the batch's transaction and the write lock)."""
        now = self.clock.now()
        if now - self._purged_at < PURGE_EVERY:
            return
        self._purged_at = now
        cutoff = now - timedelta(days=RETENTION_DAYS)
        await purge_in_batches(self._store, _messages, _messages.c.at < cutoff)
        await purge_in_batches(self._store, _notices, _notices.c.received_at < cutoff)  # 2.0.1 stations' reports
        # The meters' samples too: this worker runs in every serving process.
        await sample_store.purge(self._store, cutoff)

    async def _write(
        self,
        batch: list[dict[str, object]],
        heartbeats: dict[str, datetime],
        presence: dict[str, dict[str, object]],
        samples: list[Sample],
    ) -> None:
        async with self._store.transaction() as session:
            if batch:
                # The table's own insert (not the ORM's bulk path): thousands of rows a second, so the per-row
                # cost on the event loop matters.
                await session.execute(insert(cast(Table, OcppMessage.__table__)), batch)
            if presence:
                # A station connected or went away: the live feeds of other processes show it now. Heartbeats
                # alone notify nobody (every batch would wake every feed); the feeds' polls find them.
                notify(session, CONNECTOR_STATUS)
            # Rows with the same fields share one statement, run once for all of them: a reconnect storm changes
            # the presence of thousands of stations in one batch, and a statement built per station held the event
            # loop for seconds while reconnecting stations waited to be accepted.
            by_fields: dict[tuple[str, ...], list[dict[str, object]]] = {}
            for station_id, fields in presence.items():
                by_fields.setdefault(tuple(sorted(fields)), []).append({"station_id": station_id, **fields})
            for names, rows in by_fields.items():
                await session.execute(presence_upsert(self._store.dialect, names), rows)
            if heartbeats:
                rows = [
                    {"b_station_id": s, "b_last_heartbeat_at": at, "b_last_seen_at": at} for s, at in heartbeats.items()
                ]
                await session.execute(_HEARTBEATS, rows)
            if samples:
                try:
                    # Apart, so that samples the store refuses cost their own rows, never the frames'.
                    async with session.begin_nested():
                        await sample_store.write(session, samples)
                except (SQLAlchemyError, OverflowError, ValueError):  # the driver's or our own bind checks
                    log.exception("meter-value samples refused by the store", extra={"fields": {"n": len(samples)}})
                    self.samples_dropped += len(samples)


_presence = cast(Table, StationPresence.__table__)
_messages = cast(Table, OcppMessage.__table__)
_notices = cast(Table, StationNotice.__table__)
_HEARTBEATS = (
    update(_presence)
    .where(_presence.c.station_id == bindparam("b_station_id"))
    .values(last_heartbeat_at=bindparam("b_last_heartbeat_at"), last_seen_at=bindparam("b_last_seen_at"))
)


class _FrameLogger:
    """Logs one connection's frames, remembering its open CALLs so that each answer is logged with its action."""

    __slots__ = ("_calls", "_log", "_peer", "_station_id")

    def __init__(self, log: MessageLog, station_id: str, peer: str) -> None:
        self._log, self._station_id, self._peer = log, station_id, peer
        self._calls: dict[str, str] = {}

    def __call__(self, direction: str, frame: str) -> None:
        head = frame_head(frame)
        if head.message_id is not None:
            if head.action is not None:
                if len(self._calls) >= MAX_PENDING_CALLS:
                    del self._calls[next(iter(self._calls))]  # the oldest: never answered
                self._calls[head.message_id] = head.action
            elif head.message_type in (3, 4):
                action = self._calls.pop(head.message_id, None)
                head = FrameHead(head.message_type, head.message_id, action)
        self._log.add(self._station_id, self._peer, direction, frame, head)
