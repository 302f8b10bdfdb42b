"""The meter worker follows the configuration: new, changed, disabled and malformed meters."""

from __future__ import annotations

import asyncio

from chargenet.clock import ManualClock
from chargenet.meters.runtime import MeterPolling
from chargenet.meters.spec import ThresholdSettings
from chargenet.outbox import Outbox
from chargenet.services import meters as meter_service
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from tests.factories import Tenant
from tests.integration.meters.helpers import add_meter, start_polling
from tests.support.processes import eventually


async def test_reload_follows_changes_and_disabling_stops_the_bus(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    meter_id = await add_meter(store, clock, tenant, tcp="127.0.0.1:1")
    polling = await start_polling(store, clock)
    [poller] = polling.pollers.values()
    assert poller.targets[meter_id].poll_interval_s == 5
    clock.advance(1)
    async with store.transaction() as session:
        await meter_service.update_meter(
            session, OPERATOR, meter_id, now=clock.now(), poll_interval=10, thresholds=ThresholdSettings(stop_grace=300)
        )
    await polling.reload()
    assert poller.targets[meter_id].poll_interval_s == 10
    assert polling.sessions.meters[meter_id].spec.thresholds.stop_grace_s == 300
    clock.advance(1)
    async with store.transaction() as session:
        await meter_service.update_meter(session, OPERATOR, meter_id, now=clock.now(), enabled=False)
    await polling.reload()
    assert polling.pollers == {} and polling.sessions.meters == {}


async def test_worker_runs_pollers_until_asked_to_stop(store: Store, clock: ManualClock, tenant: Tenant) -> None:
    await add_meter(store, clock, tenant, tcp="127.0.0.1:1")
    polling = MeterPolling(store, Outbox(clock), clock)
    stopping = asyncio.Event()
    worker = asyncio.create_task(polling.run(stopping))
    await eventually(lambda: bool(polling.buses) and all(bus.task is not None for bus in polling.buses.values()))
    [bus] = polling.buses.values()
    # A read is counted when it starts and its error when it fails: wait for the failure.
    await eventually(lambda: bool(bus.poller.health.errors))
    assert bus.poller.health.meters and bus.poller.health.errors == bus.poller.health.reads >= 1
    stopping.set()
    await asyncio.wait_for(worker, 5)
    assert polling.buses == {}
