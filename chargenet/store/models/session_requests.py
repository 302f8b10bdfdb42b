"""Sessions asked for over the API (`POST /sessions`): each request, the station's answer to it and the
transaction that followed, kept 7 days (`domain.session_requests`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime


class SessionRequest(Base):
    """One remote start as a partner asked for it. `status` is a `RequestStatus`; `transaction_id` is set once
    the start that followed it was stored. `remote_start_id` is the id an OCPP 2.0.1 RequestStartTransaction
    carries, which its TransactionEvent names back; None for a 1.6 station, whose start is matched by station,
    connector, idTag and time."""

    __tablename__ = "session_requests"
    # The edge's look-up at each start: the unlinked requests of one station's connector, newest first.
    __table_args__ = (
        Index("ix_session_requests_match", "station_id", "ocpp_connector_id", "requested_at"),
        Index("ix_session_requests_requested_at", "requested_at"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    site_id: Mapped[str] = mapped_column(String(64))
    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"))
    charge_point_id: Mapped[str] = mapped_column(String(64))
    connector_id: Mapped[int] = mapped_column(Integer)
    ocpp_connector_id: Mapped[int] = mapped_column(Integer)
    id_tag: Mapped[str] = mapped_column(String(36))
    requested_by: Mapped[str] = mapped_column(String(300))
    requested_at: Mapped[datetime] = mapped_column(UtcDateTime())
    status: Mapped[str] = mapped_column(String(16))
    answered_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    transaction_id: Mapped[int | None] = mapped_column(Integer, default=None)
    remote_start_id: Mapped[int | None] = mapped_column(Integer, default=None)
