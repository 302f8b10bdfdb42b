"""Meter polling: TCP throughput against a bare pymodbus loop, RTU bus overhead, dead-meter cost, detection latency.

- TCP: simulated meters are served by pymodbus's real server in a separate process, one endpoint per meter.
  The baseline is a bare loop of `read_input_registers` over the same read plan on one client per endpoint;
  ours is the `BusPoller` (scheduler, decoding, detector). Both are counted per second of this process's CPU.
- RTU: 32 meters on one bus over a pseudo-terminal pair (simulators/serial_bus.py); the simulator holds each
  reply back by the wire time of its transaction at 9600 8N1 with 5 ms turnaround. The ratio is that wire time
  over the poller's cycle time.
- Dead meter: the bus time one silent meter takes in a cycle (from the previous meter's result to its failure),
  against its timeout.
- Detection latency: from the first reading over the threshold to the committed StartTransaction, against
  2 polls + 100 ms.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from multiprocessing.connection import Connection
from pathlib import Path

from pymodbus.client import AsyncModbusTcpClient
from sqlalchemy import select

from bench.common import Result
from chargenet.clock import SystemClock
from chargenet.meters import detect
from chargenet.meters.bus import BusSettings, RtuBus, SerialLine, TcpEndpoint
from chargenet.meters.errors import MeterUnreachable
from chargenet.meters.modbus import ModbusLink
from chargenet.meters.poller import BusPoller, PollTarget
from chargenet.meters.profiles import get_profile
from chargenet.meters.readings import Reading
from chargenet.services.callers import OPERATOR
from chargenet.simulators import serial_bus
from chargenet.simulators.meter import MeterServer, SimulatedMeter

ENDPOINTS = 48
SECONDS = 3.0
PROFILE = get_profile("sdm630")


def _serve_fleet(count: int, pipe: Connection) -> None:
    async def main() -> None:
        clock = SystemClock()
        servers = []
        for _ in range(count):
            meter = SimulatedMeter(PROFILE, unit_id=1, energy_wh=1_000_000)
            meter.set_load(clock.now(), 16.0)
            servers.append(await MeterServer.tcp([meter], clock))
        pipe.send([server.port for server in servers])
        await asyncio.get_running_loop().run_in_executor(None, pipe.recv)
        for server in servers:
            await server.stop()

    asyncio.run(main())


@dataclass
class _DetectorSink:
    """The detector, in memory: what a poll costs before the store is involved."""

    thresholds: detect.Thresholds
    states: dict[str, detect.DetectorState]
    last_result_at: float = 0.0
    failure_costs: list[float] = field(default_factory=list)

    async def on_reading(self, meter_id: str, reading: Reading, at: datetime) -> None:
        self.states[meter_id] = detect.on_reading(self.states[meter_id], reading, at, self.thresholds).state
        self.last_result_at = time.perf_counter()

    async def on_failure(self, meter_id: str, failure: MeterUnreachable, at: datetime) -> None:
        self.states[meter_id] = detect.tick(self.states[meter_id], at, self.thresholds).state
        now = time.perf_counter()
        # Bus time from the previous meter's result to this failure: what the dead meter cost the cycle.
        self.failure_costs.append(now - self.last_result_at)
        self.last_result_at = now


async def _bare_loop(ports: list[int]) -> float:
    clients = [AsyncModbusTcpClient("127.0.0.1", port=port, timeout=1, retries=0) for port in ports]
    for client in clients:
        await client.connect()
    plan = PROFILE.read_plan
    deadline = time.perf_counter() + SECONDS
    polls = 0

    async def loop(client: AsyncModbusTcpClient) -> None:
        nonlocal polls
        while time.perf_counter() < deadline:
            for block in plan:
                await client.read_input_registers(block.address, count=block.count, device_id=1)
            polls += 1

    cpu = time.process_time()
    await asyncio.gather(*(loop(client) for client in clients))
    cpu = time.process_time() - cpu
    for client in clients:
        client.close()
    return polls / cpu


async def _pollers(ports: list[int]) -> float:
    clock = SystemClock()
    sink = _DetectorSink(detect.Thresholds(), {})
    pollers = []
    for index, port in enumerate(ports):
        link = ModbusLink(TcpEndpoint("127.0.0.1", port), BusSettings.for_tcp())
        await link.connect()
        poller = BusPoller(f"tcp{index}", link, sink, clock, settings=BusSettings.for_tcp())
        # An interval shorter than a read keeps every meter due: the poller runs flat out, like the bare loop.
        poller.set_targets([PollTarget(f"m{index}", PROFILE, 1, poll_interval_s=0.0001)])
        sink.states[f"m{index}"] = detect.DetectorState()
        pollers.append(poller)
    deadline = time.perf_counter() + SECONDS
    polls = 0

    async def loop(poller: BusPoller) -> None:
        nonlocal polls
        while time.perf_counter() < deadline:
            polled = await poller.run_once()
            polls += polled
            if not polled:
                await asyncio.sleep(0)

    cpu = time.process_time()
    await asyncio.gather(*(loop(poller) for poller in pollers))
    cpu = time.process_time() - cpu
    errors = sum(poller.health.errors for poller in pollers)
    if errors:
        print(f"  ({errors} failed polls; last: {next(p.health.meters for p in pollers if p.health.errors)})")
    for poller in pollers:
        poller.link.close()
    return polls / cpu


def _tcp() -> list[Result]:
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(target=_serve_fleet, args=(ENDPOINTS, child), daemon=True)
    process.start()
    try:
        ports = parent.recv()
        # Alternating rounds, best of each: the machine is shared, and a neighbour's burst should not decide.
        bare, ours = 0.0, 0.0
        for _ in range(2):
            bare = max(bare, asyncio.run(_bare_loop(ports)))
            ours = max(ours, asyncio.run(_pollers(ports)))
    finally:
        parent.send("stop")
        process.join(timeout=10)
    return [Result(f"TCP meters polled per CPU second ({ENDPOINTS} endpoints)", ours, bare, "meters/s", 0.70)]


async def _rtu(server_tty: str, client_tty: str) -> list[Result]:
    clock = SystemClock()
    line = SerialLine(9600)
    turnaround = 0.005
    meters = [SimulatedMeter(PROFILE, unit_id=unit) for unit in range(1, 33)]
    dead = SimulatedMeter(PROFILE, unit_id=40, silent=True)
    server = await MeterServer.serial(
        [*meters, dead], clock, server_tty, line, emulate_wire_time=True, turnaround_s=turnaround
    )
    settings = BusSettings.for_serial(line, registers=max(b.count for b in PROFILE.read_plan))
    link = ModbusLink(RtuBus(client_tty, line), settings)
    sink = _DetectorSink(detect.Thresholds(), {f"m{m.unit_id}": detect.DetectorState() for m in [*meters, dead]})
    poller = BusPoller("rtu", link, sink, clock, settings=settings)
    wire = sum(line.read_time(block.count, turnaround) for block in PROFILE.read_plan) * len(meters)
    try:
        await link.connect()
        poller.set_targets([PollTarget(f"m{m.unit_id}", PROFILE, m.unit_id, 0.0001) for m in meters])
        await poller.run_once()
        cycles = []
        for _ in range(3):
            started = time.perf_counter()
            await poller.run_once()
            cycles.append(time.perf_counter() - started)
        cycle = min(cycles)
        poller.set_targets([PollTarget(f"m{m.unit_id}", PROFILE, m.unit_id, 0.0001) for m in [*meters, dead]])
        for _ in range(3):  # dead after 3 failures in a row, so each of these cycles still probes it
            await poller.run_once()
        dead_cost = sorted(sink.failure_costs)[len(sink.failure_costs) // 2]
    finally:
        link.close()
        await server.stop()
    return [
        Result("RTU 32 meters at 9600 8N1: wire time / poller cycle", wire * 1000, cycle * 1000, "ms", 1 / 1.15),
        Result(
            "RTU dead meter: its timeout (after its 8-byte request) / bus time it costs per cycle",
            (settings.timeout_s + line.frame_time(8)) * 1000,
            dead_cost * 1000,
            "ms",
            1.0,
        ),
    ]


def _rtu_bench() -> list[Result]:
    with (
        tempfile.TemporaryDirectory() as scratch,
        serial_bus.running(Path(scratch) / "meters", Path(scratch) / "poller") as (server_tty, client_tty),
    ):
        return asyncio.run(_rtu(server_tty, client_tty))


async def _latency() -> list[Result]:
    from chargenet.keys import KeyStore
    from chargenet.meters.runtime import MeterPolling
    from chargenet.outbox import Outbox
    from chargenet.services import companies, meters, sites, stations
    from chargenet.store import schema
    from chargenet.store.db import Store
    from chargenet.store.models import OutboxEvent

    interval = 0.5
    clock = SystemClock()
    with tempfile.TemporaryDirectory() as scratch:
        store = Store(f"sqlite+aiosqlite:///{Path(scratch) / 'bench.db'}")
        await schema.prepare_schema(store)
        keys = KeyStore(Path(scratch) / "keys")
        keys.ensure()
        meter = SimulatedMeter(PROFILE, unit_id=1, energy_wh=1000)
        server = await MeterServer.tcp([meter], clock)
        async with store.transaction() as session:
            company = await companies.create_company(session, OPERATOR, name="Bench", now=clock.now())
            site = await sites.create_site(
                session, OPERATOR, keys.credential_cipher(), company_id=company.id, name="B", now=clock.now()
            )
            await stations.create_station(
                session,
                OPERATOR,
                keys.secret_hasher(),
                keys.credential_cipher(),
                site_id=site.id,
                station_id="B-1",
                now=clock.now(),
            )
            await meters.create_meter(
                session,
                OPERATOR,
                site_id=site.id,
                station_id="B-1",
                profile=PROFILE.name,
                unit_id=1,
                tcp=f"127.0.0.1:{server.port}",
                poll_interval=interval,
                now=clock.now(),
            )
        polling = MeterPolling(store, Outbox(clock), clock)
        stopping = asyncio.Event()
        worker = asyncio.create_task(polling.run(stopping))
        await asyncio.sleep(2 * interval)
        meter.set_load(clock.now(), 16.0)
        switched = time.perf_counter()
        first_over: float | None = None
        while True:
            if first_over is None and meter.reads and meter.currents_a[0] > 0:
                tracked = polling.sessions.meters.get(next(iter(polling.sessions.meters), ""))
                if tracked is not None and tracked.state.phase is detect.Phase.ARMING:
                    first_over = time.perf_counter()
            async with store.transaction() as session:
                if await session.scalar(select(OutboxEvent.position).limit(1)) is not None:
                    break
            await asyncio.sleep(0.005)
        detected = time.perf_counter()
        stopping.set()
        await worker
        await server.stop()
        await store.dispose()
    start = first_over if first_over is not None else switched
    budget = 2 * interval + 0.1
    return [
        Result(
            "detection latency: budget (2 polls + 100 ms) / measured",
            budget * 1000,
            (detected - start) * 1000,
            "ms",
            1.0,
        )
    ]


def run() -> list[Result]:
    return [*_tcp(), *_rtu_bench(), *asyncio.run(_latency())]
