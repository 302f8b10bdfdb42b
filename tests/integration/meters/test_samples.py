"""A meter session's samples (its energy over time) and every meter's poll health, stored for the console:
simulated meters on pymodbus's real servers, the pollers, the store, time from a ManualClock."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import timedelta

from sqlalchemy import func, select

from chargenet.clock import ManualClock
from chargenet.meters.bus import BusSettings, SerialLine, Transport
from chargenet.meters.modbus import ModbusLink
from chargenet.meters.profiles import get_profile
from chargenet.meters.runtime import LinkFactory, MeterMetrics, MeterPolling
from chargenet.simulators.meter import MeterServer, SimulatedMeter
from chargenet.store.db import Store
from chargenet.store.models import MeterPollHealth, MeterSample, MeterSession
from tests.factories import Tenant
from tests.integration.meters.conftest import PtyPair
from tests.integration.meters.helpers import add_meter, close, poll, start_polling


def patient_link(transport: Transport, settings: BusSettings) -> ModbusLink:
    """The bus's link, waiting up to 1 s for a reply rather than the line's own timeout (0.29 s at 9600 baud): the
    simulated meter answers from the test's own event loop, which a busy machine may not run for that long, and a
    late reply would count as a timeout, not as what it carries (a CRC error, a reading)."""
    return ModbusLink(transport, replace(settings, timeout_s=1.0))


async def polling_of(
    store: Store, clock: ManualClock, tenant: Tenant, link_factory: LinkFactory = ModbusLink, **where: object
) -> MeterPolling:
    await add_meter(store, clock, tenant, **where)
    return await start_polling(store, clock, link_factory)


async def samples(store: Store) -> list[MeterSample]:
    async with store.transaction() as session:
        return list(await session.scalars(select(MeterSample).order_by(MeterSample.at)))


async def only_session(store: Store) -> MeterSession:
    async with store.transaction() as session:
        return (await session.scalars(select(MeterSession))).one()


async def test_a_meter_session_keeps_one_sample_per_30_seconds_of_a_5_second_poll(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    simulated, server = meter
    polling = await polling_of(store, clock, tenant, tcp=f"127.0.0.1:{server.port}")
    simulated.set_load(clock.now(), 16.0)
    await poll(polling, clock, 900)
    simulated.set_load(clock.now(), 0.0)
    await poll(polling, clock, 300)
    close(polling)
    session = await only_session(store)
    kept = await samples(store)
    assert session.stopped_at is not None
    assert {(row.transaction_id, row.station_id) for row in kept} == {(session.transaction_id, tenant.station_id)}
    gaps = [later.at - earlier.at for earlier, later in itertools.pairwise(kept)]
    assert gaps and min(gaps) >= timedelta(seconds=30)
    assert len(kept) >= (session.stopped_at - session.started_at) / timedelta(seconds=30) - 2
    assert all(earlier.energy_wh <= later.energy_wh for earlier, later in itertools.pairwise(kept))


async def test_meter_samples_are_written_in_batches_with_the_session_s_progress(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    simulated, server = meter
    polling = await polling_of(store, clock, tenant, tcp=f"127.0.0.1:{server.port}")
    simulated.set_load(clock.now(), 16.0)
    counts = []
    for _ in range(120):  # ten minutes of 5 s polls
        await poll(polling, clock, 5)
        counts.append(len(await samples(store)))
    close(polling)
    writes = sum(1 for before, after in itertools.pairwise(counts) if after != before)
    assert counts[-1] >= 16 and writes <= 11  # about 20 samples in a write a minute, never one write each


async def test_the_stop_writes_the_samples_still_held(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    simulated, server = meter
    polling = await polling_of(store, clock, tenant, tcp=f"127.0.0.1:{server.port}")
    simulated.set_load(clock.now(), 16.0)
    await poll(polling, clock, 600)
    simulated.set_load(clock.now(), 0.0)
    await poll(polling, clock, 300)
    close(polling)
    assert all(tracked.samples == [] for tracked in polling.sessions.meters.values())
    session = await only_session(store)
    assert session.stopped_at is not None
    assert (await samples(store))[-1].at >= session.stopped_at - timedelta(seconds=35)


async def garbled_then_silent(store: Store, clock: ManualClock, tenant: Tenant, pty_pair: PtyPair) -> MeterPolling:
    """An RTU meter whose first two replies are garbled, then one good, then silence."""
    simulated = SimulatedMeter(get_profile("sdm630"), unit_id=1, energy_wh=1000, crc_errors=2)
    server = await MeterServer.serial([simulated], clock, pty_pair.server, SerialLine(9600))
    try:
        polling = await polling_of(store, clock, tenant, patient_link, rtu=pty_pair.client, baud=9600)
        await poll(polling, clock, 15)
        simulated.silent = True
        await poll(polling, clock, 5)
        close(polling)
    finally:
        await server.stop()
    return polling


async def test_poll_health_is_stored_for_every_process_s_console(
    store: Store, clock: ManualClock, tenant: Tenant, pty_pair: PtyPair
) -> None:
    polling = await garbled_then_silent(store, clock, tenant, pty_pair)
    await polling.save_health()
    async with store.transaction() as session:
        row = (await session.scalars(select(MeterPollHealth))).one()
    assert (row.reads, row.errors, row.timeouts, row.crc_errors) == (4, 3, 1, 2)
    assert row.owner == polling.owner and row.bus_key == next(iter(polling.pollers))
    assert row.last_answer_at == clock.now() - timedelta(seconds=5)
    assert row.last_error == "timeout" and row.updated_at == clock.now()


async def test_crc_errors_are_a_metric_of_their_own(
    store: Store, clock: ManualClock, tenant: Tenant, pty_pair: PtyPair
) -> None:
    polling = await garbled_then_silent(store, clock, tenant, pty_pair)
    families = {family.name: family for family in MeterMetrics(polling).collect()}
    [crc] = families["chargenet_meter_read_crc_errors"].samples
    [timeouts] = families["chargenet_meter_read_timeouts"].samples
    assert (crc.value, timeouts.value) == (2, 1)


async def test_stored_poll_health_is_replaced_not_added_to(
    store: Store, clock: ManualClock, tenant: Tenant, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    _, server = meter
    polling = await polling_of(store, clock, tenant, tcp=f"127.0.0.1:{server.port}")
    await poll(polling, clock, 10)
    await polling.save_health()
    await poll(polling, clock, 10)
    await polling.save_health()
    close(polling)
    async with store.transaction() as session:
        assert await session.scalar(select(func.count()).select_from(MeterPollHealth)) == 1
        assert await session.scalar(select(MeterPollHealth.reads)) == 4
