"""The event outbox: envelopes stored in the transaction of the state change that raised them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime


class EventStream(Base):
    """One row per (site, event type). Incrementing `last_seq` locks the row until commit, so sequence
    numbers within a stream are handed out in commit order and visible sequences have no gaps."""

    __tablename__ = "event_streams"

    site_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    event_type: Mapped[str] = mapped_column(String(32), primary_key=True)
    last_seq: Mapped[int] = mapped_column(BigInteger, default=0)


class OutboxEvent(Base):
    __tablename__ = "events"
    __table_args__ = (
        UniqueConstraint("site_id", "event_type", "seq", name="uq_events_stream_seq"),
        Index("ix_events_raised_at", "raised_at"),
    )

    position: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    event_id: Mapped[str] = mapped_column(String(36), unique=True)
    site_id: Mapped[str] = mapped_column(String(64))
    event_type: Mapped[str] = mapped_column(String(32))
    seq: Mapped[int] = mapped_column(BigInteger)
    # The exact JSON body partners receive; it never changes after commit, so signatures are stable.
    body: Mapped[str] = mapped_column(Text)
    raised_at: Mapped[datetime] = mapped_column(UtcDateTime())


class OutboxCursor(Base):
    """How far a consumer (such as the webhook lane filler) has taken each stream."""

    __tablename__ = "outbox_cursors"

    consumer: Mapped[str] = mapped_column(String(64), primary_key=True)
    site_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    event_type: Mapped[str] = mapped_column(String(32), primary_key=True)
    last_seq: Mapped[int] = mapped_column(BigInteger, default=0)
