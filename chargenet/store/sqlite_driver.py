"""The SQLite writer's driver connection: aiosqlite's, with the statements that cannot wait run on the event loop.

aiosqlite hands every call (each statement, each fetch, each cursor) to a thread of its own and back: a queue put, a
thread wake-up, a loop wake-up through its self-pipe and a greenlet switch, about 200 us of CPU a statement here,
where pysqlite itself takes 10 to 50 us for the short indexed statements of a unit of work. A unit of three
statements cost 1.1 ms of CPU, four fifths of it in the hops (bench figures in docs/performance.md).

A statement of the writer cannot wait for anything once its transaction holds SQLite's write lock: the lock is taken
by `BEGIN IMMEDIATE`, and in WAL mode nothing else blocks a writer. So only these calls can wait:
- `BEGIN`, while another process (a CLI command, a second `chargenet serve`) holds the write lock. It is tried on the
  loop with a busy timeout of 0 (the free lock is taken at once); only when the lock is held does it go to the
  thread, to wait out the busy timeout there;
- `COMMIT`, which syncs the log to disk (`synchronous=FULL`) and may checkpoint it: always in the thread;
- `close`, after them, in the thread.
Every other call runs on the loop's thread, at once, except what may run long, which runs in the thread so that the
event loop goes on meanwhile (and the work runs on the machine's other core): an executemany of MANY_ROWS rows or
more, and a statement run with the execution option `may_run_long` (purges of old rows; the store tells the
connection through `run_next_statement_in_thread`).

A call made while one is still in the thread (a `COMMIT` whose caller was cancelled, and the rollback that follows)
goes to the thread behind it, so the connection is never used by two threads at once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import aiosqlite

MANY_ROWS = 64  # an executemany of this many rows or more runs in the thread
# The connection's calls that can wait on the disk (a cursor's `close` cannot).
_DISK_CALLS = frozenset({"commit", "close"})


class LoopConnection(aiosqlite.Connection):
    """An aiosqlite connection whose calls that cannot wait run on the event loop's thread."""

    def __init__(self, connector: Callable[[], sqlite3.Connection], busy_timeout_ms: int) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._busy_timeout_ms = busy_timeout_ms
        # Calls handed to the thread, and calls it has finished: each counter is written by one thread only. A call
        # whose caller was cancelled still runs there, so "in the thread" is told by these, not by the caller.
        self._handed = 0
        self._finished = 0
        self._next_in_thread = False

    def run_next_statement_in_thread(self) -> None:
        """The next statement may run long (a purge): it runs in the thread, and the event loop goes on meanwhile."""
        self._next_in_thread = True

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        statement = _runs_statement(fn)
        long = statement and (self._next_in_thread or _many_rows(fn, args))
        if statement:
            self._next_in_thread = False
        if long or self._handed != self._finished or self._connection is None or _on_disk(fn):
            return await self._to_thread(partial(fn, *args, **kwargs))
        if not self._running:
            raise ValueError("Connection closed")
        if _begins(fn, args):
            # Tried here without waiting; only when another process holds the write lock does it wait, there.
            try:
                return self._begin_at_once(fn, args)
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                    raise
            return await self._to_thread(partial(fn, *args, **kwargs))
        return fn(*args, **kwargs)

    def _begin_at_once(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        connection = self._conn
        connection.execute("PRAGMA busy_timeout=0")
        try:
            return fn(*args)
        finally:
            connection.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")

    async def _to_thread(self, call: Callable[[], Any]) -> Any:
        if not self._running or self._connection is None:
            raise ValueError("Connection closed")
        self._handed += 1
        return await super()._execute(self._in_thread, call)  # type: ignore[no-untyped-call]

    def interrupt_and_roll_back(self) -> None:
        """Interrupt the statement running in the thread, if any, and roll back behind it there, without waiting
        (a connection SQLAlchemy invalidates, about to be closed)."""
        connection = self._connection
        if connection is None:
            return
        connection.interrupt()
        self._handed += 1
        self._tx.put_nowait((None, partial(self._in_thread, connection.rollback)))

    def _in_thread(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        finally:
            self._finished += 1


def _runs_statement(fn: Callable[..., Any]) -> bool:
    return getattr(fn, "__name__", "") in ("execute", "executemany")


def _many_rows(fn: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    # A batch of many rows (the message log's frames, a thousand at a time) is worth the hop: it runs on the machine's
    # other core, beside the event loop, rather than in its way.
    return getattr(fn, "__name__", "") == "executemany" and len(args) > 1 and _at_least(args[1], MANY_ROWS)


def _at_least(rows: Any, n: int) -> bool:
    try:
        return len(rows) >= n
    except TypeError:  # an iterator: its length is unknown, so it may be long
        return True


def _on_disk(fn: Callable[..., Any]) -> bool:
    return getattr(fn, "__name__", "") in _DISK_CALLS and isinstance(getattr(fn, "__self__", None), sqlite3.Connection)


def _begins(fn: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    return (
        getattr(fn, "__name__", "") == "execute"
        and bool(args)
        and isinstance(args[0], str)
        and args[0].lstrip()[:5].upper() == "BEGIN"
    )


def loop_connector(
    database: str, *, busy_timeout_ms: int, **connect_arguments: Any
) -> Callable[[], Awaitable[LoopConnection]]:
    """An `async_creator` for SQLAlchemy's aiosqlite dialect: connections to `database` that run their statements
    on the event loop (the connection is opened on aiosqlite's thread, and may be used from either)."""

    async def connect() -> LoopConnection:
        connect = partial(
            sqlite3.connect, database, timeout=busy_timeout_ms / 1000, check_same_thread=False, **connect_arguments
        )
        connection = LoopConnection(connect, busy_timeout_ms)
        connection._thread.daemon = True
        await connection
        return connection

    return connect
