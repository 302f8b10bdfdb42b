"""Charge points as partners see them (`charge-points:read`): connectors' last known status, how the station is
reached, and the meters measuring them."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from sqlalchemy import (
    JSON,
    ColumnElement,
    Connection,
    Integer,
    Select,
    String,
    and_,
    any_,
    bindparam,
    func,
    or_,
    select,
    true,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute
from sqlalchemy.sql import FromClause
from sqlalchemy.sql.expression import Executable

from chargenet.auth.permissions import Reach
from chargenet.domain.energy import wh_to_kwh
from chargenet.domain.generations import parse_upstream_versions
from chargenet.domain.scopes import Scope
from chargenet.errors import NotFound
from chargenet.ports import StationCommands
from chargenet.services import meters
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_station, site_filter, site_of
from chargenet.services.views import Instant, View
from chargenet.store.db import ReadStatement
from chargenet.store.models import (
    ChargePoint,
    Connector,
    Meter,
    MeterSession,
    MeterState,
    Site,
    StationPresence,
)
from chargenet.store.models.tenants import CONNECTOR_STATUS_COLUMNS

ChargePointConnection = Literal["connected", "meter", "disconnected"]


class ConnectorView(View):
    connector_id: int
    status: str | None
    error_code: str | None
    info: str | None
    status_at: Instant | None


class ChargePointMeterView(View):
    """A meter measuring one of the charge point's connectors, with its charging state and last reading."""

    id: str
    connector_id: int
    enabled: bool
    charging: bool
    transaction_id: int | None
    last_reading: meters.MeterReading | None


class ChargePointView(View):
    """`connection` is `connected` while its station holds an OCPP link to this process, `meter` for a station
    known only through meters, and `disconnected` otherwise (decisions.md §4)."""

    id: str
    site_id: str
    station_id: str
    connectors: list[ConnectorView]
    connection: ChargePointConnection
    last_heartbeat: Instant | None
    meters: list[ChargePointMeterView]
    ocpp_version: str | None = None  # the subprotocol of its station's latest connection


@dataclass(frozen=True, slots=True)
class Kept:
    """What a copy in memory holds of one charge point: its rows, or None for one the caller may not see or that
    does not exist (one answer for both, so that another company's ids are not revealed)."""

    point: ChargePointRows | None


class ChargePointsInMemory(Protocol):
    """A copy of the store's charge points held in memory (`services.directory.ChargePointDirectory`)."""

    async def page(
        self, reach: Reach, site_id: str | None, after: str | None, fetch: int
    ) -> list[ChargePointRows] | None:
        """Up to `fetch` charge points, as `list_charge_points` would read them from the store; None when the copy
        cannot answer for the store (the page is then read from it)."""
        ...

    async def one(self, reach: Reach, charge_point_id: str) -> Kept | None:
        """The charge point as `get_charge_point` would read it from the store; None when the copy cannot answer
        for the store."""
        ...


async def list_charge_points(
    read_statement: ReadStatement,
    caller: Caller,
    stations: StationCommands | None,
    page: PageRequest,
    *,
    site_id: str | None = None,
    directory: ChargePointsInMemory | None = None,
) -> Page[ChargePointView]:
    """The charge points the caller's groups reach, ordered by id; `stations` answers which are connected here.
    From `directory` (this process's copy, `services.directory`) while its structure is the store's, else from the
    store."""
    reach = caller.reach(Scope.CHARGE_POINTS_READ)
    if reach.empty:
        return page.complete([], more=False, key=lambda view: view.id)
    if directory is not None:
        kept = await directory.page(reach, site_id, page.after, page.fetch)
        if kept is not None:
            views = _views(stations, kept[: page.limit])
            return page.complete(views, more=len(kept) > page.limit, key=lambda view: view.id)
    shape = (reach.everything, bool(reach.companies), bool(reach.sites), site_id is not None, page.after is not None)
    values = {
        "companies": sorted(reach.companies),
        "sites": sorted(reach.sites),
        "site_id": site_id,
        "after": page.after,
        "fetch": page.fetch,
    }
    # One statement on PostgreSQL; SQLite's second (the meters) shares the first's snapshot (`read_statement`).
    points = await read_statement(
        lambda connection: _read(connection, _listing(connection.dialect.name, *shape), values)
    )
    views = _views(stations, points[: page.limit])
    return page.complete(views, more=len(points) > page.limit, key=lambda view: view.id)


