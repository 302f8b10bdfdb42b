"""Site power: a site's circuits, the grid meters on them, and where each station hangs in the tree."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime


class GridMeter(Base):
    """A Modbus meter with role `grid`: it measures a circuit, so it has no station and detects no sessions.

    Kept apart from `meters`, whose every row is in front of a connector (the session detector, the charge point
    list and the alerts rely on that)."""

    __tablename__ = "grid_meters"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    site_id: Mapped[str] = mapped_column(ForeignKey("sites.id", ondelete="RESTRICT"), index=True)
    profile: Mapped[str] = mapped_column(String(32))
    unit_id: Mapped[int] = mapped_column(Integer)
    transport: Mapped[str] = mapped_column(String(8))  # "tcp" or "rtu", as for a connector's meter
    tcp_host: Mapped[str | None] = mapped_column(String(255), default=None)
    tcp_port: Mapped[int | None] = mapped_column(Integer, default=None)
    rtu_device: Mapped[str | None] = mapped_column(String(255), default=None)
    baudrate: Mapped[int | None] = mapped_column(Integer, default=None)
    parity: Mapped[str | None] = mapped_column(String(1), default=None)
    stopbits: Mapped[int | None] = mapped_column(Integer, default=None)
    poll_interval_s: Mapped[float] = mapped_column(Float)
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class Circuit(Base):
    """A circuit of a site's tree: the grid connection (no parent) or a feeder below another circuit."""

    __tablename__ = "circuits"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    site_id: Mapped[str] = mapped_column(ForeignKey("sites.id", ondelete="RESTRICT"), index=True)
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("circuits.id", ondelete="RESTRICT"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    limit_a: Mapped[float] = mapped_column(Float)  # per phase
    margin_a: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    phases: Mapped[str] = mapped_column(String(8), default="L1L2L3", server_default="L1L2L3")
    meter_id: Mapped[str | None] = mapped_column(
        ForeignKey("grid_meters.id", ondelete="RESTRICT"), unique=True, default=None
    )
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class StationCircuit(Base):
    """The circuit a station hangs on, the phases its connectors use and its priority (higher is served first)."""

    __tablename__ = "station_circuits"

    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"), primary_key=True)
    circuit_id: Mapped[str] = mapped_column(ForeignKey("circuits.id", ondelete="RESTRICT"), index=True)
    phases: Mapped[str] = mapped_column(String(8))
    priority: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class PowerAllowance(Base):
    """What the allocator last gave a session in progress, and the state its next round starts from: a restart
    resumes from these rows, not from zero (decisions.md "Site power")."""

    __tablename__ = "power_allowances"

    transaction_id: Mapped[int] = mapped_column(
        ForeignKey("edge_transactions.id", ondelete="CASCADE"), primary_key=True
    )
    site_id: Mapped[str] = mapped_column(String(64), index=True)
    station_id: Mapped[str] = mapped_column(String(48))
    amps: Mapped[float] = mapped_column(Float)  # per phase; 0 while paused
    sent_amps: Mapped[float | None] = mapped_column(Float, default=None)  # what the station last accepted
    sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    paused_since: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    charging_since: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class StationProfileAnswer(Base):
    """How a station last answered a charging profile: Accepted, Rejected or NotSupported (a station that cannot be
    limited is counted at its full rating), and the safe defaults it was last sent, per connector."""

    __tablename__ = "station_profile_answers"

    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"), primary_key=True)
    answer: Mapped[str] = mapped_column(String(16))
    defaults_sent: Mapped[str | None] = mapped_column(String(400), default=None)  # "1:6,2:0": connector:amps
    answered_at: Mapped[datetime] = mapped_column(UtcDateTime())


class UpstreamChargingProfile(Base):
    """An upstream's SetChargingProfile for one connector and purpose, as it sent it (with edge transaction ids),
    kept so that the station's profile stays the lower of the upstream's and the edge's as the edge's changes."""

    __tablename__ = "upstream_charging_profiles"

    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"), primary_key=True)
    connector_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    purpose: Mapped[str] = mapped_column(String(32), primary_key=True)
    request: Mapped[str] = mapped_column(Text)  # the SetChargingProfile request, JSON
    received_at: Mapped[datetime] = mapped_column(UtcDateTime())


class PowerLease(Base):
    """Which process runs a site's allocator rounds (PostgreSQL: several processes share a store)."""

    __tablename__ = "power_leases"

    site_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner: Mapped[str | None] = mapped_column(String(64), default=None)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


class GridMeterReading(Base):
    """A grid meter's last answer, written by the process polling its bus: its phase currents, or why they are
    nonsense. The allocator's rounds and `GET /power` of any process read it; a meter whose `read_at` is too old
    is silent."""

    __tablename__ = "grid_meter_readings"

    meter_id: Mapped[str] = mapped_column(ForeignKey("grid_meters.id", ondelete="CASCADE"), primary_key=True)
    l1_a: Mapped[float | None] = mapped_column(Float, default=None)
    l2_a: Mapped[float | None] = mapped_column(Float, default=None)
    l3_a: Mapped[float | None] = mapped_column(Float, default=None)
    fault: Mapped[str | None] = mapped_column(String(16), default=None)  # domain.grid_meters.MeterFault
    read_at: Mapped[datetime] = mapped_column(UtcDateTime())


class SitePowerSample(Base):
    """A circuit's figures at one moment, for the site power chart: its limit, what its meter measured and what the
    stations below it drew (the largest phase of each). Written by the allocator's rounds, one a minute."""

    __tablename__ = "site_power_samples"
    __table_args__ = (Index("ix_site_power_samples_site_at", "site_id", "at"),)

    circuit_id: Mapped[str] = mapped_column(ForeignKey("circuits.id", ondelete="CASCADE"), primary_key=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime(), primary_key=True)
    site_id: Mapped[str] = mapped_column(String(64))
    limit_a: Mapped[float] = mapped_column(Float)
    measured_a: Mapped[float | None] = mapped_column(Float, default=None)  # None while the meter told nothing
    stations_a: Mapped[float] = mapped_column(Float)
