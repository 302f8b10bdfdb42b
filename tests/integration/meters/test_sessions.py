"""Sessions detected end to end: simulated meters on pymodbus's real TCP server, the pollers, the detector, the
store and the outbox, on SQLite and PostgreSQL, with time from a ManualClock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from chargenet.clock import ManualClock
from chargenet.keys import KeyStore
from chargenet.meters.profiles import get_profile
from chargenet.meters.runtime import MeterPolling
from chargenet.outbox import Outbox
from chargenet.services import meters as meter_service
from chargenet.services.callers import OPERATOR
from chargenet.simulators.meter import MeterServer, SimulatedMeter
from chargenet.store.db import Store
from chargenet.store.models import Meter
from tests.factories import Tenant, make_tenant
from tests.integration.meters.helpers import payloads, poll


@pytest.fixture
async def tenant(store: Store, clock: ManualClock, tmp_path: Path) -> Tenant:
    return await make_tenant(store, KeyStore(tmp_path / "keys"), clock.now())


@pytest.fixture
async def meter(clock: ManualClock) -> AsyncIterator[tuple[SimulatedMeter, MeterServer]]:
    simulated = SimulatedMeter(get_profile("sdm630"), unit_id=1, energy_wh=1_000_000)
    simulated.advance(clock.now())
    server = await MeterServer.tcp([simulated], clock)
    yield simulated, server
    await server.stop()


async def configure(store: Store, clock: ManualClock, tenant: Tenant, server: MeterServer, **options: object) -> str:
    async with store.transaction() as session:
        view = await meter_service.create_meter(
            session,
            OPERATOR,
            site_id=tenant.site_id,
            station_id=tenant.station_id,
            profile="sdm630",
            unit_id=1,
            tcp=f"127.0.0.1:{server.port}",
            now=clock.now(),
            **options,  # type: ignore[arg-type]
        )
    return view.id


async def start_polling(store: Store, clock: ManualClock) -> MeterPolling:
    polling = MeterPolling(store, Outbox(clock), clock)
    await polling.reload()
    return polling


async def close(polling: MeterPolling) -> None:
    for poller in polling.pollers.values():
        poller.link.close()


async def test_a_charge_is_one_start_and_one_stop_with_the_edge_payloads(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    simulated, server = meter
    meter_id = await configure(store, clock, tenant, server)
    polling = await start_polling(store, clock)
    await poll(polling, clock, 60)
    simulated.set_load(clock.now(), 16.0)
    await poll(polling, clock, 3600)
    simulated.set_load(clock.now(), 0.0)
    await poll(polling, clock, 300)
    await close(polling)
    (start_type, start), (stop_type, stop) = await payloads(store)
    assert (start_type, stop_type) == ("StartTransaction", "StopTransaction")
    assert start == {
        "stationId": tenant.station_id,
        "chargePointId": tenant.station_id,
        "connectorId": 1,
        "idTag": f"METER-{meter_id}",
        "meterStart": pytest.approx(1000.0, abs=0.1),
        "transactionId": start["transactionId"],
    }
    assert stop["transactionId"] == start["transactionId"] and stop["reason"] == "Other"
    assert stop["meterStop"] - stop["meterStart"] == pytest.approx(16 * 230 * 3 / 1000, abs=0.1)


async def test_standby_draw_for_hours_raises_no_event(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    simulated, server = meter
    await configure(store, clock, tenant, server, poll_interval=30)
    polling = await start_polling(store, clock)
    simulated.set_load(clock.now(), (1.3, 0.0, 0.0), standby_w=0)  # 300 W on one phase
    await poll(polling, clock, 3 * 3600, interval=30)
    await close(polling)
    assert await payloads(store) == []


async def test_restart_mid_session_resumes_the_same_transaction(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    simulated, server = meter
    await configure(store, clock, tenant, server)
    simulated.set_load(clock.now(), 16.0)
    first = await start_polling(store, clock)
    await poll(first, clock, 600)
    await close(first)
    clock.advance(120)  # chargenet is down for two minutes; the car keeps charging
    second = await start_polling(store, clock)
    await poll(second, clock, 600)
    simulated.set_load(clock.now(), 0.0)
    await poll(second, clock, 300)
    await close(second)
    events = await payloads(store)
    assert [kind for kind, _ in events] == ["StartTransaction", "StopTransaction"]
    (_, start), (_, stop) = events
    assert stop["transactionId"] == start["transactionId"]
    assert stop["meterStop"] - stop["meterStart"] == pytest.approx(16 * 230 * 3 * (1320 / 3600) / 1000, abs=0.2)


async def test_restart_after_the_car_finished_closes_with_reboot(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    simulated, server = meter
    await configure(store, clock, tenant, server)
    simulated.set_load(clock.now(), 16.0)
    first = await start_polling(store, clock)
    await poll(first, clock, 600)
    await close(first)
    simulated.set_load(clock.now(), 0.0)
    clock.advance(1800)
    second = await start_polling(store, clock)
    await poll(second, clock, 10)
    await close(second)
    kinds = [(kind, payload.get("reason")) for kind, payload in await payloads(store)]
    assert kinds == [("StartTransaction", None), ("StopTransaction", "Reboot")]


async def test_meter_silent_for_ten_minutes_mid_session_is_one_session(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    simulated, server = meter
    await configure(store, clock, tenant, server)
    polling = await start_polling(store, clock)
    simulated.set_load(clock.now(), 16.0)
    await poll(polling, clock, 300)
    simulated.silent = True
    for _ in range(20):  # dead after 3 failures, then probed with backoff
        clock.advance(30)
        for poller in polling.pollers.values():
            await poller.run_once()
    simulated.silent = False
    await poll(polling, clock, 300, interval=5)
    simulated.set_load(clock.now(), 0.0)
    await poll(polling, clock, 300)
    await close(polling)
    assert [(kind, p.get("reason")) for kind, p in await payloads(store)] == [
        ("StartTransaction", None),
        ("StopTransaction", "Other"),
    ]


async def test_meter_silent_past_the_outage_limit_closes_with_power_loss(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    simulated, server = meter
    await configure(store, clock, tenant, server)
    polling = await start_polling(store, clock)
    simulated.set_load(clock.now(), 16.0)
    await poll(polling, clock, 300)
    simulated.silent = True
    for _ in range(32):
        clock.advance(30)
        await polling.sessions.tick(clock.now())
        for poller in polling.pollers.values():
            await poller.run_once()
    await close(polling)
    assert [(kind, p.get("reason")) for kind, p in await payloads(store)] == [
        ("StartTransaction", None),
        ("StopTransaction", "PowerLoss"),
    ]


async def test_meter_reset_mid_session_closes_it_and_a_new_one_starts_on_the_new_counter(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    simulated, server = meter
    await configure(store, clock, tenant, server)
    polling = await start_polling(store, clock)
    simulated.set_load(clock.now(), 16.0)
    await poll(polling, clock, 600)
    simulated.reset_counter(clock.now(), 0.0)
    await poll(polling, clock, 600)
    await close(polling)
    events = await payloads(store)
    assert [(kind, p.get("reason")) for kind, p in events] == [
        ("StartTransaction", None),
        ("StopTransaction", "Other"),
        ("StartTransaction", None),
    ]
    assert events[1][1]["meterStop"] >= 1000.0
    assert events[2][1]["meterStart"] < 1.0
    assert events[2][1]["transactionId"] > events[0][1]["transactionId"]


async def test_energy_jump_beyond_physics_is_ignored(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    simulated, server = meter
    await configure(store, clock, tenant, server)
    polling = await start_polling(store, clock)
    simulated.set_load(clock.now(), 16.0)
    await poll(polling, clock, 60)
    simulated.energy_wh += 500_000
    await poll(polling, clock, 5)
    simulated.energy_wh -= 500_000
    await poll(polling, clock, 60)
    simulated.set_load(clock.now(), 0.0)
    await poll(polling, clock, 300)
    await close(polling)
    (_, start), (_, stop) = await payloads(store)
    assert stop["meterStop"] - start["meterStart"] < 10


async def test_malformed_meter_row_is_reported_by_name_and_not_polled(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    _, server = meter
    meter_id = await configure(store, clock, tenant, server)
    async with store.transaction() as session:
        row = await session.get(Meter, meter_id)
        assert row is not None
        row.unit_id = 300
    polling = await start_polling(store, clock)
    assert polling.pollers == {}
    [component] = await polling.health()
    assert component.details == {"invalid": {meter_id: "unit: must be 1-247, got 300"}}
