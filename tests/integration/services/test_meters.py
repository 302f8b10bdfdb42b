from __future__ import annotations

from pathlib import Path

import pytest

from chargenet.clock import ManualClock
from chargenet.domain.events import StopReason
from chargenet.errors import Conflict, InvalidInput, NotFound
from chargenet.keys import KeyStore
from chargenet.meters import records as meter_sessions
from chargenet.meters.spec import MeterSpec, ThresholdSettings
from chargenet.outbox import Outbox
from chargenet.services import grid_meters, meters
from chargenet.services.callers import OPERATOR
from chargenet.services.views import rendered
from chargenet.store.db import Store
from chargenet.store.models import Meter, MeterSession
from tests.factories import Tenant, make_tenant
from tests.integration.meters.helpers import payloads


@pytest.fixture
async def tenant(store: Store, clock: ManualClock, tmp_path: Path) -> Tenant:
    return await make_tenant(store, KeyStore(tmp_path / "keys"), clock.now(), charge_points=2, connectors=2)


async def create(store: Store, clock: ManualClock, tenant: Tenant, **options: object) -> meters.MeterView:
    values: dict[str, object] = {"profile": "sdm630", "unit_id": 1, "tcp": "10.0.0.5"}
    values.update(options)
    async with store.transaction() as session:
        return await meters.create_meter(
            session,
            OPERATOR,
            site_id=tenant.site_id,
            station_id=tenant.station_id,
            now=clock.now(),
            **values,  # type: ignore[arg-type]
        )


async def spec_of(store: Store, meter_id: str) -> MeterSpec:
    """The configuration the poller runs for the meter, as the store holds it."""
    async with store.read() as session:
        row = await session.get(Meter, meter_id)
        assert row is not None
        return meter_sessions.spec_of(row)


async def start_session(store: Store, clock: ManualClock, meter_id: str, *, meter_start_wh: int) -> int:
    """The transaction id of a session started now on the meter, in a transaction of its own."""
    spec = await spec_of(store, meter_id)
    async with store.transaction() as session:
        return await meter_sessions.start_session(
            session, Outbox(clock), spec, meter_start_wh=meter_start_wh, started_at=clock.now(), at=clock.now()
        )


