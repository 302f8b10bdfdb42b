"""What kind of error an exception is, as a word safe to show anyone.

`/health` and `/health/ready` are unauthenticated, so they name the kind of a failure (`timeout`,
`connection_refused`) and never its text: a driver's message can carry host names, user names, paths or SQL.
"""

from __future__ import annotations

import socket

# The drivers whose own errors (after unwrapping SQLAlchemy's) mean "the database said no".
_DATABASE_MODULES = ("sqlite3", "aiosqlite", "asyncpg", "sqlalchemy")


def error_kind(exc: BaseException) -> str:
    """The kind of `exc`: SQLAlchemy's wrapper is seen through to the driver's error it carries, and a
    driver's error to the OS error that caused it, so an unreachable server is `connection_refused` whichever
    layer raised."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        kind = _own_kind(current)
        if kind is not None:
            return kind
        inner = getattr(current, "orig", None)
        current = inner if isinstance(inner, BaseException) else current.__cause__ or current.__context__
    module = type(exc).__module__.split(".", 1)[0]
    return "database_error" if module in _DATABASE_MODULES else "internal_error"


def _own_kind(exc: BaseException) -> str | None:
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "connection_refused"
    if isinstance(exc, ConnectionResetError | BrokenPipeError | ConnectionAbortedError):
        return "connection_reset"
    if isinstance(exc, socket.gaierror):
        return "name_unresolved"
    if isinstance(exc, PermissionError):
        return "permission_denied"
    if isinstance(exc, FileNotFoundError):
        return "not_found"
    if isinstance(exc, OSError) and exc.errno == 111:
        return "connection_refused"  # asyncio's "Connect call failed" is a plain OSError with ECONNREFUSED
    return None
