"""Several chargenet processes on one database: each bus is polled by the holder of its lease only, a bus whose
holder stopped renewing is taken over within the lease expiry, and no session is published twice. Simulated meters
on pymodbus's real TCP server; time from a ManualClock; "processes" are MeterPolling instances with their own
owner names, each with its own Store (its own connection pool) on the same database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.keys import KeyStore
from chargenet.meters.lease import LEASE_DURATION, RENEW_INTERVAL_S
from chargenet.meters.runtime import MeterPolling
from chargenet.outbox import Outbox
from chargenet.simulators.meter import MeterServer, SimulatedMeter
from chargenet.store import schema
from chargenet.store.db import Store
from chargenet.store.models import MeterBusLease
from tests.factories import Tenant, make_tenant
from tests.integration.meters.helpers import add_meter, close, payloads
from tests.support.processes import eventually


@pytest.fixture
async def stores(pg_url: str) -> AsyncIterator[tuple[Store, Store]]:
    """Two processes' stores on one PostgreSQL database at the latest schema."""
    a, b = Store(pg_url), Store(pg_url)
    try:
        await schema.prepare_schema(a)
        yield a, b
    finally:
        await a.dispose()
        await b.dispose()


async def configure(store: Store, clock: ManualClock, tmp_path: Path, server: MeterServer) -> Tenant:
    tenant = await make_tenant(store, KeyStore(tmp_path / "keys"), clock.now())
    await add_meter(store, clock, tenant, tcp=f"127.0.0.1:{server.port}")
    return tenant


def process(store: Store, clock: ManualClock, owner: str) -> MeterPolling:
    return MeterPolling(store, Outbox(clock), clock, owner=owner)


@dataclass(frozen=True)
class Processes:
    """Processes "a" and "b" on one database, each with its own store, and the meter on a bus neither has looked
    at yet."""

    a: MeterPolling
    b: MeterPolling
    meter: SimulatedMeter
    store: Store  # a's, to read what was published


@pytest.fixture
async def processes(
    stores: tuple[Store, Store], clock: ManualClock, tmp_path: Path, meter: tuple[SimulatedMeter, MeterServer]
) -> Processes:
    simulated, server = meter
    await configure(stores[0], clock, tmp_path, server)
    return Processes(process(stores[0], clock, "a"), process(stores[1], clock, "b"), simulated, stores[0])


async def step(clock: ManualClock, seconds: float, *processes: MeterPolling, every: float = RENEW_INTERVAL_S) -> None:
    """Let `seconds` pass on the clock, one lease round `every` second, polling every bus each process holds."""
    for _ in range(int(seconds / every)):
        clock.advance(every)
        for polling in processes:
            await polling.reload()
            for poller in polling.pollers.values():
                await poller.run_once()


def reads(polling: MeterPolling) -> int:
    return sum(poller.health.reads for poller in polling.pollers.values())


async def test_two_processes_poll_a_bus_exactly_once(clock: ManualClock, processes: Processes) -> None:
    a, b = processes.a, processes.b
    await step(clock, 60, a, b)
    assert (len(a.pollers), len(b.pollers)) == (1, 0)
    assert reads(a) == 12 and b.sessions.meters == {}


async def test_two_processes_charging_publish_one_start_and_one_stop(clock: ManualClock, processes: Processes) -> None:
    a, b, simulated = processes.a, processes.b, processes.meter
    await step(clock, 30, b, a)
    simulated.set_load(clock.now(), 16.0)
    await step(clock, 600, b, a, every=5)
    simulated.set_load(clock.now(), 0.0)
    await step(clock, 300, b, a, every=5)
    close(a, b)
    assert [kind for kind, _ in await payloads(processes.store)] == ["StartTransaction", "StopTransaction"]


async def test_bus_of_a_holder_that_stopped_renewing_is_taken_over_within_the_lease_expiry(
    clock: ManualClock, processes: Processes
) -> None:
    a, b = processes.a, processes.b
    await step(clock, 10, a, b)
    assert b.pollers == {}
    waited = 0.0
    while not b.pollers:
        await step(clock, RENEW_INTERVAL_S, b)  # a is frozen: no lease rounds, no polls
        waited += RENEW_INTERVAL_S
        assert waited <= LEASE_DURATION.total_seconds()
    await step(clock, 20, b)
    close(a, b)
    assert reads(b) >= 4


async def test_takeover_mid_session_resumes_the_same_transaction(clock: ManualClock, processes: Processes) -> None:
    a, b, simulated = processes.a, processes.b, processes.meter
    simulated.set_load(clock.now(), 16.0)
    await step(clock, 600, a, b, every=5)
    [(_, start)] = await payloads(processes.store)
    close(a)  # a dies mid-session
    await step(clock, 60, b)
    assert b.sessions.meters and next(iter(b.sessions.meters.values())).transaction_id == start["transactionId"]
    simulated.set_load(clock.now(), 0.0)
    await step(clock, 300, b, every=5)
    close(b)
    (_, start_again), (stop_type, stop) = await payloads(processes.store)
    assert start_again == start and stop_type == "StopTransaction"
    assert stop["transactionId"] == start["transactionId"] and stop["reason"] == "Other"


async def test_frozen_holder_that_wakes_after_a_takeover_writes_nothing_for_the_bus(
    clock: ManualClock, processes: Processes
) -> None:
    a, b, simulated = processes.a, processes.b, processes.meter
    simulated.set_load(clock.now(), 16.0)
    await step(clock, 60, a, b, every=5)
    await step(clock, 1200, b, every=5)  # a is frozen for 20 minutes; b takes the bus and resumes the session
    for poller in a.pollers.values():
        await poller.run_once()  # a wakes and polls before its next lease round, its memory 20 minutes old
    await a.sessions.tick(clock.now())
    await step(clock, 5, a, b)
    assert a.pollers == {} and a.sessions.meters == {}
    simulated.set_load(clock.now(), 0.0)
    await step(clock, 300, a, b, every=5)
    close(a, b)
    (start_type, start), (stop_type, stop) = await payloads(processes.store)
    assert (start_type, stop_type) == ("StartTransaction", "StopTransaction")
    assert stop["transactionId"] == start["transactionId"] and stop["reason"] == "Other"
    assert stop["meterStop"] - stop["meterStart"] == pytest.approx(16 * 230 * 3 * (1265 / 3600) / 1000, abs=0.2)


async def test_stopped_worker_releases_its_buses_for_another_process(clock: ManualClock, processes: Processes) -> None:
    a, b = processes.a, processes.b
    stopping = asyncio.Event()
    worker = asyncio.create_task(a.run(stopping))
    await eventually(lambda: bool(a.buses))
    await b.reload()
    assert a.buses and b.pollers == {}
    stopping.set()
    await asyncio.wait_for(worker, 5)
    await b.reload()
    close(b)
    assert b.pollers


async def test_a_single_process_polls_every_bus_and_holds_a_lease_only_on_postgresql(
    store: Store, clock: ManualClock, tmp_path: Path, meter: tuple[SimulatedMeter, MeterServer]
) -> None:
    _, server = meter
    await configure(store, clock, tmp_path, server)
    polling = process(store, clock, "a")
    await step(clock, 10, polling)
    close(polling)
    async with store.transaction() as session:
        owners = list(await session.scalars(select(MeterBusLease.owner)))
    assert reads(polling) == 2
    assert owners == (["a"] if store.dialect == "postgresql" else [])
