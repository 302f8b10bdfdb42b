"""Change notifications between the processes sharing one store, so a waiting process wakes when there is news
instead of asking the store every few milliseconds.

A writer calls `notify(session, channel)` inside the transaction whose commit is the news. On PostgreSQL that is
`pg_notify`, which the server delivers to every listening connection at commit, and never for a transaction
rolled back; each process listens on one connection of its own, opened at its first `wait`. Waiters in the
writer's own process are woken after the commit on every backend. SQLite has no way to signal another process:
there `live` is False and waiters keep a short interval of their own (the news still wakes them at once within
one process).

A notification is only a wake-up: the woken reads the store for what changed, so a lost or duplicated
notification costs a read, never correctness, and every waiter also wakes on a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from sqlalchemy import event, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession

log = logging.getLogger(__name__)

_PENDING = "chargenet_notify"
RECONNECT_AFTER = 1.0  # seconds between attempts to listen again after the listening connection was lost


class _Channel:
    """How many times a channel had news in this process, and the event the next news sets."""

    def __init__(self) -> None:
        self.count = 0
        self.news = asyncio.Event()

    def wake(self) -> None:
        self.count += 1
        self.news.set()
        self.news = asyncio.Event()


class Notifications:
    def __init__(self, url: str, dialect: str) -> None:
        self._url = url
        self._dialect = dialect
        self._channels: dict[str, _Channel] = {}
        self._connection: Any = None  # asyncpg.Connection while listening
        self._connecting: asyncio.Task[None] | None = None
        self._listening: set[str] = set()
        self._closed = False

    @property
    def live(self) -> bool:
        """Whether news from other processes arrives (PostgreSQL, listening); waiters poll faster when not."""
        return self._connection is not None and not self._connection.is_closed()

    async def notify(self, session: AsyncSession, channel: str) -> None:
        """Announce `channel`'s news when `session`'s transaction commits (and never if it rolls back)."""
        if self._dialect == "postgresql":
            await session.execute(select(func.pg_notify(channel, "")))
        pending: set[str] | None = session.info.get(_PENDING)
        if pending is None:
            pending = session.info[_PENDING] = set()
            event.listen(session.sync_session, "after_commit", self._after_commit)
            event.listen(session.sync_session, "after_rollback", self._after_rollback)
        pending.add(channel)

    def _after_commit(self, sync_session: Any) -> None:
        for channel in sync_session.info.pop(_PENDING, ()):
            self._wake(channel)

    def _after_rollback(self, sync_session: Any) -> None:
        sync_session.info.pop(_PENDING, None)

    def _wake(self, channel: str) -> None:
        self._channel(channel).wake()

    def _channel(self, channel: str) -> _Channel:
        found = self._channels.get(channel)
        if found is None:
            found = self._channels[channel] = _Channel()
        return found

    def mark(self, channel: str) -> int:
        """Where `channel`'s news stands now: pass it to `wait` as `since`."""
        return self._channel(channel).count

    async def wait(self, channel: str, within: float, *, since: int) -> int:
        """Until `channel` has news newer than the mark `since`, or `within` seconds pass; returns the new mark.
        News that came after the mark was taken wakes at once, so nothing announced between two waits is missed."""
        await self._listen()
        state = self._channel(channel)
        if self._connection is not None and channel not in self._listening:
            await self._subscribe(channel)
        if state.count == since:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(state.news.wait(), within)
        return state.count

    async def _subscribe(self, channel: str) -> None:
        try:
            await self._connection.add_listener(channel, self._received)
            self._listening.add(channel)
        except Exception:
            log.warning("cannot listen for store notifications", extra={"fields": {"channel": channel}})
            await self._drop()

    def _received(self, _connection: Any, _pid: int, channel: str, _payload: str) -> None:
        self._wake(channel)

    async def _listen(self) -> None:
        if self._dialect != "postgresql" or self._closed or self.live:
            return
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.create_task(self._connect())
        # A wait never blocks on the connection: until it is up, waiters fall back to their own interval.
        await asyncio.sleep(0)

    async def _connect(self) -> None:
        import asyncpg

        await self._drop()
        dsn = make_url(self._url).set(drivername="postgresql").render_as_string(hide_password=False)
        try:
            connection = await asyncpg.connect(dsn)
        except Exception as exc:
            log.warning("cannot listen for store notifications", extra={"fields": {"error": type(exc).__name__}})
            await asyncio.sleep(RECONNECT_AFTER)
            return
        if self._closed:
            await connection.close()
            return
        self._connection, self._listening = connection, set()
        connection.add_termination_listener(lambda _: self._lost())
        for channel in list(self._channels):
            await self._subscribe(channel)
        # Whatever happened while not listening was not heard: every waiter reads the store once.
        for state in self._channels.values():
            state.wake()

    def _lost(self) -> None:
        self._connection = None
        for state in self._channels.values():
            state.wake()

    async def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.close()

    async def close(self) -> None:
        self._closed = True
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._connecting
        await self._drop()
