"""Group commit for the edge: units of work from many stations share one transaction, so one commit (one fsync)
serves a whole batch, and each station is answered only after its own work is durable.

A unit is the body of an `async with committer.unit() as session:` block, run in the caller's task while the
committer holds the batch's transaction open. Each unit runs inside its own savepoint, so one that fails (a
duplicate start losing a unique constraint, a bad connector id) is rolled back alone and its caller gets its
exception, while the rest of the batch commits. A unit that stops in the middle of a statement (its caller was
cancelled: a station went away) may leave the session unusable; the batch then ends at that unit, is rolled back
and discarded, and the units still waiting get a new transaction: nothing inherits a broken session. A batch takes
units until none is waiting (or it is full), so a lone unit waits for nobody and a busy edge commits many at once.
Units are short: database work only, never a network call.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import DBAPIError, PendingRollbackError
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.store.db import Store

log = logging.getLogger(__name__)

MAX_BATCH = 256


class _BodyFailed(Exception):
    """The body of a `unit()` raised; its savepoint is rolled back and the caller re-raises the original.

    `reusable` is False when the body may have stopped in the middle of a statement (it was cancelled) or the
    connection under it is gone: the batch's session is then suspect, and no later unit gets it."""

    def __init__(self, reusable: bool) -> None:
        super().__init__()
        self.reusable = reusable


def _leaves_session_reusable(exc: BaseException) -> bool:
    if not isinstance(exc, Exception):
        return False  # cancelled: a statement may be half-way, the driver's connection in an unknown state
    if isinstance(exc, PendingRollbackError):
        return False
    return not (isinstance(exc, DBAPIError) and exc.connection_invalidated)


class _SessionDiscarded(Exception):
    """The batch's transaction was rolled back without a commit because a unit left its session suspect."""

    def __init__(self) -> None:
        super().__init__("the unit of work was rolled back with its batch: another unit broke the batch's session")


@dataclass(slots=True)
class _Lease:
    handoff: asyncio.Future[AsyncSession]
    finished: asyncio.Future[None]
    committed: asyncio.Future[None]


BulkHandler = Callable[[AsyncSession, list[Any]], Awaitable[None]]


def _settle(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for future in futures:
        if future.done():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


class GroupCommitter:
    def __init__(self, store: Store, max_batch: int = MAX_BATCH) -> None:
        self._store = store
        self._max_batch = max_batch
        self._queue: list[_Lease] = []
        self._bulk: dict[BulkHandler, list[tuple[Any, asyncio.Future[None]]]] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.batches = 0
        self.units = 0

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[AsyncSession]:
        """`async with committer.unit() as session:` like `store.transaction()`, but sharing the commit of a
        batch; the block's effects are durable when the `async with` statement completes."""
        loop = asyncio.get_running_loop()
        lease = _Lease(loop.create_future(), loop.create_future(), loop.create_future())
        self._queue.append(lease)
        self._wake.set()
        if self._task is None or self._task.done():
            self._start()
        session = await lease.handoff
        try:
            yield session
            # Flushed here, in the caller's task: what the body left pending (a row whose key another process
            # took meanwhile) fails this unit alone, not the savepoint's release in the batch.
            await session.flush()
        except BaseException as exc:
            lease.finished.set_exception(_BodyFailed(_leaves_session_reusable(exc)))
            raise
        lease.finished.set_result(None)
        await lease.committed

    async def bulk(self, handler: BulkHandler, item: Any) -> None:
        """Hand `item` to `handler`, which writes all items of a batch with a few multi-row statements; returns
        once the batch has committed. Raises what the handler raised (for every item of its batch)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._bulk.setdefault(handler, []).append((item, future))
        self._wake.set()
        if self._task is None or self._task.done():
            self._start()
        await future

    def _start(self) -> None:
        # In a context of its own: the loop serves every station, so it must not inherit the station id (or the
        # request id) of the caller that happened to start it, which every line it logs would then carry.
        self._task = asyncio.create_task(self._loop(), name="edge-group-commit", context=contextvars.Context())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue or self._bulk:
                await self._commit()

    async def _commit(self) -> None:
        # Units that arrive while this batch runs join it, up to the limit: under load the batch grows to
        # what arrives during one commit, which is what makes group commit pay.
        done: list[_Lease] = []
        written: list[asyncio.Future[None]] = []
        taken = 0
        suspect = False
        try:
            async with self._store.transaction() as session:
                while self._queue and taken < self._max_batch:
                    lease = self._queue.pop(0)
                    taken += 1
                    if lease.handoff.done():
                        continue  # its caller was cancelled while waiting for its turn
                    try:
                        async with session.begin_nested():
                            lease.handoff.set_result(session)
                            await lease.finished
                    except _BodyFailed as failed:
                        if failed.reusable:
                            continue
                        # Discarded where it failed: the units still queued get a new transaction.
                        suspect = True
                        break
                    done.append(lease)
                if suspect:
                    raise _SessionDiscarded()
                bulk, self._bulk = self._bulk, {}
                for handler, entries in bulk.items():
                    try:
                        async with session.begin_nested():
                            await handler(session, [item for item, _ in entries])
                    except Exception as exc:
                        log.exception("edge bulk write failed")
                        _settle([f for _, f in entries], exc)
                    else:
                        written.extend(f for _, f in entries)
        except _SessionDiscarded as exc:
            if done:
                # Their bodies ran in the discarded transaction: they fail, and their callers answer for it.
                log.error(
                    "edge batch discarded after a unit stopped mid-statement", extra={"fields": {"units": len(done)}}
                )
            for lease in done:
                if not lease.committed.done():
                    lease.committed.set_exception(exc)
            return
        except Exception as exc:
            log.exception("edge batch failed to commit")
            for lease in done:
                if not lease.committed.done():
                    lease.committed.set_exception(exc)
            _settle(written, exc)
            return
        _settle(written, None)
        self.batches += 1
        self.units += len(done)
        for lease in done:
            if not lease.committed.done():
                lease.committed.set_result(None)
