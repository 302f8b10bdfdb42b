"""Meter-value samples: the energy (and power) of a session over time, for its chart."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Float, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime


class MeterSample(Base):
    """One sample of a session, OCPP transaction or meter session alike (they share one id sequence).

    `station_id` is the station that reported it: a station may name any transaction id in its MeterValues, and
    the edge writes what it sends without a look-up, so a session reads only the samples of its own station. The
    key makes a resent MeterValues (same instant) a no-op. Kept for the message log's retention."""

    __tablename__ = "meter_samples"
    __table_args__ = (Index("ix_meter_samples_at", "at"),)

    transaction_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    station_id: Mapped[str] = mapped_column(String(48), primary_key=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime(), primary_key=True)
    energy_wh: Mapped[int] = mapped_column(BigInteger)
    power_w: Mapped[float | None] = mapped_column(Float, default=None)
