"""Logs stations upload (GetDiagnostics, GetLog): the one-time slots they upload to and the files received."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime


class LogUploadSlot(Base):
    """One request for a station's log: its id is the request's (2.0.1's `requestId`), and the slot takes one
    upload. Only the SHA-256 of the token in the location is kept."""

    __tablename__ = "log_upload_slots"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    requested_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    max_bytes: Mapped[int] = mapped_column(BigInteger)
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


class StationLog(Base):
    """A log file received, kept under the data folder at `path` (relative to it)."""

    __tablename__ = "station_logs"
    __table_args__ = (Index("ix_station_logs_station", "station_id", "received_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"))
    request_id: Mapped[int] = mapped_column(ForeignKey("log_upload_slots.id", ondelete="CASCADE"), unique=True)
    file_name: Mapped[str] = mapped_column(String(120))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    received_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)
    path: Mapped[str] = mapped_column(String(300))
