"""What the OCPP edge keeps: transactions, the local authorization list and cache, the upstream queue,
connector status history, station presence, and the OCPP message log."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Text,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from chargenet.store.models.base import Base, UtcDateTime

_AutoId = BigInteger().with_variant(Integer, "sqlite")


class EdgeTransaction(Base):
    """A charging transaction; `id` is the transactionId stations get (positive, unique service-wide)."""

    __tablename__ = "edge_transactions"
    # AUTOINCREMENT on SQLite: an id is never handed out twice, even after the newest row is deleted.
    __table_args__ = (
        # A 1.6 start is known by what it says, so a resent one is found; a 2.0.1 transaction by the name its station
        # gives it (below), and two of them may begin alike.
        Index(
            "uq_edge_tx_start",
            "station_id",
            "ocpp_connector_id",
            "id_tag",
            "started_at",
            "meter_start",
            unique=True,
            sqlite_where=text("station_transaction_id IS NULL"),
            postgresql_where=text("station_transaction_id IS NULL"),
        ),
        Index("ix_edge_tx_active", "station_id", "stopped_at"),
        # The sessions list: those in progress newest first (few among a long history), and a period by start.
        Index(
            "ix_edge_tx_in_progress",
            "id",
            sqlite_where=text("stopped_at IS NULL"),
            postgresql_where=text("stopped_at IS NULL"),
        ),
        Index("ix_edge_tx_started_at", "started_at"),
        # A 2.0.1 station names its transactions; the edge finds each by that name.
        Index("ix_edge_tx_station_transaction", "station_id", "station_transaction_id", unique=True),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"))
    site_id: Mapped[str] = mapped_column(String(64), index=True)
    charge_point_id: Mapped[str] = mapped_column(String(64), index=True)
    connector_id: Mapped[int] = mapped_column(Integer)
    ocpp_connector_id: Mapped[int] = mapped_column(Integer)
    id_tag: Mapped[str] = mapped_column(String(36), index=True)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime())
    meter_start: Mapped[int] = mapped_column(BigInteger)
    reservation_id: Mapped[int | None] = mapped_column(Integer, default=None)
    auth_status: Mapped[str | None] = mapped_column(String(16), default=None)  # what the station was told
    stopped_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    meter_stop: Mapped[int | None] = mapped_column(BigInteger, default=None)
    stop_reason: Mapped[str | None] = mapped_column(String(32), default=None)
    # The upstream's id for it; NULL while not yet answered, or when the upstream refused it with a CALLERROR.
    upstream_id: Mapped[int | None] = mapped_column(BigInteger, default=None)
    # The upstream refused the start (a CALLERROR, or an idTagInfo status other than Accepted).
    upstream_refused: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # A 2.0.1 station's own id for the transaction, the last seqNo applied, its latest energy reading (Wh), and
    # the idToken's type; NULL for a 1.6 transaction.
    station_transaction_id: Mapped[str | None] = mapped_column(String(36), default=None)
    seq_no: Mapped[int | None] = mapped_column(Integer, default=None)
    meter_last: Mapped[int | None] = mapped_column(BigInteger, default=None)
    id_token_type: Mapped[str | None] = mapped_column(String(20), default=None)


class UnstartedTransaction(Base):
    """A 2.0.1 station's transaction the edge has not started yet (no token or no reading so far): what its events
    said of it, for the event that starts it, on this connection or a later one (`core.transaction_events`
    Rule 6). Removed when it starts or ends."""

    __tablename__ = "edge_unstarted_transactions"
    __table_args__ = (Index("ix_edge_unstarted_station", "station_id", "updated_at"),)

    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"), primary_key=True)
    station_transaction_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    began_at: Mapped[datetime] = mapped_column(UtcDateTime())
    charge_point_id: Mapped[str | None] = mapped_column(String(64), default=None)
    connector_id: Mapped[int | None] = mapped_column(Integer, default=None)
    ocpp_connector_id: Mapped[int | None] = mapped_column(Integer, default=None)
    id_tag: Mapped[str | None] = mapped_column(String(36), default=None)
    id_token_type: Mapped[str | None] = mapped_column(String(20), default=None)
    meter_begin: Mapped[int | None] = mapped_column(BigInteger, default=None)
    meter_first: Mapped[int | None] = mapped_column(BigInteger, default=None)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class UnknownStop(Base):
    """A StopTransaction for a transaction the station does not own: acknowledged and kept here."""

    __tablename__ = "edge_unknown_stops"

    id: Mapped[int] = mapped_column(_AutoId, primary_key=True)
    station_id: Mapped[str] = mapped_column(String(48), index=True)
    transaction_id: Mapped[int] = mapped_column(BigInteger)
    payload: Mapped[str] = mapped_column(Text)
    received_at: Mapped[datetime] = mapped_column(UtcDateTime())


class LocalAuthEntry(Base):
    __tablename__ = "local_auth_entries"

    site_id: Mapped[str] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"), primary_key=True)
    id_tag: Mapped[str] = mapped_column(String(36), primary_key=True)  # 2.0.1's idToken; 1.6 stations take 20
    status: Mapped[str] = mapped_column(String(16))
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    parent_id_tag: Mapped[str | None] = mapped_column(String(36), default=None)
    # The token's type, as a 2.0.1 station is sent it (IdTokenEnumType).
    id_token_type: Mapped[str] = mapped_column(String(20), default="ISO14443", server_default="ISO14443")
    # Bumped by every change; an edit made from an older version is refused (a stale form, another operator).
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class AuthCacheEntry(Base):
    """The upstream's last answer for a tag, used while the upstream is away."""

    __tablename__ = "auth_cache"

    site_id: Mapped[str] = mapped_column(ForeignKey("sites.id", ondelete="CASCADE"), primary_key=True)
    id_tag: Mapped[str] = mapped_column(String(20), primary_key=True)
    status: Mapped[str] = mapped_column(String(16))
    valid_until: Mapped[datetime] = mapped_column(UtcDateTime())  # trusted offline until then
    parent_id_tag: Mapped[str | None] = mapped_column(String(20), default=None)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)  # the upstream's expiryDate


