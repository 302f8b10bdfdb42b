"""Meters, the sessions detected from them, what the detector needs to survive a restart, and bus health."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, Float, ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime


class Meter(Base):
    """A Modbus meter in front of a charge point's connector, and how to reach and judge it."""

    __tablename__ = "meters"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    site_id: Mapped[str] = mapped_column(ForeignKey("sites.id", ondelete="RESTRICT"), index=True)
    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"), index=True)
    charge_point_id: Mapped[str] = mapped_column(ForeignKey("charge_points.id", ondelete="CASCADE"))
    connector_id: Mapped[int] = mapped_column(Integer)
    profile: Mapped[str] = mapped_column(String(32))
    unit_id: Mapped[int] = mapped_column(Integer)
    # "tcp": host and port; "rtu": serial device and line settings.
    transport: Mapped[str] = mapped_column(String(8))
    tcp_host: Mapped[str | None] = mapped_column(String(255), default=None)
    tcp_port: Mapped[int | None] = mapped_column(Integer, default=None)
    rtu_device: Mapped[str | None] = mapped_column(String(255), default=None)
    baudrate: Mapped[int | None] = mapped_column(Integer, default=None)
    parity: Mapped[str | None] = mapped_column(String(1), default=None)
    stopbits: Mapped[int | None] = mapped_column(Integer, default=None)
    id_tag: Mapped[str] = mapped_column(String(255))
    poll_interval_s: Mapped[float] = mapped_column(Float)
    start_current_a: Mapped[float] = mapped_column(Float)
    stop_current_a: Mapped[float] = mapped_column(Float)
    start_power_w: Mapped[float] = mapped_column(Float)
    stop_power_w: Mapped[float] = mapped_column(Float)
    stop_grace_s: Mapped[float] = mapped_column(Float)
    outage_close_s: Mapped[float] = mapped_column(Float)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    # Bumped by every change; an edit made from an older version is refused (a stale form, another operator).
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class MeterSession(Base):
    """A charging session detected from a meter; open while `stopped_at` is NULL (at most one per meter)."""

    __tablename__ = "meter_sessions"
    __table_args__ = (
        Index(
            "uq_meter_sessions_open",
            "meter_id",
            unique=True,
            sqlite_where=text("stopped_at IS NULL"),
            postgresql_where=text("stopped_at IS NULL"),
        ),
    )

    transaction_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    # Sessions outlive a deleted meter: they are transactions, listed with the OCPP ones.
    meter_id: Mapped[str | None] = mapped_column(ForeignKey("meters.id", ondelete="SET NULL"), index=True)
    site_id: Mapped[str] = mapped_column(String(64), index=True)
    station_id: Mapped[str] = mapped_column(String(48))
    charge_point_id: Mapped[str] = mapped_column(String(64))
    connector_id: Mapped[int] = mapped_column(Integer)
    id_tag: Mapped[str] = mapped_column(String(255))
    meter_start_wh: Mapped[int] = mapped_column(BigInteger)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # The last reading that was not low: where the session closes after a reset or an outage.
    last_charging_wh: Mapped[int] = mapped_column(BigInteger)
    last_charging_at: Mapped[datetime] = mapped_column(UtcDateTime())
    meter_stop_wh: Mapped[int | None] = mapped_column(BigInteger, default=None)
    stopped_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    reason: Mapped[str | None] = mapped_column(String(32), default=None)


class MeterState(Base):
    """A meter's last good reading: the baseline the next one is checked against, also after a restart."""

    __tablename__ = "meter_states"

    meter_id: Mapped[str] = mapped_column(ForeignKey("meters.id", ondelete="CASCADE"), primary_key=True)
    energy_wh: Mapped[int] = mapped_column(BigInteger)
    read_at: Mapped[datetime] = mapped_column(UtcDateTime())
    max_current_a: Mapped[float | None] = mapped_column(Float, default=None)
    power_w: Mapped[float | None] = mapped_column(Float, default=None)
    phase: Mapped[str] = mapped_column(String(16))


class MeterBusLease(Base):
    """Which process polls a TCP endpoint or RTU bus (`chargenet.meters.lease`): `owner` until `expires_at`."""

    __tablename__ = "meter_bus_leases"

    bus_key: Mapped[str] = mapped_column(String(300), primary_key=True)
    owner: Mapped[str | None] = mapped_column(String(64), default=None)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


class MeterPollHealth(Base):
    """A meter's poll counters as the process polling its bus last wrote them (`owner`, every few seconds).

    The counters live in that process's memory and count since it took the bus's lease; this copy is how the
    console of any process sharing the store shows them."""

    __tablename__ = "meter_health"

    meter_id: Mapped[str] = mapped_column(ForeignKey("meters.id", ondelete="CASCADE"), primary_key=True)
    bus_key: Mapped[str] = mapped_column(String(300), index=True)
    owner: Mapped[str] = mapped_column(String(64))
    reads: Mapped[int] = mapped_column(BigInteger)
    errors: Mapped[int] = mapped_column(BigInteger)
    timeouts: Mapped[int] = mapped_column(BigInteger)
    crc_errors: Mapped[int] = mapped_column(BigInteger)
    last_answer_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    last_error: Mapped[str | None] = mapped_column(String(32), default=None)
    dead: Mapped[bool] = mapped_column(Boolean)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
