"""Webhooks, their lanes (one per webhook and event type), lane entries, dead letters and the delivery log.

A lane entry carries its own copy of the event body: outbox retention may purge the event while the lane
of a disabled webhook still holds it, and the signed body must never change between attempts.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime

_BIGINT_ID = BigInteger().with_variant(Integer, "sqlite")


class Webhook(Base):
    __tablename__ = "webhooks"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    site_id: Mapped[str] = mapped_column(ForeignKey("sites.id", ondelete="RESTRICT"), index=True)
    url: Mapped[str] = mapped_column(Text)
    # Comma-separated event types, in the order the operator gave them.
    event_types: Mapped[str] = mapped_column(String(200))
    auth_type: Mapped[str] = mapped_column(String(16))
    # The auth settings as JSON, encrypted with the credential key (never returned by the API).
    credentials: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    signature_algorithm: Mapped[str] = mapped_column(String(32))
    signature_format: Mapped[str] = mapped_column(String(16))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # Custom request headers as a JSON list of [name, value] pairs (`domain.webhook_headers`); None for none.
    custom_headers: Mapped[str | None] = mapped_column(Text, default=None)
    # The stations and charge points whose events the webhook takes, comma-separated (`domain.webhook_filters`);
    # both None: every event of its site and types.
    station_filter: Mapped[str | None] = mapped_column(Text, default=None)
    charge_point_filter: Mapped[str | None] = mapped_column(Text, default=None)
    # The credentials a rotation replaced, encrypted as `credentials` are, kept until the overlap ends
    # (`domain.credential_rotation`), then deleted.
    previous_credentials: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    previous_credentials_until: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    # Bumped by every change; an edit made from an older version is refused (a stale form, another operator).
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class WebhookLane(Base):
    """One lane. The head's retry state lives here (only the head is ever retried), and so does the lease:
    the process named in `lease_owner` drains the lane until `lease_expires_at`."""

    __tablename__ = "webhook_lanes"
    __table_args__ = (UniqueConstraint("webhook_id", "event_type", name="uq_webhook_lanes_webhook_type"),)

    id: Mapped[int] = mapped_column(_BIGINT_ID, primary_key=True, autoincrement=True)
    webhook_id: Mapped[str] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    event_type: Mapped[str] = mapped_column(String(32))
    size: Mapped[int] = mapped_column(Integer, default=0)
    head_attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    lease_owner: Mapped[str | None] = mapped_column(String(64), default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    last_consumed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    last_request_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    last_request_ms: Mapped[float | None] = mapped_column(Float, default=None)
    # Failed attempts since the lane last delivered, whichever heads they were at (a dead letter does not reset it).
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class WebhookLaneEntry(Base):
    __tablename__ = "webhook_lane_entries"
    __table_args__ = (Index("ix_webhook_lane_entries_lane_order", "lane_id", "id"),)

    # Lane order is this id's order: entries are inserted in outbox commit order by the filler.
    id: Mapped[int] = mapped_column(_BIGINT_ID, primary_key=True, autoincrement=True)
    lane_id: Mapped[int] = mapped_column(ForeignKey("webhook_lanes.id", ondelete="CASCADE"))
    event_id: Mapped[str] = mapped_column(String(36))
    body: Mapped[str] = mapped_column(Text)
    enqueued_at: Mapped[datetime] = mapped_column(UtcDateTime())


class WebhookDeadLetter(Base):
    __tablename__ = "webhook_dead_letters"
    __table_args__ = (
        Index("ix_webhook_dead_letters_webhook", "webhook_id", "id"),
        Index("ix_webhook_dead_letters_dead_at", "dead_at"),
    )

    id: Mapped[int] = mapped_column(_BIGINT_ID, primary_key=True, autoincrement=True)
    webhook_id: Mapped[str] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    event_type: Mapped[str] = mapped_column(String(32))
    event_id: Mapped[str] = mapped_column(String(36))
    body: Mapped[str] = mapped_column(Text)
    reason: Mapped[str] = mapped_column(String(32))
    error: Mapped[str] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer)
    dead_at: Mapped[datetime] = mapped_column(UtcDateTime())
    replayed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


class WebhookDelivery(Base):
    """One attempt to deliver an event (or a test event) to a webhook: the delivery log (decisions.md "Delivery
    log"). A lane writes its attempts in the transaction that records their outcome (an acknowledgement's group
    commit, a retry, a dead letter), so the log never shows an attempt the lane's state does not; kept as long as
    delivered events are (`CHARGENET_EVENT_RETENTION_DAYS`, 7 by default)."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_webhook", "webhook_id", "id"),
        Index("ix_webhook_deliveries_at", "at"),
    )

    id: Mapped[int] = mapped_column(_BIGINT_ID, primary_key=True, autoincrement=True)
    webhook_id: Mapped[str] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    event_type: Mapped[str] = mapped_column(String(32))
    event_id: Mapped[str] = mapped_column(String(36))
    attempt: Mapped[int] = mapped_column(Integer)
    request_id: Mapped[str] = mapped_column(String(36))
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    """When the attempt started."""
    duration_ms: Mapped[float] = mapped_column(Float)
    delivered: Mapped[bool] = mapped_column(Boolean)
    status: Mapped[int | None] = mapped_column(Integer, default=None)
    """The HTTP status the receiver answered, when it answered."""
    error: Mapped[str | None] = mapped_column(Text, default=None)
    """Why the attempt failed (`HTTP 503`, `timeout after 10 s`, `connection failed: ...`); None when delivered."""
    response: Mapped[str | None] = mapped_column(Text, default=None)
    """The first 1 KiB of the response body as text (invalid UTF-8 replaced), exactly as the receiver sent it:
    partner-supplied, so it is escaped wherever it is shown."""
