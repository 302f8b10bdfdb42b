"""Connectors' live status: the console's table of a company's connectors (`charge-points:read`), and the reads
the process's one live feed (`chargenet.console.live`) follows the store with.

A connector's status is what the edge last recorded in `connectors`; a station is connected while
`station_presence` says a process sharing the store holds its link (this process or another), and a connector of
a station that is not is shown offline whatever it last reported (`domain.live.LiveRow`).

How the feed finds what changed, without a query per browser and across processes:
- Status changes by the ChargePointStatus events committed with them, per (site, event type) stream and by
  the stream's sequence, as the events feed reads them (`services.events`): a stream's `last_seq` is handed
  out in commit order, so every event at or below a committed `last_seq` is visible, whichever process and
  however late it committed.
- What raises no event (a new errorCode or info under the same status; a connection, a disconnection or a
  heartbeat, which the message log writes in its batches) by its instant (`connectors.updated_at`, the presence
  instants), re-reading an overlap window behind the newest instant seen, because a row stamped earlier may
  commit later. Rows read again are dropped by `LiveState.absorb`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy import ColumnElement, Row, Select, and_, false, func, or_, select, true
from sqlalchemy import Connection as StoreConnection
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.events import ConnectorStatus, EventType
from chargenet.domain.live import ConnectorKey, ConnectorState, LiveRow, StationLink
from chargenet.domain.scopes import Scope
from chargenet.domain.text import is_storable
from chargenet.errors import InvalidInput
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest, UnknownCursor
from chargenet.services.reach import site_filter
from chargenet.services.views import like_escaped
from chargenet.store.models import ChargePoint, Connector, EventStream, OutboxEvent, Site, StationPresence
from chargenet.store.models.tenants import CONNECTOR_STATUS_COLUMNS

Connection = Literal["connected", "offline"]
STATUSES = tuple(status.value for status in ConnectorStatus)
STREAMS_PER_QUERY = 200  # advanced event streams read in one statement


@dataclass(frozen=True, slots=True)
class Filters:
    """The table's GET filters; each is None (or empty) when not set."""

    site_id: str | None = None
    status: str | None = None  # a connector status: rows shown with it (so only of connected stations)
    connection: Connection | None = None
    station: str | None = None  # part of a station id, any case

    def __post_init__(self) -> None:
        for name, value in (("site", self.site_id), ("station", self.station)):
            if value is not None and (not is_storable(value) or len(value) > 255):
                raise InvalidInput("is not an id this service stores", field=name)
        if self.status is not None and self.status not in STATUSES:
            raise InvalidInput(f"must be one of {', '.join(STATUSES)}", field="status")
        if self.connection is not None and self.connection not in ("connected", "offline"):
            raise InvalidInput("must be connected or offline", field="connection")


_COLUMNS: list[Any] = [
    Site.company_id,
    ChargePoint.site_id,
    ChargePoint.station_id,
    *CONNECTOR_STATUS_COLUMNS,
    Connector.updated_at,
]


def _columns() -> Select[Any]:
    """A connector with its place in the tenant tree: the columns `_connector` reads."""
    return (
        select(*_COLUMNS)
        .join(ChargePoint, ChargePoint.id == Connector.charge_point_id)
        .join(Site, Site.id == ChargePoint.site_id)
    )


def _connector(row: Row[Any]) -> ConnectorState:
    return ConnectorState(
        company_id=row.company_id,
        site_id=row.site_id,
        station_id=row.station_id,
        charge_point_id=row.charge_point_id,
        connector_id=row.connector_id,
        status=row.status,
        error_code=row.error_code,
        info=row.info,
        status_at=row.status_at,
        received_at=row.updated_at,
    )


# A station's presence as `_link` reads it, in plain columns.
_PRESENCE = (
    StationPresence.station_id,
    StationPresence.connected,
    StationPresence.connected_at,
    StationPresence.disconnected_at,
    StationPresence.last_heartbeat_at,
    StationPresence.ocpp_version,
)


def _link(row: StationPresence | Row[*tuple[Any, ...]]) -> StationLink:
    return StationLink(
        station_id=row.station_id,
        connected=bool(row.connected),
        connected_at=row.connected_at,
        disconnected_at=row.disconnected_at,
        last_heartbeat_at=row.last_heartbeat_at,
        ocpp_version=row.ocpp_version,
    )


def _cursor_key(key: ConnectorKey) -> str:
    # Charge point ids hold no space (`domain.tenants`), so the space separates the two parts unambiguously.
    return f"{key[0]} {key[1]}"


