"""Sessions detected end to end: simulated meters on pymodbus's real TCP server, the pollers, the detector, the
store and the outbox, on SQLite and PostgreSQL, with time from a ManualClock."""

from __future__ import annotations

import pytest

from chargenet.clock import ManualClock
from chargenet.meters.runtime import MeterPolling
from chargenet.simulators.meter import MeterServer, SimulatedMeter
from chargenet.store.db import Store
from chargenet.store.models import Meter
from tests.factories import Tenant
from tests.integration.meters.helpers import add_meter, close, payloads, poll, start_polling


async def configure(store: Store, clock: ManualClock, tenant: Tenant, server: MeterServer, **options: object) -> str:
    return await add_meter(store, clock, tenant, tcp=f"127.0.0.1:{server.port}", **options)


@pytest.fixture
async def polling(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> MeterPolling:
    """The meter, configured with the default thresholds, and a process polling it."""
    await configure(store, clock, tenant, meter[1])
    return await start_polling(store, clock)


async def reasons(store: Store) -> list[tuple[str, str | None]]:
    """Each published event's type, with its reason (a StopTransaction's)."""
    return [(kind, payload.get("reason")) for kind, payload in await payloads(store)]


async def charge(polling: MeterPolling, clock: ManualClock, meter: SimulatedMeter, seconds: float) -> None:
    """A car draws 16 A on every phase, polled for `seconds`."""
    meter.set_load(clock.now(), 16.0)
    await poll(polling, clock, seconds)


async def restart(store: Store, clock: ManualClock, polling: MeterPolling, *, down_s: float) -> MeterPolling:
    """The process polling the meter stops; another starts `down_s` seconds later."""
    close(polling)
    clock.advance(down_s)
    return await start_polling(store, clock)


async def go_silent(
    polling: MeterPolling, clock: ManualClock, meter: SimulatedMeter, polls: int, *, tick: bool
) -> None:
    """The meter stops answering for `polls` polls 30 s apart (dead after 3 failures, then probed with backoff);
    with `tick`, the session detector's clock runs as well."""
    meter.silent = True
    for _ in range(polls):
        clock.advance(30)
        if tick:
            await polling.sessions.tick(clock.now())
        for poller in polling.pollers.values():
            await poller.run_once()


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
    close(polling)
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
    close(polling)
    assert await payloads(store) == []


async def test_restart_mid_session_resumes_the_same_transaction(
    store: Store, clock: ManualClock, meter: tuple[SimulatedMeter, MeterServer], polling: MeterPolling
) -> None:
    simulated = meter[0]
    await charge(polling, clock, simulated, 600)
    second = await restart(store, clock, polling, down_s=120)  # the car keeps charging meanwhile
    await poll(second, clock, 600)
    simulated.set_load(clock.now(), 0.0)
    await poll(second, clock, 300)
    close(second)
    events = await payloads(store)
    assert [kind for kind, _ in events] == ["StartTransaction", "StopTransaction"]
    (_, start), (_, stop) = events
    assert stop["transactionId"] == start["transactionId"]
    assert stop["meterStop"] - stop["meterStart"] == pytest.approx(16 * 230 * 3 * (1320 / 3600) / 1000, abs=0.2)


async def test_restart_after_the_car_finished_closes_with_reboot(
    store: Store, clock: ManualClock, meter: tuple[SimulatedMeter, MeterServer], polling: MeterPolling
) -> None:
    simulated = meter[0]
    await charge(polling, clock, simulated, 600)
    simulated.set_load(clock.now(), 0.0)
    second = await restart(store, clock, polling, down_s=1800)
    await poll(second, clock, 10)
    close(second)
    assert await reasons(store) == [("StartTransaction", None), ("StopTransaction", "Reboot")]


async def test_meter_silent_for_ten_minutes_mid_session_is_one_session(
    store: Store, clock: ManualClock, meter: tuple[SimulatedMeter, MeterServer], polling: MeterPolling
) -> None:
    simulated = meter[0]
    await charge(polling, clock, simulated, 300)
    await go_silent(polling, clock, simulated, 20, tick=False)
    simulated.silent = False
    await poll(polling, clock, 300, interval=5)
    simulated.set_load(clock.now(), 0.0)
    await poll(polling, clock, 300)
    close(polling)
    assert await reasons(store) == [("StartTransaction", None), ("StopTransaction", "Other")]


async def test_meter_silent_past_the_outage_limit_closes_with_power_loss(
    store: Store, clock: ManualClock, meter: tuple[SimulatedMeter, MeterServer], polling: MeterPolling
) -> None:
    simulated = meter[0]
    await charge(polling, clock, simulated, 300)
    await go_silent(polling, clock, simulated, 32, tick=True)
    close(polling)
    assert await reasons(store) == [("StartTransaction", None), ("StopTransaction", "PowerLoss")]


async def test_meter_reset_mid_session_closes_it_and_a_new_one_starts_on_the_new_counter(
    store: Store, clock: ManualClock, meter: tuple[SimulatedMeter, MeterServer], polling: MeterPolling
) -> None:
    simulated = meter[0]
    await charge(polling, clock, simulated, 600)
    simulated.reset_counter(clock.now(), 0.0)
    await poll(polling, clock, 600)
    close(polling)
    assert await reasons(store) == [
        ("StartTransaction", None),
        ("StopTransaction", "Other"),
        ("StartTransaction", None),
    ]
    events = await payloads(store)
    assert events[1][1]["meterStop"] >= 1000.0
    assert events[2][1]["meterStart"] < 1.0
    assert events[2][1]["transactionId"] > events[0][1]["transactionId"]


async def test_energy_jump_beyond_physics_is_ignored(
    store: Store, clock: ManualClock, meter: tuple[SimulatedMeter, MeterServer], polling: MeterPolling
) -> None:
    simulated = meter[0]
    await charge(polling, clock, simulated, 60)
    simulated.energy_wh += 500_000
    await poll(polling, clock, 5)
    simulated.energy_wh -= 500_000
    await poll(polling, clock, 60)
    simulated.set_load(clock.now(), 0.0)
    await poll(polling, clock, 300)
    close(polling)
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