async def test_meter_defaults_to_the_first_charge_point_connector_one(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    view = await create(store, clock, tenant)
    document = rendered(view)
    assert (document["chargePointId"], document["connectorId"]) == (f"{tenant.station_id}-1", 1)
    assert document["transport"] == {"type": "tcp", "host": "10.0.0.5", "port": 502}
    assert document["idTag"] == f"METER-{view.id}"
    assert (document["pollInterval"], document["stopGrace"], document["outageClose"]) == (5, 180, 900)


async def test_meter_shows_idle_with_no_reading_before_its_first_poll(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    view = await create(store, clock, tenant)
    async with store.transaction() as session:
        shown = rendered(await meters.get_meter(session, OPERATOR, view.id))
    assert shown["status"] == {"charging": False, "transactionId": None, "lastReading": None}


async def test_unknown_station_is_not_found(store: Store, clock: ManualClock, tenant: Tenant) -> None:
    with pytest.raises(NotFound):
        async with store.transaction() as session:
            await meters.create_meter(
                session,
                OPERATOR,
                site_id=tenant.site_id,
                station_id="NOPE",
                profile="sdm630",
                unit_id=1,
                tcp="h",
                now=clock.now(),
            )


async def test_charge_point_of_another_station_is_not_found(store: Store, clock: ManualClock, tenant: Tenant) -> None:
    # An object named in the request that does not exist as named: not found, as an id in an API path is.
    with pytest.raises(NotFound):
        await create(store, clock, tenant, charge_point_id="ELSEWHERE")


async def test_connector_beyond_the_charge_point_is_not_found(store: Store, clock: ManualClock, tenant: Tenant) -> None:
    with pytest.raises(NotFound):
        await create(store, clock, tenant, connector_id=3)


async def test_second_meter_on_the_same_connector_is_a_conflict(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    await create(store, clock, tenant)
    with pytest.raises(Conflict):
        await create(store, clock, tenant, unit_id=2)


async def test_same_unit_on_the_same_bus_is_a_conflict(store: Store, clock: ManualClock, tenant: Tenant) -> None:
    await create(store, clock, tenant, tcp=None, rtu="/dev/ttyUSB0")
    with pytest.raises(Conflict):
        await create(store, clock, tenant, tcp=None, rtu="/dev/ttyUSB0", connector_id=2)
    await create(store, clock, tenant, tcp=None, rtu="/dev/ttyUSB0", connector_id=2, unit_id=2)


async def test_a_session_meter_and_a_grid_meter_never_share_a_bus_address(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    async with store.transaction() as session:
        grid = await grid_meters.create_grid_meter(
            session, OPERATOR, site_id=tenant.site_id, profile="sdm630", unit_id=1, tcp="10.0.0.5", now=clock.now()
        )
    with pytest.raises(Conflict, match=grid.id):
        await create(store, clock, tenant)
    await create(store, clock, tenant, unit_id=2)
    with pytest.raises(Conflict):
        async with store.transaction() as session:
            await grid_meters.create_grid_meter(
                session, OPERATOR, site_id=tenant.site_id, profile="sdm630", unit_id=2, tcp="10.0.0.5", now=clock.now()
            )


async def test_update_changes_thresholds_and_keeps_the_rest(store: Store, clock: ManualClock, tenant: Tenant) -> None:
    view = await create(store, clock, tenant, id_tag="FLEET-7")
    async with store.transaction() as session:
        updated = await meters.update_meter(
            session, OPERATOR, view.id, now=clock.now(), thresholds=ThresholdSettings(stop_grace=360), enabled=False
        )
    document = rendered(updated)
    assert (document["stopGrace"], document["idTag"], document["enabled"]) == (360, "FLEET-7", False)


async def test_update_refuses_inconsistent_thresholds(store: Store, clock: ManualClock, tenant: Tenant) -> None:
    view = await create(store, clock, tenant)
    with pytest.raises(InvalidInput) as raised:
        async with store.transaction() as session:
            await meters.update_meter(
                session, OPERATOR, view.id, now=clock.now(), thresholds=ThresholdSettings(stop_current=5)
            )
    assert raised.value.field == "stop-current"


async def test_delete_closes_an_open_session_and_keeps_it_as_a_transaction(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    view = await create(store, clock, tenant)
    transaction_id = await start_session(store, clock, view.id, meter_start_wh=1000)
    async with store.transaction() as session:
        await meters.delete_meter(session, OPERATOR, Outbox(clock), view.id, now=clock.now())
    async with store.transaction() as session:
        row = await session.get(MeterSession, transaction_id)
        assert row is not None and row.meter_id is None and row.reason == "Other"
    assert [kind for kind, _ in await payloads(store)] == ["StartTransaction", "StopTransaction"]


async def test_transaction_ids_increase_across_meters(store: Store, clock: ManualClock, tenant: Tenant) -> None:
    first = await create(store, clock, tenant)
    second = await create(store, clock, tenant, connector_id=2, unit_id=2)
    ids = []
    for view in (first, second, first):
        async with store.transaction() as session:
            open_session = await meter_sessions.open_session_of(session, view.id)
            if open_session is not None:
                await meter_sessions.stop_session(
                    session,
                    Outbox(clock),
                    open_session.transaction_id,
                    meter_stop_wh=1,
                    reason=StopReason.OTHER,
                    at=clock.now(),
                )
            spec = await spec_of(store, view.id)
            ids.append(
                await meter_sessions.start_session(
                    session, Outbox(clock), spec, meter_start_wh=1, started_at=clock.now(), at=clock.now()
                )
            )
    assert ids == [1, 2, 3]


async def test_stopping_a_closed_session_again_raises_no_second_event(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    view = await create(store, clock, tenant)
    transaction_id = await start_session(store, clock, view.id, meter_start_wh=1)
    for expected in (True, False):
        async with store.transaction() as session:
            stopped = await meter_sessions.stop_session(
                session, Outbox(clock), transaction_id, meter_stop_wh=5, reason=StopReason.OTHER, at=clock.now()
            )
        assert stopped is expected
    assert len(await payloads(store)) == 2