async def get_charge_point(
    read_statement: ReadStatement,
    caller: Caller,
    stations: StationCommands | None,
    charge_point_id: str,
    *,
    directory: ChargePointsInMemory | None = None,
) -> ChargePointView:
    """One charge point the caller's groups reach: from `directory` while its structure is the store's, else from the
    store. `NotFound` for one of another company too: its existence is not revealed."""
    reach = caller.reach(Scope.CHARGE_POINTS_READ)
    if directory is not None and not reach.empty:
        kept = await directory.one(reach, charge_point_id)
        if kept is not None:
            if kept.point is None:
                raise NotFound("charge point", charge_point_id)
            [view] = _views(stations, [kept.point])
            return view
    query = _POINTS.join(Site, Site.id == ChargePoint.site_id).where(
        ChargePoint.id == charge_point_id, site_filter(reach)
    )

    points = await read_statement(
        lambda connection: _read(connection, _joined(query, connection.dialect.name, by_station=False))
    )
    if not points:
        raise NotFound("charge point", charge_point_id)
    [view] = _views(stations, points)
    return view


async def charge_points_of_stations(
    session: AsyncSession, caller: Caller, stations: StationCommands | None, station_ids: list[str]
) -> list[ChargePointView]:
    """The charge points of these stations that the caller reaches, by station and then in the station's order
    (the tree under a page of stations)."""
    if not station_ids:
        return []
    query = _POINTS.join(Site, Site.id == ChargePoint.site_id).where(
        ChargePoint.station_id.in_(station_ids), site_filter(caller.reach(Scope.CHARGE_POINTS_READ))
    )

    points = await session.run_sync(
        lambda sync: _read(sync.connection(), _joined(query, sync.connection().dialect.name, by_station=True))
    )
    return _views(stations, points)


def read_charge_points_after(connection: Connection, after: str | None, fetch: int) -> list[ChargePointRows]:
    """Up to `fetch` charge points of the store after `after`, in id order, with what their views need: the charge
    point directory's whole read (`services.directory`), a part at a time, in the list's own statement."""
    statement = _listing(connection.dialect.name, True, False, False, False, after is not None)
    return _read(connection, statement, {"companies": [], "sites": [], "site_id": None, "after": after, "fetch": fetch})


# What a query of charge points selects; `_read` joins what their views need to it.
_POINTS = select(ChargePoint.id, ChargePoint.site_id, ChargePoint.station_id, ChargePoint.ordinal)

# The rows of `_joined`: a charge point's row, its station's presence, one connector, and on PostgreSQL one meter.
_Joined = Select[*tuple[Any, ...]]
ConnectorRow = tuple[int, str | None, str | None, str | None, datetime | None]
# A meter's id, connector, whether enabled, open session's transaction, and its last reading's energy (Wh), current,
# power and instant (None without a reading).
MeterRow = tuple[str, int, bool, int | None, int | None, float | None, float | None, datetime | None]


@dataclass(slots=True)
class ChargePointRows:
    """A charge point's row and what its view needs, as the store holds them: the key of its view (`_views`)."""

    id: str
    site_id: str
    station_id: str
    present: bool  # its station has a presence row (it has connected over OCPP at least once)
    last_heartbeat: datetime | None
    connectors: list[ConnectorRow]
    meters: list[MeterRow]
    ocpp_version: str | None = None

    def key(self, connection: ChargePointConnection) -> tuple[object, ...]:
        return (
            self.site_id,
            self.station_id,
            connection,
            self.last_heartbeat,
            self.ocpp_version,
            tuple(self.connectors),
            tuple(self.meters),
        )


def _one_of(column: InstrumentedAttribute[str], dialect: str, name: str = "ids") -> ColumnElement[bool]:
    """`column` is one of the list bound as `name`, as one parameter: an expanding IN renders its SQL anew for every
    call, and on PostgreSQL each length is another prepared statement. SQLite reads the list as JSON text
    (`json_each`), PostgreSQL as an array (`= ANY`)."""
    if dialect == "postgresql":
        return column == any_(bindparam(name, type_=postgresql.ARRAY(String)))
    listed = func.json_each(bindparam(name, type_=JSON)).table_valued("value")
    return column.in_(select(listed.c.value))