def _parse_cursor_key(after: str) -> ConnectorKey:
    charge_point_id, _, connector = after.rpartition(" ")
    if not charge_point_id or not connector.isdigit() or len(connector) > 5:
        raise UnknownCursor(after)
    return charge_point_id, int(connector)


async def list_connectors(session: AsyncSession, caller: Caller, filters: Filters, page: PageRequest) -> Page[LiveRow]:
    """The connectors the caller's `charge-points:read` reaches, by charge point and connector id, one keyset page."""
    connected = and_(StationPresence.station_id.is_not(None), StationPresence.connected.is_(True))
    query = (
        _columns()
        .add_columns(
            StationPresence.connected,
            StationPresence.connected_at,
            StationPresence.disconnected_at,
            StationPresence.last_heartbeat_at,
        )
        .outerjoin(StationPresence, StationPresence.station_id == ChargePoint.station_id)
        .where(site_filter(caller.reach(Scope.CHARGE_POINTS_READ)))
        .order_by(Connector.charge_point_id, Connector.connector_id)
        .limit(page.fetch)
    )
    if filters.site_id:
        query = query.where(ChargePoint.site_id == filters.site_id)
    if filters.station:
        pattern = f"%{like_escaped(filters.station.lower())}%"
        query = query.where(func.lower(ChargePoint.station_id).like(pattern, escape="\\"))
    if filters.status:
        query = query.where(connected, Connector.status == filters.status)
    if filters.connection == "connected":
        query = query.where(connected)
    elif filters.connection == "offline":
        query = query.where(or_(StationPresence.station_id.is_(None), StationPresence.connected.is_(False)))
    if page.after is not None:
        charge_point_id, connector_id = _parse_cursor_key(page.after)
        query = query.where(
            or_(
                Connector.charge_point_id > charge_point_id,
                and_(Connector.charge_point_id == charge_point_id, Connector.connector_id > connector_id),
            )
        )
    rows = []
    for row in await session.execute(query):
        link = None
        if row.connected is not None:
            link = StationLink(
                row.station_id, bool(row.connected), row.connected_at, row.disconnected_at, row.last_heartbeat_at
            )
        rows.append(LiveRow(_connector(row), link))
    return page.page(rows, lambda shown: _cursor_key(shown.key))


# --- what the live feed reads ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Marks:
    """How far the feed has read: per site, the last ChargePointStatus sequence taken; and the newest connector
    and presence instants seen, with when (on the reader's clock) each became the newest. A read re-reads an
    overlap window behind the newest instant until the newest has stood for the overlap (whatever was stamped
    before it has committed by then); then only what is newer, so a quiet store is not read again and again."""

    streams: dict[str, int] = field(default_factory=dict)
    received: datetime | None = None
    received_since: datetime | None = None
    link: datetime | None = None
    link_since: datetime | None = None


@dataclass(frozen=True, slots=True)
class Read:
    connectors: list[ConnectorState]
    links: list[StationLink]
    marks: Marks


def _newest(current: datetime | None, *instants: datetime | None) -> datetime | None:
    known = [t for t in (current, *instants) if t is not None]
    return max(known) if known else None


# Each site's last ChargePointStatus sequence.
_STREAMS = select(EventStream.site_id, EventStream.last_seq).where(
    EventStream.event_type == EventType.CHARGE_POINT_STATUS.value
)


async def _streams(session: AsyncSession) -> dict[str, int]:
    return {site_id: int(last_seq) for site_id, last_seq in await session.execute(_STREAMS)}


def _window(
    newest: datetime | None, since: datetime | None, now: datetime, overlap: timedelta
) -> tuple[datetime, bool] | None:
    """From where to re-read (and whether that instant itself is included): None to read everything."""
    if newest is None:
        return None
    if since is not None and now - since >= overlap:
        return newest, False
    return newest - overlap, True


def _advance(
    newest: datetime | None, since: datetime | None, found: datetime | None, now: datetime
) -> tuple[datetime | None, datetime | None]:
    if found is not None and (newest is None or found > newest):
        return found, now
    return newest, since


async def read_everything(session: AsyncSession, *, now: datetime) -> Read:
    """Every connector and station link (the feed's start), and the marks to follow the store from; `now` is the
    reader's clock."""
    streams = await _streams(session)  # first: what is committed after this is read again, never missed
    connectors = [_connector(row) for row in await session.execute(_columns())]
    links = [_link(row) for row in await session.scalars(select(StationPresence))]
    marks = Marks(streams=streams, received_since=now, link_since=now)
    marks.received = _newest(None, *(c.received_at for c in connectors))
    marks.link = _newest(None, *(link.newest for link in links))
    return Read(connectors, links, marks)


