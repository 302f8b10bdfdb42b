"""The OCPP message log (every frame to and from stations and upstreams) and station heartbeats, written in batches.

Writing each frame in its own transaction would cost a commit per Heartbeat; frames are buffered in memory
and flushed every second by a worker, so the log lags by at most a second and costs one insert per batch.
Rows older than `RETENTION_DAYS` are purged by the same worker (decisions.md §4: 30 days).
"""

from __future__ import annotations

from collections import deque
from datetime import datetime, timedelta
from typing import cast

from sqlalchemy import Table, delete, insert, update
from sqlalchemy.dialects import postgresql, sqlite

from chargenet.clock import Clock
from chargenet.store.db import Store
from chargenet.store.models import OcppMessage, StationPresence
from chargenet.workers import LoopWorker

RETENTION_DAYS = 30
PURGE_EVERY = timedelta(minutes=1)
MAX_BUFFERED = 100_000  # beyond this the oldest unflushed frames are dropped rather than memory growing


class MessageLog(LoopWorker):
    name = "ocpp-message-log"

    def __init__(self, store: Store, clock: Clock, interval: float = 1.0) -> None:
        super().__init__(clock, interval)
        self._store = store
        self._buffer: deque[dict[str, object]] = deque(maxlen=MAX_BUFFERED)
        self._heartbeats: dict[str, datetime] = {}
        self._presence: dict[str, dict[str, object]] = {}
        self.dropped = 0
        self._purged_at: datetime | None = None

    def logger(self, station_id: str, peer: str) -> _FrameLogger:
        return _FrameLogger(self, station_id, peer)

    def add(self, station_id: str, peer: str, direction: str, frame: str) -> None:
        if len(self._buffer) == MAX_BUFFERED:
            self.dropped += 1  # the deque drops the oldest
        row = {"station_id": station_id, "peer": peer, "direction": direction, "frame": frame, "at": self.clock.now()}
        self._buffer.append(row)

    def heartbeat(self, station_id: str, at: datetime) -> None:
        """A station's heartbeat, written with the next batch: Heartbeats are the most frequent message and
        need no commit of their own (the API shows the last one with at most a second's lag)."""
        self._heartbeats[station_id] = at

    def connection(self, station_id: str, connected: bool, at: datetime) -> None:
        """A station connected or went away; written with the next batch (the live state is `Edge.is_connected`;
        the stored one, for other processes and the API, lags by at most a second)."""
        fields = self._presence.setdefault(station_id, {})
        fields["connected"] = connected
        fields["connected_at" if connected else "disconnected_at"] = at
        if connected:
            fields["last_seen_at"] = at

    async def run_once(self) -> None:
        batch, self._buffer = list(self._buffer), deque(maxlen=MAX_BUFFERED)
        heartbeats, self._heartbeats = self._heartbeats, {}
        presence, self._presence = self._presence, {}
        async with self._store.transaction() as session:
            if batch:
                # The table's own insert (not the ORM's bulk path): thousands of rows a second, so the per-row
                # cost on the event loop matters.
                await session.execute(insert(cast(Table, OcppMessage.__table__)), batch)
            for station_id, fields in presence.items():
                upsert = (postgresql.insert if self._store.dialect == "postgresql" else sqlite.insert)(StationPresence)
                await session.execute(
                    upsert.values(station_id=station_id, **fields).on_conflict_do_update(
                        index_elements=[StationPresence.station_id], set_=fields
                    )
                )
            if heartbeats:
                rows = [{"station_id": s, "last_heartbeat_at": at, "last_seen_at": at} for s, at in heartbeats.items()]
                await session.execute(update(StationPresence), rows)
            now = self.clock.now()
            if self._purged_at is None or now - self._purged_at >= PURGE_EVERY:
                self._purged_at = now
                await session.execute(delete(OcppMessage).where(OcppMessage.at < now - timedelta(days=RETENTION_DAYS)))


class _FrameLogger:
    __slots__ = ("_log", "_peer", "_station_id")

    def __init__(self, log: MessageLog, station_id: str, peer: str) -> None:
        self._log, self._station_id, self._peer = log, station_id, peer

    def __call__(self, direction: str, frame: str) -> None:
        self._log.add(self._station_id, self._peer, direction, frame)
