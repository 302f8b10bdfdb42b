"""Console sessions, kept on the server so that signing out, a password change and disabling an operator end
them at once (a signed cookie could not be taken back).

The cookie holds a random 256-bit id; the store keeps only its SHA-256, so a copy of the database signs nobody
in. Each session has its own CSRF token. Expiry follows `chargenet.domain.operators.session_state` (idle and
absolute limits on the injected clock); an ended or expired session is deleted when it is next presented.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.local_time import LocalTime, reader_zone
from chargenet.domain.operators import ABSOLUTE_TIMEOUT, Role, SessionState, session_state
from chargenet.services.callers import OperatorCaller
from chargenet.services.operators import OperatorView
from chargenet.store.models import Company, Operator, OperatorSession

# `last_seen_at` is written at most this often: a write per page view would make every read a write.
TOUCH_EVERY = timedelta(seconds=30)


def id_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class StartedSession:
    token: str  # for the cookie only; never stored
    csrf_token: str


@dataclass(frozen=True, slots=True)
class ResumedSession:
    caller: OperatorCaller
    id_hash: str
    csrf_token: str
    reads_in: LocalTime  # the operator's own zone, else their company's


async def start(session: AsyncSession, operator: OperatorView, *, now: datetime) -> StartedSession:
    """A new session with a new id (never one the browser brought: that would allow session fixation)."""
    token = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(32)
    # Housekeeping: this operator's sessions past the absolute limit can go now.
    await session.execute(
        delete(OperatorSession).where(
            OperatorSession.operator_id == operator.id, OperatorSession.created_at <= now - ABSOLUTE_TIMEOUT
        )
    )
    session.add(
        OperatorSession(
            id_hash=id_hash(token), operator_id=operator.id, csrf_token=csrf, created_at=now, last_seen_at=now
        )
    )
    await session.flush()
    return StartedSession(token, csrf)


async def look_up(session: AsyncSession, token: str, *, now: datetime) -> tuple[ResumedSession | None, bool]:
    """The live session the cookie names, read only, and whether `resume` has something to write for it (an
    expired or disabled session to delete, a `last_seen_at` to touch): most page views then write nothing."""
    hashed = id_hash(token)
    found = (
        await session.execute(
            select(OperatorSession, Operator, Company.time_zone)
            .join(Operator, Operator.id == OperatorSession.operator_id)
            .join(Company, Company.id == Operator.company_id)
            .where(OperatorSession.id_hash == hashed)
        )
    ).one_or_none()
    if found is None:
        return None, False
    row, operator, company_zone = found
    state = session_state(created_at=row.created_at, last_seen_at=row.last_seen_at, now=now)
    if state is not SessionState.ALIVE or not operator.enabled:
        return None, True
    caller = OperatorCaller(operator.id, operator.company_id, operator.email, Role(operator.role))
    zone = reader_zone(operator.time_zone, company_zone)
    return ResumedSession(caller, hashed, row.csrf_token, zone), now - row.last_seen_at >= TOUCH_EVERY


async def resume(session: AsyncSession, token: str, *, now: datetime) -> ResumedSession | None:
    """The live session the cookie names, touched; None when there is none, it expired or its operator was
    disabled (an expired one is deleted here)."""
    resumed, stale = await look_up(session, token, now=now)
    if stale:
        row = await session.get(OperatorSession, id_hash(token))
        if row is not None:
            if resumed is None:
                await session.delete(row)
            else:
                row.last_seen_at = now
    return resumed


async def end(session: AsyncSession, token: str) -> None:
    await session.execute(delete(OperatorSession).where(OperatorSession.id_hash == id_hash(token)))
