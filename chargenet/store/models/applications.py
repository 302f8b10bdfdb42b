"""Client applications, groups and group membership (the authorization server's state)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Double, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime


class Application(Base):
    __tablename__ = "applications"

    client_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    company_id: Mapped[str] = mapped_column(ForeignKey("companies.id", ondelete="RESTRICT"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    # Keyed hash (secret-hashing key); the secret itself is shown once and never stored.
    secret_hash: Mapped[str] = mapped_column(String(128))
    # Tokens carry the generation they were issued under; rotating the secret bumps it, which revokes them.
    secret_generation: Mapped[int] = mapped_column(Integer, default=1)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # Bumped by every change; an edit made from an older version is refused (a stale form, another operator).
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    # The public keys of private_key_jwt (RFC 7523): a JWKS document, or the URL of one; at most one is set.
    jwks: Mapped[str | None] = mapped_column(Text, default=None)
    jwks_url: Mapped[str | None] = mapped_column(String(2000), default=None)
    # Requests a minute the API admits (domain/rate_limits.py); NULL: the default quota.
    rate_limit: Mapped[int | None] = mapped_column(Integer, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class Group(Base):
    __tablename__ = "groups"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    company_id: Mapped[str] = mapped_column(ForeignKey("companies.id", ondelete="RESTRICT"), index=True)
    # NULL: the group is anchored at the company and reaches every site of it.
    site_id: Mapped[str | None] = mapped_column(ForeignKey("sites.id", ondelete="RESTRICT"), index=True, default=None)
    name: Mapped[str] = mapped_column(String(200))
    scopes: Mapped[str] = mapped_column(Text)  # space-separated, sorted
    # Bumped by every change; an edit made from an older version is refused (a stale form, another operator).
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class GroupMember(Base):
    __tablename__ = "group_members"

    group_id: Mapped[str] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True)
    client_id: Mapped[str] = mapped_column(
        ForeignKey("applications.client_id", ondelete="CASCADE"), primary_key=True, index=True
    )


class RevokedToken(Base):
    """An access token revoked before its end (RFC 7009), kept until it would have expired anyway."""

    __tablename__ = "revoked_tokens"

    jti: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)


class UsedAssertion(Base):
    """A client assertion's `jti` (RFC 7523 §3), kept until the assertion expires so that it is used once."""

    __tablename__ = "used_assertions"

    client_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    jti: Mapped[str] = mapped_column(String(200), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)


class RateLimitBucket(Base):
    """An application's token bucket shared by the processes of a PostgreSQL store (domain/rate_limits.py, Rule 3):
    the tokens left as of `at` (seconds since the epoch, as the process that last claimed from it saw them)."""

    __tablename__ = "rate_limit_buckets"

    client_id: Mapped[str] = mapped_column(ForeignKey("applications.client_id", ondelete="CASCADE"), primary_key=True)
    tokens: Mapped[float] = mapped_column(Double)
    at: Mapped[float] = mapped_column(Double)
