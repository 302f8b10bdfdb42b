"""Company > site > station > charge point > connector."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.domain.local_time import DEFAULT_ZONE
from chargenet.domain.tenants import StationLayout
from chargenet.store.models.base import Base, UtcDateTime


class Company(Base):
    __tablename__ = "companies"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    # An IANA zone name: the console shows times, filters and days in it (unless an operator chose their own).
    time_zone: Mapped[str] = mapped_column(String(64), default=DEFAULT_ZONE, server_default=DEFAULT_ZONE)
    # The O a profile 3 station's certificate must name, when set (decisions.md "Security profiles").
    organisation_name: Mapped[str | None] = mapped_column(String(64), default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class Site(Base):
    __tablename__ = "sites"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    company_id: Mapped[str] = mapped_column(ForeignKey("companies.id", ondelete="RESTRICT"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    upstream_url: Mapped[str | None] = mapped_column(Text, default=None)
    # Sent to the upstream CPO, so it is encrypted (credential key), not hashed.
    upstream_password: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    # The OCPP generations the upstream takes, comma-separated ("ocpp1.6,ocpp2.0.1"); NULL: 1.6 only.
    upstream_ocpp_versions: Mapped[str | None] = mapped_column(String(40), default=None)
    # `sign` (the company's station CA signs its stations' CSRs) or `relay` (to the upstream, whose CA then signs).
    station_csrs: Mapped[str] = mapped_column(String(8), default="sign", server_default="sign")
    # The security profile of the link to the upstream (domain.upstream_profiles); NULL: 1. Its client certificate,
    # key and CA bundle are files in the keys folder (keys.upstream_tls); the client certificate's summary is
    # kept here for the pages that show it.
    upstream_security_profile: Mapped[int | None] = mapped_column(Integer, default=None)
    upstream_client_subject: Mapped[str | None] = mapped_column(String(300), default=None)
    upstream_client_not_after: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    upstream_client_fingerprint: Mapped[str | None] = mapped_column(String(100), default=None)
    upstream_ca_certificates: Mapped[int | None] = mapped_column(Integer, default=None)  # in its own CA bundle
    # Bumped by every change; an edit made from an older version is refused (a stale form, another operator).
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class Station(Base):
    __tablename__ = "stations"

    id: Mapped[str] = mapped_column(String(48), primary_key=True)
    site_id: Mapped[str] = mapped_column(ForeignKey("sites.id", ondelete="RESTRICT"), index=True)
    # Keyed hash of the AuthorizationKey; NULL means security profile 0 (no Basic auth).
    password_hash: Mapped[str | None] = mapped_column(String(128), default=None)
    upstream_password: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    charge_points: Mapped[int] = mapped_column(Integer, default=1)
    connectors_per_charge_point: Mapped[int | None] = mapped_column(Integer, default=None)
    # The OCPP generations the station may connect with, comma-separated in the order written ("ocpp1.6,ocpp2.0.1");
    # NULL: both (decisions.md §5).
    ocpp_versions: Mapped[str | None] = mapped_column(String(40), default=None)
    # 0-3 (decisions.md "Security profiles"); what the handshake asks of the station.
    security_profile: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    # The latest handshake refused (`domain.security_profiles.Refusal`'s value) and when, for the station page.
    last_refusal: Mapped[str | None] = mapped_column(String(64), default=None)
    last_refusal_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    # The CN a profile 3 station's certificate must name in place of its id, when set (as the whitepaper suggests).
    serial_number: Mapped[str | None] = mapped_column(String(64), default=None)
    # Bumped by every change; an edit made from an older version is refused (a stale form, another operator).
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())

    def layout(self) -> StationLayout:
        return StationLayout(self.id, self.charge_points, self.connectors_per_charge_point)


class ChargePoint(Base):
    __tablename__ = "charge_points"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"), index=True)
    site_id: Mapped[str] = mapped_column(ForeignKey("sites.id", ondelete="RESTRICT"), index=True)
    ordinal: Mapped[int] = mapped_column(Integer)


class Connector(Base):
    """The last known status of a connector; it survives restarts so that unchanged statuses stay silent."""

    __tablename__ = "connectors"
    # The live status feed reads what changed since its last look, twice a second, in a table of 20,000 rows.
    __table_args__ = (Index("ix_connectors_updated_at", "updated_at"),)

    charge_point_id: Mapped[str] = mapped_column(ForeignKey("charge_points.id", ondelete="CASCADE"), primary_key=True)
    connector_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    status: Mapped[str | None] = mapped_column(String(32), default=None)
    error_code: Mapped[str | None] = mapped_column(String(32), default=None)
    info: Mapped[str | None] = mapped_column(String(255), default=None)
    status_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    updated_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


# A connector and the last status its station reported, as every reader of statuses selects them (the services'
# pages and feeds, the edge's first reads).
CONNECTOR_STATUS_COLUMNS: tuple[Any, ...] = (
    Connector.charge_point_id,
    Connector.connector_id,
    Connector.status,
    Connector.error_code,
    Connector.info,
    Connector.status_at,
)
