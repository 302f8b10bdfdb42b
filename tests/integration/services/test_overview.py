"""The overview's figures: each counts the company's own objects only, on both backends."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select, text, update

from chargenet.clock import ManualClock
from chargenet.domain.local_time import LocalTime
from chargenet.keys import KeyStore
from chargenet.services import applications, meters, webhooks
from chargenet.services.callers import OPERATOR
from chargenet.services.overview import (
    CompanyCounts,
    company_counts,
    connector_figures,
    energy_per_day,
    upstream_links_down,
)
from chargenet.store.db import Store
from chargenet.store.models import (
    Connector,
    EdgeTransaction,
    MeterSample,
    MeterSession,
    StationPresence,
    WebhookLane,
)
from tests.factories import Tenant, add_webhook, make_tenant

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
UTC_DAYS = LocalTime(ZoneInfo("UTC"))
BRUSSELS = LocalTime(ZoneInfo("Europe/Brussels"))


@pytest.fixture
def keys(tmp_path: Path) -> KeyStore:
    made = KeyStore(tmp_path / "keys")
    made.ensure()
    return made


async def _tenants(store: Store, keys: KeyStore, connectors: int = 1) -> tuple[Tenant, Tenant]:
    ours = await make_tenant(store, keys, NOW, station_id="ST-OURS", connectors=connectors)
    theirs = await make_tenant(store, keys, NOW, station_id="ST-THEIRS", connectors=connectors)
    return ours, theirs


async def _connect(store: Store, *station_ids: str) -> None:
    async with store.transaction() as session:
        for station_id in station_ids:
            session.add(StationPresence(station_id=station_id, connected=True, connected_at=NOW))


async def _report(store: Store, station_id: str, connector_id: int, status: str, error_code: str = "NoError") -> None:
    async with store.transaction() as session:
        await session.execute(
            update(Connector)
            .where(Connector.charge_point_id == station_id, Connector.connector_id == connector_id)
            .values(status=status, error_code=error_code, status_at=NOW, updated_at=NOW)
        )


def _transaction(
    tenant: Tenant, transaction_id: int, started_at: datetime, wh: int | None, *, stopped: bool = True
) -> EdgeTransaction:
    return EdgeTransaction(
        id=transaction_id,
        station_id=tenant.station_id,
        site_id=tenant.site_id,
        charge_point_id=tenant.station_id,
        connector_id=1,
        ocpp_connector_id=1,
        id_tag=f"TAG-{transaction_id}",
        started_at=started_at,
        meter_start=1000,
        stopped_at=started_at + timedelta(hours=1) if stopped else None,
        meter_stop=1000 + wh if stopped and wh is not None else None,
        created_at=started_at,
    )


def _meter_session(
    tenant: Tenant, transaction_id: int, started_at: datetime, wh: int, *, stopped: bool = True
) -> MeterSession:
    return MeterSession(
        transaction_id=transaction_id,
        site_id=tenant.site_id,
        station_id=tenant.station_id,
        charge_point_id=tenant.station_id,
        connector_id=1,
        id_tag="METER",
        meter_start_wh=50_000,
        started_at=started_at,
        last_charging_wh=50_000 + wh,
        last_charging_at=started_at + timedelta(minutes=30),
        meter_stop_wh=50_000 + wh if stopped else None,
        stopped_at=started_at + timedelta(hours=1) if stopped else None,
    )


async def test_each_count_covers_the_companys_own_objects(store: Store, clock: ManualClock, keys: KeyStore) -> None:
    ours, theirs = await _tenants(store, keys)
    for tenant in (ours, theirs):
        for enabled in (True, False):
            view = await add_webhook(store.transaction, keys.credential_cipher(), tenant.site_id, clock.now())
            if not enabled:
                async with store.transaction() as session:
                    await webhooks.set_enabled(session, OPERATOR, view.id, False, now=clock.now())
    async with store.transaction() as session:
        for tenant in (ours, theirs):
            await applications.create_application(
                session, OPERATOR, keys.secret_hasher(), company_id=tenant.company_id, name="App", now=clock.now()
            )
            session.add(_transaction(tenant, 100 if tenant is ours else 200, NOW, None, stopped=False))
    await _connect(store, "ST-OURS", "ST-THEIRS")
    async with store.read() as session:
        counted = await company_counts(session, ours.company_id)
    assert counted == CompanyCounts(
        sites=1,
        stations=1,
        connected_stations=1,
        applications=1,
        webhooks=2,
        enabled_webhooks=1,
        active_transactions=1,
        active_meter_sessions=0,
        active_meter_energy_wh=0,
        active_ocpp_energy_wh=0,
        lanes_alert=0,
        lanes_critical=0,
        meter_stations=0,
    )


def test_the_online_share_rounds_down() -> None:
    counts = CompanyCounts(3, 3, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    assert counts.online_percent == 66
    assert CompanyCounts(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0).online_percent is None


def test_stations_known_only_through_meters_are_neither_online_nor_offline() -> None:
    counts = CompanyCounts(1, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, meter_stations=1)
    assert (counts.offline_stations, counts.online_percent) == (1, 50)


async def test_a_station_with_meters_and_no_ocpp_link_is_counted_apart(store: Store, keys: KeyStore) -> None:
    ours, theirs = await _tenants(store, keys)
    async with store.transaction() as session:
        for tenant, station_id, port in ((ours, "ST-OURS", 1502), (theirs, "ST-THEIRS", 1503)):
            await meters.create_meter(
                session,
                OPERATOR,
                site_id=tenant.site_id,
                station_id=station_id,
                profile="sdm630",
                unit_id=1,
                tcp=f"127.0.0.1:{port}",
                now=NOW,
            )
    async with store.read() as session:
        counted = await company_counts(session, ours.company_id)
    assert (counted.stations, counted.meter_stations, counted.offline_stations) == (1, 1, 0)


async def test_a_station_with_meters_that_once_connected_over_ocpp_counts_as_offline(
    store: Store, keys: KeyStore
) -> None:
    ours, _ = await _tenants(store, keys)
    async with store.transaction() as session:
        await meters.create_meter(
            session,
            OPERATOR,
            site_id=ours.site_id,
            station_id="ST-OURS",
            profile="sdm630",
            unit_id=1,
            tcp="127.0.0.1:1502",
            now=NOW,
        )
        session.add(StationPresence(station_id="ST-OURS", connected=False, disconnected_at=NOW))
    async with store.read() as session:
        counted = await company_counts(session, ours.company_id)
    assert (counted.meter_stations, counted.offline_stations) == (0, 1)


async def test_a_connector_of_a_station_not_connected_counts_as_offline_whatever_it_reported(
    store: Store, keys: KeyStore
) -> None:
    ours, _ = await _tenants(store, keys, connectors=2)
    await make_tenant(store, keys, NOW, station_id="ST-AWAY", connectors=2)
    await _report(store, "ST-OURS", 1, "Charging")
    await _report(store, "ST-AWAY", 1, "Charging")
    await _report(store, "ST-THEIRS", 1, "Charging")
    await _connect(store, "ST-OURS", "ST-THEIRS")
    async with store.read() as session:
        figures = await connector_figures(session, ours.company_id)
    assert figures.by_status == [("Charging", 1), ("Not reported", 1)]


async def test_connectors_of_a_station_with_no_presence_are_offline(store: Store, keys: KeyStore) -> None:
    ours, _ = await _tenants(store, keys, connectors=2)
    await _report(store, "ST-OURS", 1, "Available")
    async with store.read() as session:
        figures = await connector_figures(session, ours.company_id)
    assert figures.by_status == [("Offline", 2)] and figures.total == 2


async def test_faulted_connectors_are_counted_by_error_code_on_connected_stations_only(
    store: Store, keys: KeyStore
) -> None:
    ours, _ = await _tenants(store, keys, connectors=3)
    for connector_id, code in ((1, "GroundFailure"), (2, "GroundFailure"), (3, "HighTemperature")):
        await _report(store, "ST-OURS", connector_id, "Faulted", code)
        await _report(store, "ST-THEIRS", connector_id, "Faulted", "ReaderFailure")
    await _connect(store, "ST-OURS", "ST-THEIRS")
    async with store.read() as session:
        figures = await connector_figures(session, ours.company_id)
    assert figures.faults == [("GroundFailure", 2), ("HighTemperature", 1)] and figures.faulted == 3


async def test_a_faulted_connector_of_an_offline_station_is_not_counted_faulted(store: Store, keys: KeyStore) -> None:
    ours, _ = await _tenants(store, keys)
    await _report(store, "ST-OURS", 1, "Faulted", "GroundFailure")
    async with store.read() as session:
        figures = await connector_figures(session, ours.company_id)
    assert figures.faults == [] and figures.by_status == [("Offline", 1)]


async def test_sessions_in_progress_count_both_kinds_with_the_meters_energy_so_far(
    store: Store, keys: KeyStore
) -> None:
    ours, theirs = await _tenants(store, keys)
    async with store.transaction() as session:
        session.add(_transaction(ours, 1, NOW, None, stopped=False))
        session.add(_transaction(ours, 2, NOW, 5000))  # completed: not in progress
        session.add(_meter_session(ours, 3, NOW, 2500, stopped=False))
        session.add(_meter_session(ours, 4, NOW, 700, stopped=False))
        session.add(_meter_session(theirs, 5, NOW, 9999, stopped=False))
    async with store.read() as session:
        counted = await company_counts(session, ours.company_id)
    assert (counted.active_transactions, counted.active_meter_sessions, counted.active_meter_energy_wh) == (1, 2, 3200)
    assert counted.active_sessions == 3


async def test_ocpp_sessions_in_progress_count_their_energy_as_of_their_newest_meter_value(
    store: Store, keys: KeyStore
) -> None:
    ours, theirs = await _tenants(store, keys)
    async with store.transaction() as session:
        session.add(_transaction(ours, 1, NOW, None, stopped=False))  # meter_start 1000
        session.add(_transaction(ours, 2, NOW, None, stopped=False))  # no meter value yet: nothing so far
        session.add(_transaction(theirs, 3, NOW, None, stopped=False))
        await session.flush()
        for transaction_id, station_id, minutes, wh in (
            (1, "ST-OURS", 1, 1500),
            (1, "ST-OURS", 2, 2750),
            (3, "ST-THEIRS", 1, 9000),
        ):
            session.add(
                MeterSample(
                    transaction_id=transaction_id,
                    station_id=station_id,
                    at=NOW + timedelta(minutes=minutes),
                    energy_wh=wh,
                )
            )
    async with store.read() as session:
        counted = await company_counts(session, ours.company_id)
    assert (counted.active_ocpp_energy_wh, counted.active_energy_wh) == (1750, 1750)


async def test_energy_per_day_sums_completed_sessions_of_both_kinds_by_the_day_they_started(
    store: Store, keys: KeyStore
) -> None:
    ours, _ = await _tenants(store, keys)
    async with store.transaction() as session:
        session.add(_transaction(ours, 1, datetime(2026, 7, 1, 1, 0, tzinfo=UTC), 4000))
        session.add(_meter_session(ours, 2, datetime(2026, 7, 1, 9, 30, tzinfo=UTC), 1500))
        session.add(_transaction(ours, 3, datetime(2026, 6, 29, 0, 0, tzinfo=UTC), 12_345))
    async with store.read() as session:
        days = await energy_per_day(session, ours.company_id, now=NOW, local=UTC_DAYS)
    assert len(days) == 30 and days[0].day == date(2026, 6, 2) and days[-1].day == date(2026, 7, 1)
    by_day = {day.day: (day.energy_wh, day.sessions) for day in days if day.sessions}
    assert by_day == {date(2026, 7, 1): (5500, 2), date(2026, 6, 29): (12_345, 1)}


async def test_a_session_running_past_midnight_counts_whole_on_the_day_it_started(store: Store, keys: KeyStore) -> None:
    ours, _ = await _tenants(store, keys)
    async with store.transaction() as session:
        session.add(_transaction(ours, 1, datetime(2026, 6, 30, 23, 30, tzinfo=UTC), 8000))  # stops 00:30
    async with store.read() as session:
        days = await energy_per_day(session, ours.company_id, now=NOW, local=UTC_DAYS)
    assert [(day.day, day.energy_wh) for day in days if day.sessions] == [(date(2026, 6, 30), 8000)]


async def test_energy_per_day_leaves_out_other_companies_running_and_older_sessions(
    store: Store, keys: KeyStore
) -> None:
    ours, theirs = await _tenants(store, keys)
    async with store.transaction() as session:
        session.add(_transaction(theirs, 1, NOW - timedelta(hours=2), 4000))
        session.add(_transaction(ours, 2, NOW - timedelta(hours=2), None, stopped=False))
        session.add(_meter_session(ours, 3, NOW - timedelta(hours=2), 900, stopped=False))
        session.add(_transaction(ours, 4, datetime(2026, 6, 1, 23, 59, tzinfo=UTC), 4000))  # the 31st day back
    async with store.read() as session:
        days = await energy_per_day(session, ours.company_id, now=NOW, local=UTC_DAYS)
    assert sum(day.energy_wh for day in days) == 0 and sum(day.sessions for day in days) == 0


async def test_a_meter_that_went_backwards_counts_a_session_with_no_energy(store: Store, keys: KeyStore) -> None:
    ours, _ = await _tenants(store, keys)
    async with store.transaction() as session:
        session.add(_transaction(ours, 1, NOW - timedelta(hours=3), -500))
    async with store.read() as session:
        days = await energy_per_day(session, ours.company_id, now=NOW, local=UTC_DAYS)
    assert (days[-1].energy_wh, days[-1].sessions) == (0, 1)


async def test_lanes_in_alert_or_critical_are_counted_by_their_worst_level(
    store: Store, clock: ManualClock, keys: KeyStore
) -> None:
    ours, theirs = await _tenants(store, keys)
    for tenant in (ours, theirs):
        await add_webhook(
            store.transaction,
            keys.credential_cipher(),
            tenant.site_id,
            clock.now(),
            event_types=["Authorize", "ChargePointStatus", "StartTransaction", "StopTransaction"],
        )
    async with store.transaction() as session:
        lanes = list(await session.scalars(select(WebhookLane.id).order_by(WebhookLane.id)))
        ours_lanes, theirs_lanes = lanes[:4], lanes[4:]  # ours was created first
        settings = [
            {"size": 6},  # alert: more than 5 waiting
            {"size": 101},  # critical
            {"size": 0, "consecutive_failures": 1},  # alert: attempts fail
            {"size": 5, "last_request_ms": 500.0},  # at the thresholds: ok
        ]
        for lane_id, values in zip(ours_lanes, settings, strict=True):
            await session.execute(update(WebhookLane).where(WebhookLane.id == lane_id).values(**values))
        await session.execute(update(WebhookLane).where(WebhookLane.id.in_(theirs_lanes)).values(size=500))
    async with store.read() as session:
        counted = await company_counts(session, ours.company_id)
    assert (counted.lanes_alert, counted.lanes_critical) == (3, 1)


async def test_upstream_links_down_counts_the_companys_connected_stations_whose_link_is_down(
    store: Store, keys: KeyStore
) -> None:
    ours, _ = await _tenants(store, keys)
    extra = await make_tenant(store, keys, NOW, station_id="ST-OURS-2")
    async with store.transaction() as session:
        for station_id, connected, upstream in (
            ("ST-OURS", True, False),
            ("ST-OURS-2", False, False),  # gone: a station not connected has no link to count
            ("ST-THEIRS", True, False),
        ):
            session.add(
                StationPresence(
                    station_id=station_id, connected=connected, connected_at=NOW, upstream_connected=upstream
                )
            )
    async with store.read() as session:
        down = await upstream_links_down(session, ours.company_id)
        others = await upstream_links_down(session, extra.company_id)
    assert (down.count, down.first) == (1, ["ST-OURS"])
    assert (others.count, others.first) == (0, [])


async def test_days_are_the_readers_days_whatever_time_zone_the_database_connection_has(
    store: Store, keys: KeyStore
) -> None:
    ours, _ = await _tenants(store, keys)
    async with store.transaction() as session:
        session.add(_transaction(ours, 1, datetime(2026, 6, 30, 20, 0, tzinfo=UTC), 3000))  # 30 June in UTC
    async with store.read() as session:
        if session.bind.dialect.name == "postgresql":
            await session.execute(text("SET LOCAL TIME ZONE 'Asia/Tokyo'"))  # already 1 July there
        days = await energy_per_day(session, ours.company_id, now=NOW, local=UTC_DAYS)
    assert [(day.day, day.energy_wh) for day in days if day.sessions] == [(date(2026, 6, 30), 3000)]


async def test_days_are_brussels_days_for_a_reader_in_brussels(store: Store, keys: KeyStore) -> None:
    ours, _ = await _tenants(store, keys)
    async with store.transaction() as session:
        # 23:30 UTC on 30 June is 01:30 on 1 July in Brussels (+02:00): the energy counts on 1 July there.
        session.add(_transaction(ours, 1, datetime(2026, 6, 30, 23, 30, tzinfo=UTC), 2000))
    async with store.read() as session:
        days = await energy_per_day(session, ours.company_id, now=NOW, local=BRUSSELS)
    assert [(day.day, day.energy_wh) for day in days if day.sessions] == [(date(2026, 7, 1), 2000)]


async def test_the_day_clocks_go_back_is_25_hours_and_counts_every_session_of_it(store: Store, keys: KeyStore) -> None:
    ours, _ = await _tenants(store, keys)
    autumn = datetime(2026, 10, 26, 12, 0, tzinfo=UTC)
    async with store.transaction() as session:
        # 25 October in Brussels runs from 22:00 UTC on the 24th to 23:00 UTC on the 25th: 25 hours.
        session.add(_transaction(ours, 1, datetime(2026, 10, 24, 22, 0, tzinfo=UTC), 1000))  # 00:00 +02:00
        session.add(_transaction(ours, 2, datetime(2026, 10, 25, 22, 59, tzinfo=UTC), 2000))  # 23:59 +01:00
        session.add(_transaction(ours, 3, datetime(2026, 10, 25, 23, 0, tzinfo=UTC), 4000))  # 26 Oct, 00:00
    async with store.read() as session:
        days = await energy_per_day(session, ours.company_id, now=autumn, local=BRUSSELS)
    by_day = {day.day: (day.energy_wh, day.sessions) for day in days if day.sessions}
    assert by_day == {date(2026, 10, 25): (3000, 2), date(2026, 10, 26): (4000, 1)}
    assert days[-2].until - days[-2].since == timedelta(hours=25)
