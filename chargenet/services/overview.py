"""What the console's overview shows of one company: read-only, a handful of aggregate statements, all counted
in the database, none of them loading rows one by one (a company may have ten thousand stations).

"Connected" is what the edge recorded in `station_presence`; a process that died without closing its
connections leaves them marked connected until another process takes the station over. A connector of a station
that is not connected counts as offline whatever it last reported, as the live table shows it
(`domain.live.LiveRow`).

Energy per day: a session's energy counts on the day it started, once it has completed (an OCPP station reports
its meter at the stop), whole, even when it ran past midnight; so a day's figure is exactly the completed
sessions the sessions list shows for that day. Days are the reader's local days (`domain.local_time`), 23 or 25
hours long at a DST change: their bounds are computed here and each session is put in its day by comparing
instants, so neither dialect's own idea of a time zone (PostgreSQL's connection setting) plays any part.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import ScalarSelect, Select, case, func, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.local_time import LocalTime
from chargenet.services.sessions import last_sampled_wh
from chargenet.services.webhook_lanes import lane_at
from chargenet.store.models import (
    Application,
    ChargePoint,
    Connector,
    EdgeTransaction,
    Meter,
    MeterSession,
    Site,
    Station,
    StationPresence,
    Webhook,
    WebhookLane,
)
from chargenet.webhooks.health import Level

OFFLINE = "Offline"
NOT_REPORTED = "Not reported"
FAULTED = "Faulted"
ENERGY_DAYS = 30
UPSTREAM_DOWN_SHOWN = 10  # stations named on the page; the count covers them all


@dataclass(frozen=True, slots=True)
class CompanyCounts:
    sites: int
    stations: int
    connected_stations: int
    applications: int
    webhooks: int
    enabled_webhooks: int
    active_transactions: int  # OCPP transactions in progress
    active_meter_sessions: int
    active_meter_energy_wh: int  # delivered so far by the meter sessions in progress
    active_ocpp_energy_wh: int  # by the OCPP transactions in progress, as of their newest stored meter value
    lanes_alert: int  # lanes at alert or worse (critical ones included)
    lanes_critical: int
    # Stations known only through their meters: never connected over OCPP, so neither online nor offline.
    meter_stations: int

    @property
    def ocpp_stations(self) -> int:
        return self.stations - self.meter_stations

    @property
    def offline_stations(self) -> int:
        return self.ocpp_stations - self.connected_stations

    @property
    def online_percent(self) -> int | None:
        """The connected stations' share of those that speak OCPP, rounded down (a network with one station
        offline is not "100%")."""
        return None if not self.ocpp_stations else self.connected_stations * 100 // self.ocpp_stations

    @property
    def active_energy_wh(self) -> int:
        return self.active_meter_energy_wh + self.active_ocpp_energy_wh

    @property
    def active_sessions(self) -> int:
        return self.active_transactions + self.active_meter_sessions


def _sites(company_id: str) -> ScalarSelect[Any]:
    return select(Site.id).where(Site.company_id == company_id).scalar_subquery()


def _count(query: Select[Any]) -> ScalarSelect[int]:
    return query.with_only_columns(func.count()).scalar_subquery()


async def company_counts(session: AsyncSession, company_id: str) -> CompanyCounts:
    """Every count in one statement: the overview is the most visited page, and each round trip costs more than
    the counting itself."""
    sites = _sites(company_id)
    open_meter = (MeterSession.site_id.in_(sites), MeterSession.stopped_at.is_(None))
    open_ocpp = (
        EdgeTransaction.station_id.in_(select(Station.id).where(Station.site_id.in_(sites))),
        EdgeTransaction.stopped_at.is_(None),
    )
    so_far = last_sampled_wh() - EdgeTransaction.meter_start
    company_lanes = select(WebhookLane.id).join(Webhook, Webhook.id == WebhookLane.webhook_id)
    company_lanes = company_lanes.where(Webhook.site_id.in_(sites))
    row = (
        await session.execute(
            select(
                _count(select(Site.id).where(Site.company_id == company_id)),
                _count(select(Station.id).where(Station.site_id.in_(sites))),
                _count(
                    select(StationPresence.station_id)
                    .join(Station, Station.id == StationPresence.station_id)
                    .where(Station.site_id.in_(sites), StationPresence.connected.is_(True))
                ),
                _count(select(Application.client_id).where(Application.company_id == company_id)),
                _count(select(Webhook.id).where(Webhook.site_id.in_(sites))),
                _count(select(Webhook.id).where(Webhook.site_id.in_(sites), Webhook.enabled.is_(True))),
                # Through the stations, so the `(station_id, stopped_at)` index finds the open ones directly,
                # however long the sites' history.
                _count(select(EdgeTransaction.id).where(*open_ocpp)),
                _count(select(MeterSession.transaction_id).where(*open_meter)),
                select(func.sum(MeterSession.last_charging_wh - MeterSession.meter_start_wh))
                .where(*open_meter)
                .scalar_subquery(),
                select(func.sum(case((so_far > 0, so_far), else_=0))).where(*open_ocpp).scalar_subquery(),
                _count(company_lanes.where(lane_at(Level.ALERT))),
                _count(company_lanes.where(lane_at(Level.CRITICAL))),
                # As the station page calls a station "meter": no OCPP link ever recorded, and meters.
                _count(
                    select(Station.id).where(
                        Station.site_id.in_(sites),
                        ~select(StationPresence.station_id).where(StationPresence.station_id == Station.id).exists(),
                        select(Meter.id).where(Meter.station_id == Station.id).exists(),
                    )
                ),
            )
        )
    ).one()
    return CompanyCounts(*(int(figure or 0) for figure in row))


@dataclass(frozen=True, slots=True)
class ConnectorFigures:
    """The company's connectors by what the live table shows for them (`Offline` for a station not connected),
    and the faulted ones (of connected stations) by error code; both ordered by count, largest first."""

    by_status: list[tuple[str, int]]
    faults: list[tuple[str, int]]

    @property
    def total(self) -> int:
        return sum(count for _, count in self.by_status)

    @property
    def faulted(self) -> int:
        return sum(count for _, count in self.faults)


def _largest_first(counts: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


async def connector_figures(session: AsyncSession, company_id: str) -> ConnectorFigures:
    """Two statements: every connector counted, and those of connected stations grouped by status and error
    code; the rest are offline. Only connected stations' connectors are looked up one by one in the store, so a
    network mostly offline (or seen before its stations connect) costs little more than the count."""
    sites = _sites(company_id)
    total = await session.scalar(
        select(func.count())
        .select_from(Connector)
        .join(ChargePoint, ChargePoint.id == Connector.charge_point_id)
        .where(ChargePoint.site_id.in_(sites))
    )
    rows = await session.execute(
        select(Connector.status, Connector.error_code, func.count())
        .select_from(StationPresence)
        .join(ChargePoint, ChargePoint.station_id == StationPresence.station_id)
        .join(Connector, Connector.charge_point_id == ChargePoint.id)
        .where(StationPresence.connected.is_(True), ChargePoint.site_id.in_(sites))
        .group_by(Connector.status, Connector.error_code)
    )
    by_status: dict[str, int] = {}
    faults: dict[str, int] = {}
    for status, error_code, count in rows:
        shown = status or NOT_REPORTED
        by_status[shown] = by_status.get(shown, 0) + count
        if shown == FAULTED:
            code = error_code or "no error code"
            faults[code] = faults.get(code, 0) + count
    offline = int(total or 0) - sum(by_status.values())
    if offline:
        by_status[OFFLINE] = offline
    return ConnectorFigures(_largest_first(by_status), _largest_first(faults))


@dataclass(frozen=True, slots=True)
class DayEnergy:
    """The completed sessions that started on the local `day` (from `since`, until `until` excluded: its
    midnights, as instants)."""

    day: date
    since: datetime
    until: datetime
    energy_wh: int
    sessions: int


async def energy_per_day(
    session: AsyncSession, company_id: str, *, now: datetime, local: LocalTime, days: int = ENERGY_DAYS
) -> list[DayEnergy]:
    """Energy of the completed OCPP transactions and meter sessions per local day (in `local`'s zone) over the
    last `days` days (today last), grouped in one statement. A session whose meter went backwards counts as a
    session with no energy.

    OCPP transactions are found through their stations and `stopped_at` (the `(station_id, stopped_at)` index):
    a session that started in the period stopped in it too, so this reads the period's sessions, not the whole
    history of the company's sites."""
    bounds = local.days_up_to(local.today(now), days)
    start, end = bounds[0][1], bounds[-1][2]
    sites = _sites(company_id)
    ocpp = select(
        EdgeTransaction.started_at.label("started_at"),
        (EdgeTransaction.meter_stop - EdgeTransaction.meter_start).label("wh"),
    ).where(
        EdgeTransaction.station_id.in_(select(Station.id).where(Station.site_id.in_(sites))),
        EdgeTransaction.stopped_at >= start,
        EdgeTransaction.started_at >= start,
        EdgeTransaction.started_at < end,
        EdgeTransaction.meter_stop.is_not(None),
    )
    metered = select(
        MeterSession.started_at.label("started_at"),
        (MeterSession.meter_stop_wh - MeterSession.meter_start_wh).label("wh"),
    ).where(
        MeterSession.site_id.in_(sites),
        MeterSession.started_at >= start,
        MeterSession.started_at < end,
        MeterSession.stopped_at.is_not(None),
        MeterSession.meter_stop_wh.is_not(None),
    )
    done = union_all(ocpp, metered).subquery()
    # The day's index, by its bounds: a CASE of at most `days` comparisons the database makes on each row.
    started_on = case(*((done.c.started_at < until, index) for index, (_, _, until) in enumerate(bounds)))
    rows = await session.execute(
        select(started_on, func.sum(case((done.c.wh > 0, done.c.wh), else_=0)), func.count()).group_by(started_on)
    )
    found = {int(index): (int(energy or 0), int(count)) for index, energy, count in rows if index is not None}
    return [DayEnergy(day, since, until, *found.get(n, (0, 0))) for n, (day, since, until) in enumerate(bounds)]


@dataclass(frozen=True, slots=True)
class UpstreamDown:
    """The company's connected stations whose link to their site's upstream is down: how many, and the first
    `UPSTREAM_DOWN_SHOWN` by id."""

    count: int
    first: list[str]


async def upstream_links_down(session: AsyncSession, company_id: str) -> UpstreamDown:
    """As each station's holding process stored it with the station's presence, whichever process that is."""
    down = (
        select(StationPresence.station_id)
        .join(Station, Station.id == StationPresence.station_id)
        .where(
            Station.site_id.in_(_sites(company_id)),
            StationPresence.connected.is_(True),
            StationPresence.upstream_connected.is_(False),
        )
    )
    count = await session.scalar(down.with_only_columns(func.count()))
    first = await session.scalars(down.order_by(StationPresence.station_id).limit(UPSTREAM_DOWN_SHOWN))
    return UpstreamDown(int(count or 0), list(first))


@dataclass(frozen=True, slots=True)
class Overview:
    counts: CompanyCounts
    connectors: ConnectorFigures
    days: list[DayEnergy]
    upstream_down: UpstreamDown


async def company_overview(session: AsyncSession, company_id: str, *, now: datetime, local: LocalTime) -> Overview:
    """Every figure of the overview for one company, its days in `local`'s zone: a handful of aggregate
    statements, however many stations."""
    return Overview(
        await company_counts(session, company_id),
        await connector_figures(session, company_id),
        await energy_per_day(session, company_id, now=now, local=local),
        await upstream_links_down(session, company_id),
    )