class UpstreamMessage(Base):
    """A station transaction message waiting for the upstream, in `id` order per station."""

    __tablename__ = "upstream_queue"
    __table_args__ = (Index("ix_upstream_queue_station", "station_id", "id"),)

    id: Mapped[int] = mapped_column(_AutoId, primary_key=True)
    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(48))
    payload: Mapped[str] = mapped_column(Text)
    transaction_id: Mapped[int | None] = mapped_column(Integer, default=None)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    enqueued_at: Mapped[datetime] = mapped_column(UtcDateTime())


class ConnectorStatusHistory(Base):
    """Every StatusNotification as reported, with the transition check's verdict."""

    __tablename__ = "connector_status_history"
    __table_args__ = (Index("ix_status_history_connector", "charge_point_id", "connector_id", "id"),)

    id: Mapped[int] = mapped_column(_AutoId, primary_key=True)
    charge_point_id: Mapped[str] = mapped_column(String(64))
    connector_id: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(32))
    error_code: Mapped[str] = mapped_column(String(32))
    info: Mapped[str | None] = mapped_column(String(255), default=None)
    reported_at: Mapped[datetime] = mapped_column(UtcDateTime())
    received_at: Mapped[datetime] = mapped_column(UtcDateTime())
    transition: Mapped[str] = mapped_column(String(16))
    expected: Mapped[bool] = mapped_column(Boolean)
    became_current: Mapped[bool] = mapped_column(Boolean)


class StationPresence(Base):
    """Whether a station is connected (and to which process), its last heartbeat and what it booted as."""

    __tablename__ = "station_presence"
    # The live status feed reads the links that changed since its last look (connect, disconnect, heartbeat).
    __table_args__ = (
        Index("ix_station_presence_connected_at", "connected_at"),
        Index("ix_station_presence_disconnected_at", "disconnected_at"),
        Index("ix_station_presence_last_heartbeat_at", "last_heartbeat_at"),
    )

    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"), primary_key=True)
    connected: Mapped[bool] = mapped_column(Boolean, default=False)
    connected_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    disconnected_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    last_seen_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    last_heartbeat_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    vendor: Mapped[str | None] = mapped_column(String(50), default=None)
    model: Mapped[str | None] = mapped_column(String(20), default=None)
    firmware_version: Mapped[str | None] = mapped_column(String(50), default=None)
    booted_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    # Whether the connected station's link to its site's upstream is up; NULL: no upstream (or not connected).
    upstream_connected: Mapped[bool | None] = mapped_column(Boolean, default=None)
    # Why the link's latest attempt failed while it is down (domain.upstream_profiles.LinkFailure, and the detail).
    upstream_failure: Mapped[str | None] = mapped_column(String(300), default=None)
    # The subprotocol of its latest connection ("ocpp1.6", "ocpp2.0.1").
    ocpp_version: Mapped[str | None] = mapped_column(String(16), default=None)


class StationNotice(Base):
    """What a 2.0.1 station reports of itself beyond its charging: NotifyEvent, NotifyReport and
    SecurityEventNotification payloads, kept as received for the station page."""

    __tablename__ = "station_notices"
    __table_args__ = (Index("ix_station_notices_station", "station_id", "action", "received_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(40))
    payload: Mapped[str] = mapped_column(Text)
    received_at: Mapped[datetime] = mapped_column(UtcDateTime())


class StationCommand(Base):
    """A command for a station connected to another process sharing this store, and its answer (edge/relay.py)."""

    __tablename__ = "station_commands"
    __table_args__ = (Index("ix_station_commands_state", "state", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    station_id: Mapped[str] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(64))
    payload: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16))
    claimed_by: Mapped[str | None] = mapped_column(String(128), default=None)
    answer: Mapped[str | None] = mapped_column(Text, default=None)
    error_kind: Mapped[str | None] = mapped_column(String(32), default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    claimed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)


class OcppMessage(Base):
    """The OCPP message log (kept 30 days): every frame to and from stations and upstreams.

    `message_type`, `message_id` and `action` are read from the frame's head as it is logged (the action of a
    CALLRESULT or CALLERROR is its CALL's), so the log can be searched by them; NULL for a frame that has none.
    A row with direction `gap` stands for frames the log had to drop (its buffer is bounded): its frame is
    `{"dropped": N, "from": ..., "to": ...}`, and it sits where they would have been."""

    __tablename__ = "ocpp_messages"
    __table_args__ = (
        Index("ix_ocpp_messages_station", "station_id", "id"),
        Index("ix_ocpp_messages_at", "at"),
        Index("ix_ocpp_messages_station_action", "station_id", "action", "id"),
        Index("ix_ocpp_messages_station_message", "station_id", "message_id"),
    )

    id: Mapped[int] = mapped_column(_AutoId, primary_key=True)
    station_id: Mapped[str] = mapped_column(String(48))
    peer: Mapped[str] = mapped_column(String(16))  # station | upstream
    direction: Mapped[str] = mapped_column(String(8))  # in | out | gap
    frame: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    message_type: Mapped[int | None] = mapped_column(SmallInteger, default=None)  # 2 CALL, 3 CALLRESULT, 4 CALLERROR
    message_id: Mapped[str | None] = mapped_column(String(64), default=None)
    action: Mapped[str | None] = mapped_column(String(64), default=None)
