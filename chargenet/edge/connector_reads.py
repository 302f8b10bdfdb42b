"""The first read of a connector's last known status, gathered with the other links' first reads into one statement.

A link reads a connector's status from the store once, at the connector's first StatusNotification on that
connection, and keeps it from then on (`statuses`). After a process starts, or after a reconnect storm, thousands of
links make that first read within a second or two: one read each cost about a fifth of the edge's loop under such a
flood on SQLite (SQLAlchemy's connection, transaction and result for one row), and on PostgreSQL as many pool
checkouts and round trips as stations, queued behind each other for the pool's connections. The reads that arrive
while one is running wait for it and go together into the next, at most `MAX_CHARGE_POINTS` charge points a
statement; a lone read waits for nobody. Only the link that owns a station's connection writes its connectors'
statuses, and it waits for its read before it writes, so a read that waited a moment more still sees the last
status written.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from dataclasses import dataclass
from functools import partial

from chargenet.domain.tenants import ConnectorAddress
from chargenet.edge import statuses
from chargenet.store.db import Store

MAX_CHARGE_POINTS = 500  # a statement's IN list at most: well under SQLite's and asyncpg's parameter limits


@dataclass(slots=True, eq=False)
class _Wanted:
    address: ConnectorAddress
    ocpp_connector_id: int
    found: asyncio.Future[statuses.LoadedConnector]


class ConnectorReads:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._waiting: list[_Wanted] = []
        self._reader: asyncio.Task[None] | None = None
        self.statements = 0  # run so far

    async def load(self, address: ConnectorAddress, ocpp_connector_id: int) -> statuses.LoadedConnector:
        """The connector's last known status as the store has it. Raises `InvalidInput` for a connector above the
        limit that has no row, and what the read raised."""
        found: asyncio.Future[statuses.LoadedConnector] = asyncio.get_running_loop().create_future()
        self._waiting.append(_Wanted(address, ocpp_connector_id, found))
        if self._reader is None or self._reader.done():
            # In a context of its own: it reads for every link, so it must not carry the station id of the first.
            self._reader = asyncio.create_task(self._read(), name="connector-reads", context=contextvars.Context())
        return await found

    async def _read(self) -> None:
        while self._waiting:
            taken, ids = self._take()
            if not taken:
                continue
            try:
                rows = await self._store.read_statement(partial(statuses.load_connectors, charge_point_ids=ids))
            except asyncio.CancelledError:
                for wanted in taken:
                    wanted.found.cancel()  # the edge is closing (`close`)
                raise
            except Exception as exc:
                for wanted in taken:
                    if not wanted.found.done():
                        wanted.found.set_exception(exc)
                continue
            finally:
                self.statements += 1
            for wanted in taken:
                if wanted.found.done():
                    continue  # its caller was cancelled meanwhile
                key = (wanted.address.charge_point_id, wanted.address.connector_id)
                try:
                    wanted.found.set_result(
                        statuses.loaded_from(rows.get(key), wanted.address, wanted.ocpp_connector_id)
                    )
                except Exception as exc:
                    wanted.found.set_exception(exc)

    async def close(self) -> None:
        """Stop reading: a read in progress is cancelled, and so are the reads that wait (their links are shut)."""
        reader, self._reader = self._reader, None
        if reader is not None and not reader.done():
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        waiting, self._waiting = self._waiting, []
        for wanted in waiting:
            wanted.found.cancel()

    def _take(self) -> tuple[list[_Wanted], list[str]]:
        """The waiting reads of up to `MAX_CHARGE_POINTS` charge points, and those charge points; the rest wait."""
        taken: list[_Wanted] = []
        left: list[_Wanted] = []
        ids: dict[str, None] = {}
        for wanted in self._waiting:
            if wanted.found.done():
                continue
            charge_point_id = wanted.address.charge_point_id
            if charge_point_id in ids or len(ids) < MAX_CHARGE_POINTS:
                ids[charge_point_id] = None
                taken.append(wanted)
            else:
                left.append(wanted)
        self._waiting = left
        return taken, list(ids)
