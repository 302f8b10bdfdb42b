"""What each kind of rule watches, on both stores: the condition of a company's own subject raises the rule's
alert once it has held for the threshold, and the same condition in another company raises nothing for it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from chargenet.alerts.evaluator import AlertEvaluator
from chargenet.clock import ManualClock
from chargenet.keys import KeyStore
from chargenet.services import meters
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import Alert, ChargePoint, Connector, MeterPollHealth, StationPresence, WebhookLane
from tests.factories import Tenant, add_webhook, make_tenant
from tests.integration.alerts.conftest import add_rule, set_presence


async def raised(store: Store, clock: ManualClock, rule_id: str) -> list[str]:
    """The subjects of the rule's raised alerts after one round of the evaluator, five minutes on."""
    clock.advance(5 * 60)
    await AlertEvaluator(store, clock).run_once()
    async with store.read() as session:
        found = await session.scalars(
            select(Alert.subject).where(Alert.rule_id == rule_id, Alert.raised_at.is_not(None)).order_by(Alert.id)
        )
        return list(found)


async def two_companies(store: Store, keys: KeyStore, now: datetime) -> tuple[Tenant, Tenant]:
    return (
        await make_tenant(store, keys, now, station_id="ST-1"),
        await make_tenant(store, keys, now, station_id="ST-2"),
    )


async def fault(store: Store, station_id: str, at: datetime) -> None:
    async with store.transaction() as session:
        charge_point = await session.scalar(select(ChargePoint.id).where(ChargePoint.station_id == station_id))
        assert charge_point is not None
        row = await session.get(Connector, (charge_point, 1))
        if row is None:  # a station whose connectors were not declared has them from its first status
            row = Connector(charge_point_id=charge_point, connector_id=1)
            session.add(row)
        row.status, row.status_at, row.updated_at = "Faulted", at, at


async def test_a_connector_faulted_past_the_threshold_raises_its_alert(
    store: Store, keys: KeyStore, clock: ManualClock
) -> None:
    ours, _ = await two_companies(store, keys, clock.now())
    rule_id = await add_rule(store, ours.company_id, clock.now(), kind="connector_faulted", minutes=5)
    await fault(store, "ST-1", clock.now())
    await fault(store, "ST-2", clock.now())
    (subject,) = await raised(store, clock, rule_id)
    assert subject.startswith("connector 1 of ") and "ST-2" not in subject


async def test_an_upstream_link_down_is_raised_once_seen_down_for_the_threshold(
    store: Store, keys: KeyStore, clock: ManualClock
) -> None:
    ours, _ = await two_companies(store, keys, clock.now())
    rule_id = await add_rule(store, ours.company_id, clock.now(), kind="upstream_down", minutes=5)
    for station in ("ST-1", "ST-2"):
        await set_presence(store, station, connected=True, at=clock.now())
        async with store.transaction() as session:
            row = await session.get(StationPresence, station)
            assert row is not None
            row.upstream_connected = False
    await AlertEvaluator(store, clock).run_once()  # first seen: the store does not say since when
    assert await raised(store, clock, rule_id) == ["upstream link of station ST-1"]


async def test_a_meter_silent_past_the_threshold_raises_its_alert(
    store: Store, keys: KeyStore, clock: ManualClock
) -> None:
    ours, theirs = await two_companies(store, keys, clock.now())
    rule_id = await add_rule(store, ours.company_id, clock.now(), kind="meter_silent", minutes=5)
    for unit, tenant in enumerate((ours, theirs), start=1):
        async with store.transaction() as session:
            meter = await meters.create_meter(
                session,
                OPERATOR,
                site_id=tenant.site_id,
                station_id=tenant.station_id,
                profile="sdm630",
                unit_id=unit,
                tcp="192.0.2.7:502",
                now=clock.now(),
            )
            session.add(
                MeterPollHealth(
                    meter_id=meter.id,
                    bus_key="tcp:192.0.2.7:502",
                    owner="process-1",
                    reads=10,
                    errors=3,
                    timeouts=3,
                    crc_errors=0,
                    last_answer_at=clock.now(),
                    dead=True,
                    updated_at=clock.now(),
                )
            )
    (subject,) = await raised(store, clock, rule_id)
    assert subject.endswith("of station ST-1")


async def test_a_webhook_lane_in_alert_is_raised_once_seen_so_for_the_threshold(
    store: Store, keys: KeyStore, clock: ManualClock
) -> None:
    ours, theirs = await two_companies(store, keys, clock.now())
    rule_id = await add_rule(store, ours.company_id, clock.now(), kind="webhook_lane_unhealthy", minutes=5)
    for tenant in (ours, theirs):
        hook = await add_webhook(store.transaction, keys.credential_cipher(), tenant.site_id, clock.now())
        async with store.transaction() as session:
            lane = await session.scalar(select(WebhookLane).where(WebhookLane.webhook_id == hook.id))
            if lane is None:
                lane = WebhookLane(webhook_id=hook.id, event_type="Authorize")
                session.add(lane)
            lane.size, lane.consecutive_failures = 7, 2
    await AlertEvaluator(store, clock).run_once()
    assert await raised(store, clock, rule_id) == ["webhook lane Authorize of http://127.0.0.1:9/hook"]
