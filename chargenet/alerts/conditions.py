"""What each kind of rule watches, read from the store: the subjects of a company whose condition holds now, each
with since when where the store knows it.

Only subjects whose condition holds are returned; a tracked alert whose subject is missing here has ended.
A meter counts as silent once it has not answered for `SILENT_AFTER`, so a meter answering every second does not
start (and move) a pending alert on every round.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.alerts import Holding, RuleKind
from chargenet.store.models import (
    ChargePoint,
    Connector,
    Meter,
    MeterPollHealth,
    Site,
    Station,
    StationPresence,
    Webhook,
    WebhookLane,
)
from chargenet.webhooks import health

SILENT_AFTER = timedelta(minutes=1)
FAULTED = "Faulted"


@dataclass(frozen=True, slots=True)
class Observed:
    subject: str  # as the console and the mail name it
    holding: Holding


Conditions = dict[str, Observed]  # by subject id
Reader = Callable[[AsyncSession, str, datetime], Awaitable[Conditions]]


async def stations_offline(session: AsyncSession, company_id: str, now: datetime) -> Conditions:
    """Stations that were connected once and are not now, since their disconnection."""
    rows = await session.execute(
        select(StationPresence.station_id, StationPresence.disconnected_at, Site.name)
        .join(Station, Station.id == StationPresence.station_id)
        .join(Site, Site.id == Station.site_id)
        .where(
            Site.company_id == company_id,
            StationPresence.connected.is_(False),
            StationPresence.connected_at.is_not(None),
        )
    )
    return {station: Observed(f"station {station} at {site}", Holding(since)) for station, since, site in rows}


async def connectors_faulted(session: AsyncSession, company_id: str, now: datetime) -> Conditions:
    rows = await session.execute(
        select(Connector.charge_point_id, Connector.connector_id, Connector.status_at, Connector.updated_at)
        .join(ChargePoint, ChargePoint.id == Connector.charge_point_id)
        .join(Site, Site.id == ChargePoint.site_id)
        .where(Site.company_id == company_id, Connector.status == FAULTED)
    )
    return {
        f"{charge_point}/{connector}": Observed(
            f"connector {connector} of {charge_point}", Holding(changed or reported)
        )
        for charge_point, connector, reported, changed in rows
    }


def _lane_unhealthy() -> object:
    # The lanes the webhook pages show in alert or worse (services/webhook_lanes.py `lane_at`), judged alike.
    return or_(
        WebhookLane.size > health.QUEUE_SIZE_ALERT,
        WebhookLane.last_request_ms > health.REQUEST_DURATION_ALERT_MS,
        WebhookLane.consecutive_failures > 0,
        WebhookLane.head_attempts > 0,
    )


async def webhook_lanes_unhealthy(session: AsyncSession, company_id: str, now: datetime) -> Conditions:
    """Lanes of enabled webhooks in alert or critical; the store does not say since when, so first seen counts."""
    rows = await session.execute(
        select(WebhookLane.id, WebhookLane.event_type, Webhook.url)
        .join(Webhook, Webhook.id == WebhookLane.webhook_id)
        .join(Site, Site.id == Webhook.site_id)
        .where(Site.company_id == company_id, Webhook.enabled.is_(True), _lane_unhealthy())  # type: ignore[arg-type]
    )
    return {
        f"lane {lane}": Observed(f"webhook lane {event_type} of {url}", Holding()) for lane, event_type, url in rows
    }


async def upstream_links_down(session: AsyncSession, company_id: str, now: datetime) -> Conditions:
    """Connected stations whose link to their site's upstream is down; first seen counts."""
    rows = await session.execute(
        select(StationPresence.station_id)
        .join(Station, Station.id == StationPresence.station_id)
        .join(Site, Site.id == Station.site_id)
        .where(
            Site.company_id == company_id,
            StationPresence.connected.is_(True),
            StationPresence.upstream_connected.is_(False),
        )
    )
    return {station: Observed(f"upstream link of station {station}", Holding()) for station in rows.scalars()}


async def meters_silent(session: AsyncSession, company_id: str, now: datetime) -> Conditions:
    """Meters that have not answered for SILENT_AFTER, since their last answer (first seen if they never did)."""
    rows = await session.execute(
        select(MeterPollHealth.meter_id, MeterPollHealth.last_answer_at, Meter.station_id)
        .join(Meter, Meter.id == MeterPollHealth.meter_id)
        .join(Site, Site.id == Meter.site_id)
        .where(
            Site.company_id == company_id,
            or_(MeterPollHealth.last_answer_at.is_(None), MeterPollHealth.last_answer_at <= now - SILENT_AFTER),
        )
    )
    return {meter: Observed(f"meter {meter} of station {station}", Holding(last)) for meter, last, station in rows}


READERS: dict[RuleKind, Reader] = {
    RuleKind.STATION_OFFLINE: stations_offline,
    RuleKind.CONNECTOR_FAULTED: connectors_faulted,
    RuleKind.WEBHOOK_LANE_UNHEALTHY: webhook_lanes_unhealthy,
    RuleKind.UPSTREAM_DOWN: upstream_links_down,
    RuleKind.METER_SILENT: meters_silent,
}
