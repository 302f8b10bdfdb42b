"""Certificates the station CA signed for stations (OCPP SignCertificate), kept for their expiry and renewal."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime


class StationCertificate(Base):
    """One signing. The certificate itself is not kept: the station holds it, and its facts are what the API, the
    renewal and the expiry alert need."""

    __tablename__ = "station_certificates"
    __table_args__ = (Index("ix_station_certificates_station", "station_id", "not_after"),)

    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"), primary_key=True)
    serial: Mapped[str] = mapped_column(String(40), primary_key=True)  # hex, at most 159 bits
    subject: Mapped[str] = mapped_column(String(300))
    fingerprint: Mapped[str] = mapped_column(String(95))  # SHA-256, hex with colons
    not_after: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)
    issued_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # When the renewal worker last asked the station for a new CSR because of this certificate's expiry.
    renewal_asked_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
