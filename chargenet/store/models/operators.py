"""Operators (people using the console) and their console sessions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime


class Operator(Base):
    __tablename__ = "operators"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    company_id: Mapped[str] = mapped_column(ForeignKey("companies.id", ondelete="RESTRICT"), index=True)
    # Stored normalized (lower case); one address signs in to one account, whatever the company.
    email: Mapped[str] = mapped_column(String(254), unique=True)
    # argon2id, with its parameters in the encoded string so they can be raised later (rehash at login).
    password_hash: Mapped[str] = mapped_column(String(256))
    role: Mapped[str] = mapped_column(String(16))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # Bumped by every change, so a form sent against an older state is refused instead of overwriting it.
    version: Mapped[int] = mapped_column(Integer, default=1)
    # The operator's own IANA zone for the console; None: their company's.
    time_zone: Mapped[str | None] = mapped_column(String(64), default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class OperatorSession(Base):
    """A signed-in browser. Only a hash of the cookie's id is kept, so a copy of the database signs nobody in."""

    __tablename__ = "operator_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id", ondelete="CASCADE"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_seen_at: Mapped[datetime] = mapped_column(UtcDateTime())
