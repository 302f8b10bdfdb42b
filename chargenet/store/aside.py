"""PostgreSQL reads on an event loop of their own, in a thread of their own: for a reader of several statements
that must not wait a turn of a busy serving loop for each of them.

Every statement awaited on the serving loop waits, once its answer is in, for the loop to come round to it: behind
every request ready at that moment. The charge point directory's follow read is eight statements or more in one snapshot
(BEGIN, the version, the outbox's streams, the connectors and stations that changed, the sweep's part, the meters,
COMMIT); under 50 clients' pages at load 5 the loop came round every 50-200 ms, and the read took up to 1.8 s,
enough for two in a row to leave the copy past `stale_after`, every page then read from the store. Here each answer
is taken up as it comes, by a loop with nothing else to do, its thread holding the interpreter's lock only while
it works (the serving loop's thread gets it back within the switch interval, 5 ms).

One connection of its own, opened at the first read and closed with `close()`; a connection the server dropped
fails that read, and the next opens another.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

T = TypeVar("T")


class AsideReads:
    """Read-only units of one snapshot each (`read_at_once`) on a thread's own loop and connection."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._engine: AsyncEngine | None = None

    async def read_at_once(self, work: Callable[[Connection], T]) -> T:
        """Run `work`, a function of Core statements that only reads, in one read-only REPEATABLE READ transaction
        on this reader's connection. Cancelled, the read is cancelled on its loop too."""
        return await asyncio.wrap_future(self._submit(self._read(work)))

    async def close(self) -> None:
        """Close the connection and end the thread, if a read ever started them."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None
        try:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._dispose(), loop))
        finally:
            loop.call_soon_threadsafe(loop.stop)
            await asyncio.to_thread(thread.join)
            loop.close()

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="store-aside-reads", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    async def _read(self, work: Callable[[Connection], T]) -> T:
        if self._engine is None:
            self._engine = create_async_engine(self.url, pool_size=1, max_overflow=0)
        async with self._engine.connect() as pooled:
            await pooled.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
            async with pooled.begin():
                return await pooled.run_sync(work)

    async def _dispose(self) -> None:
        if self._engine is not None:
            await self._engine.dispose()
            self._engine = None
