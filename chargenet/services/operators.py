"""Operators: create, sign in, change a password, change a role, disable and enable, list (decisions.md, "Console").

Passwords are argon2id (argon2-cffi), hashed and verified in a worker thread and outside any database
transaction: a verification takes tens of milliseconds on purpose, and on SQLite a transaction holds the one
writer lock that the edge and the webhook lanes also need. Functions that hash therefore take the store's
`transaction` factory and open their own short transactions around the hashing.

Who may act (`services.callers`): a signed-in operator (`OperatorCaller`) acts within its own company, and only an
owner manages operators; the command line (`OPERATOR`) reaches every company; no scope lets an application manage
them. Another company's operator is `NotFound`, exactly like one that does not exist. Each change is audited in
its own transaction.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.local_time import reader_zone, zone_named
from chargenet.domain.operators import Role, normalize_email, parse_role, validate_password
from chargenet.errors import (
    Conflict,
    EmailTaken,
    Forbidden,
    InvalidCredentials,
    InvalidInput,
    NotFound,
    StaleChange,
)
from chargenet.ids import new_id
from chargenet.services import audit
from chargenet.services.callers import Caller, LocalOperator, OperatorCaller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.versions import check_version
from chargenet.services.views import Instant, View, optional
from chargenet.store.db import Transactions
from chargenet.store.models import Company, Operator, OperatorSession


class Passwords:
    """argon2id hashing, plus a dummy hash of the same cost, so that signing in with an unknown e-mail takes as
    long as with a wrong password and the timing does not tell which addresses have accounts."""

    def __init__(self, hasher: PasswordHasher | None = None) -> None:
        self.hasher = hasher or PasswordHasher()
        self._dummy: str | None = None  # made on first use: every process builds one, few sign anyone in

    async def hash(self, password: str) -> str:
        return await asyncio.to_thread(self.hasher.hash, password)

    async def verify(self, encoded: str | None, password: str) -> bool:
        """Whether `password` matches `encoded`; with `encoded` None, the same work against the dummy hash."""
        return await asyncio.to_thread(self._verify, encoded, password)

    def _verify(self, encoded: str | None, password: str) -> bool:
        if encoded is None and self._dummy is None:
            self._dummy = self.hasher.hash(secrets.token_urlsafe(24))
        try:
            return self.hasher.verify(encoded or self._dummy or "", password) and encoded is not None
        except (VerificationError, InvalidHashError):
            return False

    def needs_rehash(self, encoded: str) -> bool:
        return self.hasher.check_needs_rehash(encoded)


class OperatorView(View):
    id: str
    company_id: str
    email: str
    role: Role
    enabled: bool
    version: int
    created_at: Instant
    updated_at: Instant
    time_zone: str | None = optional()  # their own zone for the console; absent: their company's


def _view(row: Operator) -> OperatorView:
    return OperatorView(
        id=row.id,
        company_id=row.company_id,
        email=row.email,
        role=Role(row.role),
        enabled=row.enabled,
        version=row.version,
        created_at=row.created_at,
        updated_at=row.updated_at,
        time_zone=row.time_zone,
    )


def _require_manager(caller: Caller, company_id: str) -> None:
    """Operators are managed by their company's owners and by the local operator: another company is `NotFound`,
    anyone else `Forbidden`."""
    if caller.company_id not in (None, company_id):
        raise NotFound("company", company_id)
    manages = isinstance(caller, LocalOperator) or (isinstance(caller, OperatorCaller) and caller.may_manage_operators)
    if not manages:
        raise Forbidden("only an owner manages operators")


def _is_self(caller: Caller, row: Operator) -> bool:
    return isinstance(caller, OperatorCaller) and caller.operator_id == row.id


async def _get(session: AsyncSession, caller: Caller, operator_id: str) -> Operator:
    row = await session.get(Operator, operator_id)
    if row is None or caller.company_id not in (None, row.company_id):
        raise NotFound("operator", operator_id)
    return row


async def create_operator(
    transaction: Transactions,
    passwords: Passwords,
    caller: Caller,
    *,
    company_id: str,
    email: str,
    role: str,
    password: str,
    now: datetime,
) -> OperatorView:
    _require_manager(caller, company_id)
    email = normalize_email(email)
    parsed = parse_role(role)
    validate_password(password)
    encoded = await passwords.hash(password)
    async with transaction() as session:
        if await session.get(Company, company_id) is None:
            raise NotFound("company", company_id)
        if await session.scalar(select(Operator.id).where(Operator.email == email)) is not None:
            raise EmailTaken(email)
        row = Operator(
            id=new_id("op"),
            company_id=company_id,
            email=email,
            password_hash=encoded,
            role=parsed.value,
            created_at=now,
            updated_at=now,
        )
        session.add(row)
        await session.flush()
        detail = {"email": email, "role": parsed.value}
        await audit.record_change(session, caller, "operator.create", row, now=now, detail=detail)
        return _view(row)


async def sign_in(transaction: Transactions, passwords: Passwords, *, email: str, password: str) -> OperatorView:
    """The operator these credentials belong to; `InvalidCredentials` for anything else, after the same work."""
    try:
        email = normalize_email(email)
    except InvalidInput:
        email = ""
    async with transaction() as session:
        row = await session.scalar(select(Operator).where(Operator.email == email)) if email else None
        encoded = row.password_hash if row is not None else None
    if not await passwords.verify(encoded, password) or row is None or not row.enabled:
        raise InvalidCredentials()
    if passwords.needs_rehash(row.password_hash):
        # The parameters were raised since this password was set: store it at today's cost while we have it.
        upgraded = await passwords.hash(password)
        async with transaction() as session:
            current = await session.get(Operator, row.id)
            if current is not None and current.password_hash == row.password_hash:
                current.password_hash = upgraded
    return _view(row)


async def change_own_password(
    transaction: Transactions,
    passwords: Passwords,
    caller: OperatorCaller,
    *,
    current: str,
    new: str,
    now: datetime,
    keep_session: str | None = None,
) -> None:
    """Set a new password after checking the current one. Every other session of the operator ends, so a
    password changed because it leaked also signs out whoever used it; `keep_session` (an id hash) stays."""
    validate_password(new, field="new_password")
    async with transaction() as session:
        row = await _get(session, caller, caller.operator_id)
        encoded = row.password_hash
    if not await passwords.verify(encoded, current):
        raise InvalidInput("is not your current password", field="current_password")
    new_hash = await passwords.hash(new)
    async with transaction() as session:
        row = await _get(session, caller, caller.operator_id)
        if row.password_hash != encoded:
            raise StaleChange("the password was changed meanwhile; sign in again")
        row.password_hash = new_hash
        row.version += 1
        row.updated_at = now
        ending = delete(OperatorSession).where(OperatorSession.operator_id == row.id)
        if keep_session is not None:
            ending = ending.where(OperatorSession.id_hash != keep_session)
        await session.execute(ending)
        await audit.record_change(session, caller, "operator.change-password", row, now=now)


class TimeZones(View):
    """The zones an operator's console may read in: their own choice (None: none), their company's, and the one
    in force."""

    own: str | None
    company: str
    shown: str


async def own_time_zones(session: AsyncSession, caller: OperatorCaller) -> TimeZones:
    row = await _get(session, caller, caller.operator_id)
    company = await session.get(Company, row.company_id)
    company_zone = company.time_zone if company is not None else reader_zone(None, None).name
    return TimeZones(own=row.time_zone, company=company_zone, shown=reader_zone(row.time_zone, company_zone).name)


async def set_own_time_zone(
    session: AsyncSession, caller: OperatorCaller, *, time_zone: str | None, now: datetime
) -> TimeZones:
    """Choose the zone one's own console reads in; None or blank: the company's again. Any role may."""
    row = await _get(session, caller, caller.operator_id)
    zone = zone_named(time_zone).key if time_zone and time_zone.strip() else None
    if zone != row.time_zone:
        before = row.time_zone
        row.time_zone = zone  # not a new version: an owner's role or enable form stays current
        row.updated_at = now
        await session.flush()
        detail = {"from": before or "company's", "to": zone or "company's"}
        await audit.record_change(session, caller, "operator.set-time-zone", row, now=now, detail=detail)
    return await own_time_zones(session, caller)


async def set_password(
    transaction: Transactions,
    passwords: Passwords,
    caller: Caller,
    operator_id: str,
    *,
    password: str,
    now: datetime,
) -> None:
    """An owner (or the command line) sets another operator's password; that operator's sessions end."""
    validate_password(password)
    encoded = await passwords.hash(password)
    async with transaction() as session:
        row = await _get(session, caller, operator_id)
        _require_manager(caller, row.company_id)
        row.password_hash = encoded
        row.version += 1
        row.updated_at = now
        await session.execute(delete(OperatorSession).where(OperatorSession.operator_id == row.id))
        await audit.record_change(session, caller, "operator.set-password", row, now=now)


async def _owners_left(session: AsyncSession, company_id: str, without: str) -> int:
    count = await session.scalar(
        select(func.count())
        .select_from(Operator)
        .where(
            Operator.company_id == company_id,
            Operator.role == Role.OWNER.value,
            Operator.enabled.is_(True),
            Operator.id != without,
        )
    )
    return int(count or 0)


async def set_role(
    session: AsyncSession,
    caller: Caller,
    operator_id: str,
    *,
    role: str,
    now: datetime,
    expected_version: int | None = None,
) -> OperatorView:
    parsed = parse_role(role)
    row = await _get(session, caller, operator_id)
    _require_manager(caller, row.company_id)
    check_version("operator", row.email, row.version, expected_version)
    if _is_self(caller, row):
        raise Conflict("an owner cannot change their own role; another owner can")
    if row.role == parsed.value:
        return _view(row)
    if row.role == Role.OWNER.value and row.enabled and not await _owners_left(session, row.company_id, row.id):
        raise Conflict("the company would be left without an enabled owner")
    before = row.role
    row.role = parsed.value
    row.version += 1
    row.updated_at = now
    await session.flush()
    detail = {"email": row.email, "from": before, "to": parsed.value}
    await audit.record_change(session, caller, "operator.set-role", row, now=now, detail=detail)
    return _view(row)


async def set_enabled(
    session: AsyncSession,
    caller: Caller,
    operator_id: str,
    *,
    enabled: bool,
    now: datetime,
    expected_version: int | None = None,
) -> OperatorView:
    """Disabling ends every session of the operator in the same transaction: their next request is signed out."""
    row = await _get(session, caller, operator_id)
    _require_manager(caller, row.company_id)
    check_version("operator", row.email, row.version, expected_version)
    if row.enabled == enabled:
        return _view(row)
    if not enabled:
        if _is_self(caller, row):
            raise Conflict("an owner cannot disable their own account; another owner can")
        if row.role == Role.OWNER.value and not await _owners_left(session, row.company_id, row.id):
            raise Conflict("the company would be left without an enabled owner")
        await session.execute(delete(OperatorSession).where(OperatorSession.operator_id == row.id))
    row.enabled = enabled
    row.version += 1
    row.updated_at = now
    await session.flush()
    action = "operator.enable" if enabled else "operator.disable"
    await audit.record_change(session, caller, action, row, now=now, detail={"email": row.email})
    return _view(row)


async def get_operator(session: AsyncSession, caller: Caller, operator_id: str) -> OperatorView:
    row = await _get(session, caller, operator_id)
    _require_manager(caller, row.company_id)
    return _view(row)


async def list_operators(
    session: AsyncSession, caller: Caller, page: PageRequest, *, company_id: str
) -> Page[OperatorView]:
    """A company's operators, ordered by e-mail."""
    _require_manager(caller, company_id)
    query = select(Operator).where(Operator.company_id == company_id).order_by(Operator.email).limit(page.fetch)
    if page.after is not None:
        query = query.where(Operator.email > page.after)
    return page.page([_view(row) for row in await session.scalars(query)], lambda operator: operator.email)