def read_marks(connection: StoreConnection, *, now: datetime) -> Marks:
    """The marks to follow the store from, as `read_everything` leaves them, without reading the rows: for a reader
    that read them its own way in the same snapshot (`services.directory`). Read before those rows, as the streams
    must be, or in one snapshot with them."""
    streams = {site_id: int(last_seq) for site_id, last_seq in connection.execute(_STREAMS)}
    received = connection.execute(select(func.max(Connector.updated_at))).scalar()
    newest = connection.execute(
        select(
            func.max(StationPresence.connected_at),
            func.max(StationPresence.disconnected_at),
            func.max(StationPresence.last_heartbeat_at),
        )
    ).one()
    return Marks(streams=streams, received=received, received_since=now, link=_newest(None, *newest), link_since=now)


async def read_changes(session: AsyncSession, marks: Marks, *, now: datetime, overlap: timedelta) -> Read:
    """What may have changed since `marks` (a superset: `LiveState.absorb` drops what is known), and new marks;
    `now` is the reader's clock."""
    return await session.run_sync(lambda sync: read_changes_on(sync.connection(), marks, now=now, overlap=overlap))


def read_changes_on(connection: StoreConnection, marks: Marks, *, now: datetime, overlap: timedelta) -> Read:
    """`read_changes` on a connection, in Core statements: for a reader that runs it with other reads of one
    snapshot in one call (`Store.read_at_once`, `services.directory`)."""
    streams = {site_id: int(last_seq) for site_id, last_seq in connection.execute(_STREAMS)}
    advanced = [
        (site, seq, marks.streams.get(site, 0)) for site, seq in streams.items() if seq > marks.streams.get(site, 0)
    ]
    keys: set[ConnectorKey] = set()
    for start in range(0, len(advanced), STREAMS_PER_QUERY):
        chunk = advanced[start : start + STREAMS_PER_QUERY]
        bodies = connection.execute(
            select(OutboxEvent.body).where(
                OutboxEvent.event_type == EventType.CHARGE_POINT_STATUS.value,
                or_(
                    *(
                        and_(OutboxEvent.site_id == site, OutboxEvent.seq > after, OutboxEvent.seq <= seq)
                        for site, seq, after in chunk
                    )
                ),
            )
        ).scalars()
        for body in bodies:
            payload = json.loads(body).get("payload", {})
            keys.add((str(payload.get("chargePointId")), int(payload.get("connectorId", 0))))
    connectors: dict[ConnectorKey, ConnectorState] = {}
    if keys:
        charge_points = sorted({charge_point for charge_point, _ in keys})
        for row in connection.execute(_columns().where(Connector.charge_point_id.in_(charge_points))):
            state = _connector(row)
            if state.key in keys:
                connectors[state.key] = state
    window = _window(marks.received, marks.received_since, now, overlap)
    if window is None:
        recent = _columns().where(Connector.updated_at.is_not(None))
    else:
        start_at, inclusive = window
        recent = _columns().where(Connector.updated_at >= start_at if inclusive else Connector.updated_at > start_at)
    for row in connection.execute(recent):
        state = _connector(row)
        connectors[state.key] = state
    link_window = _window(marks.link, marks.link_since, now, overlap)
    since: ColumnElement[bool] = true()
    if link_window is not None:
        start_at, inclusive = link_window
        columns = (StationPresence.connected_at, StationPresence.disconnected_at, StationPresence.last_heartbeat_at)
        since = or_(*(column >= start_at if inclusive else column > start_at for column in columns))
    links = [_link(row) for row in connection.execute(select(*_PRESENCE).where(since))]
    received, received_since = _advance(
        marks.received, marks.received_since, _newest(None, *(c.received_at for c in connectors.values())), now
    )
    link, link_since = _advance(marks.link, marks.link_since, _newest(None, *(x.newest for x in links)), now)
    new = Marks(
        streams={**marks.streams, **{site: seq for site, seq, _ in advanced}},
        received=received,
        received_since=received_since,
        link=link,
        link_since=link_since,
    )
    return Read(list(connectors.values()), links, new)


async def read_station_connectors(session: AsyncSession, station_ids: Sequence[str]) -> list[ConnectorState]:
    """Every connector of these stations (a station the feed meets first through its link)."""
    if not station_ids:
        return []
    query = _columns().where(ChargePoint.station_id.in_(sorted(station_ids)) if station_ids else false())
    return [_connector(row) for row in await session.execute(query)]