@functools.cache
def _listing(dialect: str, everything: bool, companies: bool, sites: bool, by_site: bool, after: bool) -> _Joined:
    """The page of `list_charge_points` for one shape of reach and filters, with every value bound (`companies`,
    `sites`, `site_id`, `after`, `fetch`): built once per shape, as building it cost a sixth of a page's time."""
    # Charge points in id order whose site is reached, rather than a join from the sites: the store then walks the
    # primary key and stops at the page's end, where the join gathered every charge point of the company's sites
    # and sorted them (0.85 ms against 0.10 ms for 10,000 charge points on SQLite).
    query = _POINTS.order_by(ChargePoint.id).limit(bindparam("fetch", type_=Integer))
    if not everything:
        reached = []
        if companies:
            reached.append(_one_of(Site.company_id, dialect, "companies"))
        if sites:
            reached.append(_one_of(Site.id, dialect, "sites"))
        query = query.where(ChargePoint.site_id.in_(select(Site.id).where(or_(*reached))))
    if by_site:
        query = query.where(ChargePoint.site_id == bindparam("site_id", type_=String))
    if after:
        query = query.where(ChargePoint.id > bindparam("after", type_=String))
    return _joined(query, dialect, by_station=False)


def _joined(query: Select[str, str, str, int], dialect: str, *, by_station: bool) -> _Joined:
    """The charge points `query` selects (`_POINTS`, ordered by id unless `by_station`, limited as it says), each
    with its station's presence, its connectors and (on PostgreSQL) its meters, in one statement: the store looks
    them up by index for each charge point of the page. A row per connector and meter of a charge point (at least
    one); `_read` gathers them. One statement rather than one per table: 0.58 ms of statements for a page of 100
    on SQLite went to 0.3 ms, and on PostgreSQL the list's page is one round trip outside a transaction instead of
    six."""
    points = query.subquery("points")
    presence = select(StationPresence.station_id, StationPresence.last_heartbeat_at, StationPresence.ocpp_version)
    connectors = select(*CONNECTOR_STATUS_COLUMNS)
    metered = meters_with_state()
    present: FromClause
    connected: FromClause
    if dialect == "postgresql":
        # Joined plainly, the planner hashes the page and scans every connector and presence row (2.1 ms for 20,000
        # connectors, against 0.3 ms). A LATERAL subquery with a LIMIT or an OFFSET is not flattened into such a
        # join, so each is looked up by index for each charge point of the page.
        present = presence.where(StationPresence.station_id == points.c.station_id).limit(1).lateral("presence")
        connected = connectors.where(Connector.charge_point_id == points.c.id).offset(0).lateral("connectors")
        # Meters by station, whose index they have.
        measured = (
            metered.where(Meter.station_id == points.c.station_id, Meter.charge_point_id == points.c.id)
            .offset(0)
            .lateral("meters")
        )
        joined = points.outerjoin(present, true()).outerjoin(connected, true()).outerjoin(measured, true())
        meter_columns = tuple(measured.c)
    else:
        # SQLite has no LATERAL, and looks each joined row up by index for each row of the page anyway. Its meters
        # are read by `_read` in a second statement, which costs no round trip here: joined, they doubled the
        # rows to sort (0.15 ms more a page of 100).
        present, connected = StationPresence.__table__, Connector.__table__
        joined = points.outerjoin(present, present.c.station_id == points.c.station_id).outerjoin(
            connected, connected.c.charge_point_id == points.c.id
        )
        meter_columns = ()
    # The id last: `_read` gathers a charge point's rows only while they come one after the other.
    order = (points.c.station_id, points.c.ordinal, points.c.id) if by_station else (points.c.id,)
    return (
        select(
            points.c.id,
            points.c.site_id,
            points.c.station_id,
            present.c.station_id,
            present.c.last_heartbeat_at,
            present.c.ocpp_version,
            connected.c.connector_id,
            connected.c.status,
            connected.c.error_code,
            connected.c.info,
            connected.c.status_at,
            *meter_columns[3:],
        )
        .select_from(joined)
        .order_by(*order, connected.c.connector_id, *meter_columns[2:4])
    )


