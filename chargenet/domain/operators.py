"""Operators: the people who use the console, with a role in one company (decisions.md, "Console").

Rule 1: a `viewer` reads everything of its company; an `admin` also changes what the company configures;
        an `owner` also manages operators. Roles are ordered: each includes the one below it.
Rule 2: a password has at least MIN_PASSWORD characters (and at most MAX_PASSWORD, so that hashing a
        megabyte cannot be used to tie up the server).
Rule 3: a console session ends IDLE_TIMEOUT after its last request or ABSOLUTE_TIMEOUT after sign-in,
        whichever comes first; both are measured on the injected clock.
Rule 4: login is refused for an account after MAX_FAILURES_PER_ACCOUNT failures, or for an address after
        MAX_FAILURES_PER_ADDRESS, within FAILURE_WINDOW; the refusal reads like a wrong password.
"""

from __future__ import annotations

import enum
import re
from datetime import datetime, timedelta

from chargenet.errors import InvalidInput

MIN_PASSWORD = 12
MAX_PASSWORD = 1024
MAX_EMAIL = 254

IDLE_TIMEOUT = timedelta(minutes=30)
ABSOLUTE_TIMEOUT = timedelta(hours=12)

MAX_FAILURES_PER_ACCOUNT = 5
MAX_FAILURES_PER_ADDRESS = 20
FAILURE_WINDOW = timedelta(minutes=15)

# Deliberately loose: the one thing an operator e-mail must be is something a person can type back at login.
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class Role(enum.StrEnum):
    VIEWER = "viewer"
    ADMIN = "admin"
    OWNER = "owner"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def includes(self, other: Role) -> bool:
        return self.rank >= other.rank


_RANKS = {Role.VIEWER: 0, Role.ADMIN: 1, Role.OWNER: 2}


def parse_role(value: str) -> Role:
    try:
        return Role(value)
    except ValueError:
        raise InvalidInput(f"{value!r} is not one of {', '.join(r.value for r in Role)}", field="role") from None


def normalize_email(value: str) -> str:
    """The e-mail as it is stored and looked up: trimmed and lower case, so `A@x.org` and `a@x.org` are one."""
    email = value.strip().lower()
    if not email:
        raise InvalidInput("an e-mail address is needed", field="email")
    if len(email) > MAX_EMAIL or not _EMAIL.match(email):
        raise InvalidInput("is not an e-mail address", field="email")
    return email


def validate_password(value: str, *, field: str = "password") -> str:
    if len(value) < MIN_PASSWORD:
        raise InvalidInput(f"must have at least {MIN_PASSWORD} characters", field=field)
    if len(value) > MAX_PASSWORD:
        raise InvalidInput(f"must have at most {MAX_PASSWORD} characters", field=field)
    return value


class SessionState(enum.Enum):
    ALIVE = "alive"
    IDLE = "idle"
    EXPIRED = "expired"


def session_state(
    *,
    created_at: datetime,
    last_seen_at: datetime,
    now: datetime,
    idle: timedelta = IDLE_TIMEOUT,
    absolute: timedelta = ABSOLUTE_TIMEOUT,
) -> SessionState:
    """Rule 3. A session exactly at either limit has ended: the limits are lifetimes, not grace periods."""
    if now - created_at >= absolute:
        return SessionState.EXPIRED
    if now - last_seen_at >= idle:
        return SessionState.IDLE
    return SessionState.ALIVE
