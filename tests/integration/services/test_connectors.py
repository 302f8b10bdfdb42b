from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from chargenet.clock import ManualClock
from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus
from chargenet.edge.statuses import record_status
from chargenet.errors import InvalidInput
from chargenet.keys import KeyStore
from chargenet.outbox import Outbox
from chargenet.store.db import Store
from chargenet.store.models import Connector, OutboxEvent
from tests.factories import make_tenant


async def report(store: Store, clock: ManualClock, status: ConnectorStatus, connector: int = 1, **kw: object) -> bool:
    async with store.transaction() as session:
        outcome = await record_status(
            session,
            Outbox(clock),
            station_id=kw.pop("station_id", "ST-1"),  # type: ignore[arg-type]
            ocpp_connector_id=connector,
            status=status,
            error_code=kw.pop("error_code", ChargePointErrorCode.NO_ERROR),  # type: ignore[arg-type]
            timestamp=kw.pop("timestamp", clock.now()),  # type: ignore[arg-type]
            now=clock.now(),
        )
    return outcome.event is not None


async def events(store: Store) -> int:
    async with store.transaction() as session:
        return int(await session.scalar(select(func.count()).select_from(OutboxEvent)) or 0)


async def test_status_changes_raise_events_and_repeats_do_not(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    await make_tenant(store, KeyStore(tmp_path), clock.now())
    assert await report(store, clock, ConnectorStatus.AVAILABLE)
    clock.advance(5)
    assert not await report(store, clock, ConnectorStatus.AVAILABLE)
    clock.advance(5)
    assert await report(store, clock, ConnectorStatus.PREPARING)
    assert await events(store) == 2


async def test_last_known_status_survives_a_new_store_connection(
    database_url: str, clock: ManualClock, tmp_path: Path
) -> None:
    from chargenet.store import schema

    first = Store(database_url)
    await schema.prepare_schema(first)
    await make_tenant(first, KeyStore(tmp_path), clock.now())
    await report(first, clock, ConnectorStatus.CHARGING)
    await first.dispose()
    second = Store(database_url)
    try:
        clock.advance(60)
        assert not await report(second, clock, ConnectorStatus.CHARGING)
    finally:
        await second.dispose()


async def test_an_older_status_is_kept_out_of_the_current_one(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    await make_tenant(store, KeyStore(tmp_path), clock.now())
    await report(store, clock, ConnectorStatus.CHARGING)
    assert not await report(store, clock, ConnectorStatus.AVAILABLE, timestamp=clock.now() - timedelta(minutes=1))
    async with store.transaction() as session:
        row = await session.get(Connector, ("ST-1", 1))
        assert row is not None and row.status == "Charging"


async def test_multi_charge_point_station_reports_on_the_mapped_connector(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    await make_tenant(store, KeyStore(tmp_path), clock.now(), station_id="ST-9", charge_points=2, connectors=2)
    async with store.transaction() as session:
        outcome = await record_status(
            session,
            Outbox(clock),
            station_id="ST-9",
            ocpp_connector_id=3,
            status=ConnectorStatus.FAULTED,
            error_code=ChargePointErrorCode.GROUND_FAILURE,
            timestamp=clock.now(),
            now=clock.now(),
        )
    assert outcome.event is not None
    assert (outcome.event.payload.chargePointId, outcome.event.payload.connectorId) == ("ST-9-2", 1)


async def test_a_connector_the_station_cannot_have_is_refused(store: Store, clock: ManualClock, tmp_path: Path) -> None:
    await make_tenant(store, KeyStore(tmp_path), clock.now())
    with pytest.raises(InvalidInput):
        await report(store, clock, ConnectorStatus.AVAILABLE, connector=17)
    assert await events(store) == 0