def _read(
    connection: Connection, statement: _Joined, values: Mapping[str, object] | None = None
) -> list[ChargePointRows]:
    """The charge points of a `_joined` statement, each with its connectors and meters gathered from its rows (on
    SQLite, its meters from a second statement)."""
    found: list[ChargePointRows] = []
    point: ChargePointRows | None = None
    meter_ids: set[str] = set()
    for row in connection.execute(statement, values).all():
        charge_point_id, site_id, station_id, presence, heartbeat, version, connector_id, status, error, info, at = row[
            :11
        ]
        if point is None or point.id != charge_point_id:
            present = presence is not None
            point = ChargePointRows(charge_point_id, site_id, station_id, present, heartbeat, [], [], version)
            found.append(point)
            meter_ids = set()
        # A charge point with several connectors and meters has a row for each pair: the connectors come in order,
        # each with the meters in order.
        if connector_id is not None and (not point.connectors or point.connectors[-1][0] != connector_id):
            point.connectors.append((connector_id, status, error, info, at))
        meter_id = row[11] if len(row) > 11 else None
        if meter_id is not None and meter_id not in meter_ids:
            meter_ids.add(meter_id)
            point.meters.append(meter_row(meter_id, *row[12:]))
    if found and connection.dialect.name == "sqlite":
        by_id = {p.id: p for p in found}
        station_ids = sorted({p.station_id for p in found})
        for _station, charge_point_id, _created, *measured in connection.execute(_meters_of(), {"ids": station_ids}):
            metered = by_id.get(charge_point_id)
            if metered is not None:
                metered.meters.append(meter_row(*measured))
    return found


def meter_row(
    meter_id: str,
    connector_id: int,
    enabled: bool,
    transaction_id: int | None,
    energy_wh: int | None,
    max_current: float | None,
    power: float | None,
    read_at: datetime | None,
) -> MeterRow:
    """A meter's columns as `_joined` and `_meters_of` select them, in that order."""
    return (meter_id, connector_id, enabled, transaction_id, energy_wh, max_current, power, read_at)


def meters_with_state() -> Select[*tuple[Any, ...]]:
    """Meters with their last reading and open session: the station, charge point and creation instant they are
    found and ordered by, then the columns of `_meter`."""
    return (
        select(
            Meter.station_id,
            Meter.charge_point_id,
            Meter.created_at,
            Meter.id,
            Meter.connector_id,
            Meter.enabled,
            MeterSession.transaction_id,
            MeterState.energy_wh,
            MeterState.max_current_a,
            MeterState.power_w,
            MeterState.read_at,
        )
        .outerjoin(MeterState, MeterState.meter_id == Meter.id)
        .outerjoin(MeterSession, and_(MeterSession.meter_id == Meter.id, MeterSession.stopped_at.is_(None)))
    )


@functools.cache
def _meters_of() -> Executable:
    """The meters of a list of stations (bound as `ids`) on SQLite, built once."""
    # By station, whose index meters have; a meter of a charge point not asked for is keyed by its own and unused.
    return meters_with_state().where(_one_of(Meter.station_id, "sqlite")).order_by(Meter.created_at, Meter.id)


# The views of charge points by id, with the key they were built from (`ChargePointRows.key`): a view is a pure
# function of its key, so one whose key has not changed is used again instead of being built anew, which was a
# third of a page's time. Bounded: past VIEWS_CACHED the cache starts again.
VIEWS_CACHED = 20_000
_built: dict[str, tuple[tuple[object, ...], ChargePointView]] = {}


def _views(stations: StationCommands | None, points: list[ChargePointRows]) -> list[ChargePointView]:
    with_meters = {p.station_id for p in points if p.meters}
    views = []
    for point in points:
        connection: ChargePointConnection
        if stations is not None and stations.is_connected(point.station_id):
            connection = "connected"
        elif point.station_id in with_meters and not point.present:
            connection = "meter"
        else:
            connection = "disconnected"
        key = point.key(connection)
        cached = _built.get(point.id)
        if cached is not None and cached[0] == key:
            views.append(cached[1])
            continue
        view = _view(point, connection)
        if len(_built) >= VIEWS_CACHED:
            _built.clear()
        _built[point.id] = (key, view)
        views.append(view)
    return views


def _view(point: ChargePointRows, connection: ChargePointConnection) -> ChargePointView:
    meter_views = []
    for meter_id, connector_id, enabled, transaction_id, energy_wh, max_current, power, read_at in point.meters:
        reading = None
        if read_at is not None and energy_wh is not None:
            reading = meters.MeterReading(
                energy_kwh=wh_to_kwh(energy_wh), max_current=max_current, power=power, read_at=read_at
            )
        meter_views.append(
            ChargePointMeterView(
                id=meter_id,
                connector_id=connector_id,
                enabled=enabled,
                charging=transaction_id is not None,
                transaction_id=transaction_id,
                last_reading=reading,
            )
        )
    return ChargePointView(
        id=point.id,
        site_id=point.site_id,
        station_id=point.station_id,
        connectors=[
            ConnectorView(connector_id=c, status=status, error_code=error, info=info, status_at=at)
            for c, status, error, info, at in point.connectors
        ],
        connection=connection,
        last_heartbeat=point.last_heartbeat,
        meters=meter_views,
        ocpp_version=point.ocpp_version,
    )


class StationStateView(View):
    """How a station is reached now and what it said it is, as an operator's page shows it.

    `connection`: `connected` while this process holds its OCPP connection; `elsewhere` while another process
    sharing the store does (its commands go through the store's relay); `meter` for a station known only through
    meters; `offline` otherwise, whatever its connectors last reported. The identity is what its last
    BootNotification said (station-supplied text)."""

    station_id: str
    site_id: str
    connection: Literal["connected", "elsewhere", "meter", "offline"]
    connected_at: Instant | None
    disconnected_at: Instant | None
    last_heartbeat: Instant | None
    last_seen: Instant | None
    vendor: str | None
    model: str | None
    firmware_version: str | None
    booted_at: Instant | None
    site_has_upstream: bool
    # The OCPP generations the site's upstream takes (decisions.md §4).
    site_upstream_versions: list[str] = ["ocpp1.6"]
    # Its link to the site's upstream, as the process holding the station stored it: None when not connected
    # or without an upstream.
    upstream_connected: bool | None = None
    # While that link is down: why its latest attempt failed (an upstream refusing the edge's certificate, ...).
    upstream_failure: str | None = None
    # The OCPP subprotocol of its latest connection ("ocpp1.6", "ocpp2.0.1"); None before it first connects.
    ocpp_version: str | None = None

    @property
    def answered_by_edge(self) -> bool:
        """A station on a site whose upstream does not take the generation it speaks: the edge answers it as the
        central system itself (docs/edge.md)."""
        return (
            self.site_has_upstream
            and self.ocpp_version is not None
            and self.ocpp_version not in self.site_upstream_versions
        )

    @property
    def reachable(self) -> bool:
        """Whether a command can be sent to it now (here or through the process that holds it)."""
        return self.connection in ("connected", "elsewhere")


async def station_state(
    session: AsyncSession, caller: Caller, stations: StationCommands | None, station_id: str
) -> StationStateView:
    """The station's connection and identity, if the caller's `charge-points:read` reaches it; `NotFound` else."""
    station = await reachable_station(session, caller, Scope.CHARGE_POINTS_READ, station_id)
    site = await site_of(session, station)
    row = await session.get(StationPresence, station_id)
    connection: Literal["connected", "elsewhere", "meter", "offline"]
    if stations is not None and stations.is_connected(station_id):
        connection = "connected"
    elif row is not None and row.connected:
        # What the relay goes by too (`edge.relay.forward`): a command is sent through the store to that process.
        connection = "elsewhere"
    elif row is None and await session.scalar(select(Meter.id).where(Meter.station_id == station_id).limit(1)):
        connection = "meter"
    else:
        connection = "offline"
    return StationStateView(
        station_id=station_id,
        site_id=site.id,
        connection=connection,
        connected_at=row.connected_at if row else None,
        disconnected_at=row.disconnected_at if row else None,
        last_heartbeat=row.last_heartbeat_at if row else None,
        last_seen=row.last_seen_at if row else None,
        vendor=row.vendor if row else None,
        model=row.model if row else None,
        firmware_version=row.firmware_version if row else None,
        booted_at=row.booted_at if row else None,
        site_has_upstream=site.upstream_url is not None,
        site_upstream_versions=list(parse_upstream_versions(site.upstream_ocpp_versions)),
        upstream_connected=row.upstream_connected if row is not None and row.connected else None,
        upstream_failure=row.upstream_failure if row is not None and row.connected else None,
        ocpp_version=row.ocpp_version if row else None,
    )


class StationPresenceView(View):
    connection: Literal["connected", "disconnected"]
    last_heartbeat: Instant | None
    last_seen: Instant | None


async def station_presence(session: AsyncSession, stations: StationCommands, station_id: str) -> StationPresenceView:
    """Whether this process holds the station's connection, and when it was last heard of by any process."""
    row = await session.get(StationPresence, station_id)
    return StationPresenceView(
        connection="connected" if stations.is_connected(station_id) else "disconnected",
        last_heartbeat=row.last_heartbeat_at if row else None,
        last_seen=row.last_seen_at if row else None,
    )
