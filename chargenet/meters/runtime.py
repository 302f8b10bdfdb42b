"""The meter worker: keeps one poller per TCP endpoint and per RTU bus in step with the configuration.

Every `reload_interval_s` (2 s, so CLI changes apply while the server runs) it reads the enabled meters,
builds a `BusPoller` with its own `ModbusLink` for each new bus, retargets the existing ones and stops those
left without meters. A row that does not validate is skipped and reported in `/health`, naming the meter and
the setting. Health per bus and per meter, and Prometheus metrics, are read from the pollers' counters.

Several processes may share one database: a bus is polled only by the process holding its lease (`lease.py`,
`leases.py`). Every `lease_interval_s` (1 s) the worker renews its leases and takes free or expired ones; a bus
whose lease it lost is stopped and its meters forgotten, and a bus it takes is started with its meters restored
from the store, which reconciles their open sessions as a restart does. On shutdown the leases are released.

The counters live in the memory of the process holding a bus; every `health_interval_s` (10 s) it copies them,
per meter and under the bus's lease, to `meter_health`, which is how the console of any process shows them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from chargenet.clock import Clock
from chargenet.errors import InvalidInput
from chargenet.ids import process_owner
from chargenet.meters.bus import BackoffPolicy, BusSettings, RtuBus, Transport
from chargenet.meters.errors import MeterUnreachable
from chargenet.meters.grid import GridReadings, GridSpec, grid_spec_of
from chargenet.meters.lease import RENEW_INTERVAL_S, LeaseDecision
from chargenet.meters.leases import BusLeases
from chargenet.meters.modbus import ModbusLink
from chargenet.meters.poller import BusPoller, MeterLink, PollTarget
from chargenet.meters.readings import Reading
from chargenet.meters.records import spec_of
from chargenet.meters.sessions import MeterSessions
from chargenet.meters.spec import MeterSpec
from chargenet.observability.health import ComponentHealth, Level
from chargenet.outbox import Outbox
from chargenet.store.db import Store
from chargenet.store.models import GridMeter, Meter, MeterPollHealth

log = logging.getLogger(__name__)

# Above this many changed meters a reload reads every enabled meter instead of listing ids in the query.
_LOAD_BY_ID_LIMIT = 500

LinkFactory = Callable[[Transport, BusSettings], MeterLink]


class _Sinks:
    """Where a bus's poll results go: a grid meter's to the grid readings, every other to the session detector."""

    def __init__(self, sessions: MeterSessions, grid: GridReadings) -> None:
        self._sessions = sessions
        self._grid = grid

    async def on_reading(self, meter_id: str, reading: Reading, at: datetime) -> None:
        if meter_id in self._grid.meters:
            await self._grid.on_reading(meter_id, reading, at)
        else:
            await self._sessions.on_reading(meter_id, reading, at)

    async def on_failure(self, meter_id: str, failure: MeterUnreachable, at: datetime) -> None:
        if meter_id in self._grid.meters:
            await self._grid.on_failure(meter_id, failure, at)
        else:
            await self._sessions.on_failure(meter_id, failure, at)


def settings_for(transport: Transport, specs: list[MeterSpec | GridSpec]) -> BusSettings:
    """RTU: a timeout from the wire time of the longest read on this bus; TCP: 1 s. Never pymodbus's defaults."""
    if isinstance(transport, RtuBus):
        longest = max((block.count for spec in specs for block in spec.profile.read_plan), default=10)
        return BusSettings.for_serial(transport.line, registers=longest)
    return BusSettings.for_tcp()


@dataclass(slots=True)
class _Bus:
    poller: BusPoller
    stopping: asyncio.Event
    task: asyncio.Task[None] | None = None


class MeterPolling:
    name = "meters"

    def __init__(
        self,
        store: Store,
        outbox: Outbox,
        clock: Clock,
        *,
        reload_interval_s: float = 2.0,
        lease_interval_s: float = RENEW_INTERVAL_S,
        health_interval_s: float = 10.0,
        link_factory: LinkFactory = ModbusLink,
        policy: BackoffPolicy | None = None,
        owner: str | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._reload_interval_s = reload_interval_s
        self._lease_interval_s = lease_interval_s
        self._health_interval_s = health_interval_s
        self._link_factory = link_factory
        self._policy = policy
        self.owner = owner or process_owner()
        self.leases = BusLeases(store, self.owner)
        self.sessions = MeterSessions(store, outbox, clock, fence=self.leases.still_held)
        self.grid = GridReadings(store)
        self._sinks = _Sinks(self.sessions, self.grid)
        self.buses: dict[str, _Bus] = {}
        self.invalid: dict[str, str] = {}
        self._versions: dict[str, datetime] = {}
        self._specs: dict[str, MeterSpec] = {}
        self._grid_specs: dict[str, GridSpec] = {}
        self._grid_versions: dict[str, datetime] = {}
        self._configured = False

    @property
    def pollers(self) -> dict[str, BusPoller]:
        return {key: bus.poller for key, bus in self.buses.items()}

    async def reload(self, *, configuration: bool = True) -> None:
        """Read the configuration (unless `configuration` is False), hold the leases, and bring buses and
        detectors in line with both (no polling here)."""
        changed = await self._load() if configuration else False
        if configuration:
            changed = await self._load_grid() or changed
        specs = sorted(self._specs.values(), key=lambda spec: spec.meter_id)
        grid_specs = sorted(self._grid_specs.values(), key=lambda spec: spec.meter_id)
        by_bus: dict[str, list[MeterSpec | GridSpec]] = {}
        every: list[MeterSpec | GridSpec] = [*specs, *grid_specs]
        for spec in every:
            by_bus.setdefault(spec.bus_key, []).append(spec)
        decisions = await self.leases.hold(set(by_bus), self._clock.now())
        taken = {key for key, decision in decisions.items() if decision is LeaseDecision.TAKE}
        # A bus lost, or taken back after another process may have polled it: what memory says about its meters
        # may be stale, so stop it and forget them (`track` restores them from the store when the bus is held).
        dropped = (set(self.buses) - set(decisions)) | (taken & set(self.buses))
        for key in dropped:
            await self._stop_bus(key)
        stale = {meter_id for meter_id, tracked in self.sessions.meters.items() if tracked.spec.bus_key in dropped}
        self.sessions.forget(
            stale | {spec.meter_id for key in taken for spec in by_bus[key] if isinstance(spec, MeterSpec)}
        )
        self.grid.meters = {spec.meter_id: spec for spec in grid_specs if spec.bus_key in decisions}
        if not changed and not dropped and set(self.buses) == set(decisions):
            return
        await self.sessions.track(spec for spec in specs if spec.bus_key in decisions)
        for key in set(decisions):
            bus_specs = by_bus[key]
            settings = settings_for(bus_specs[0].transport, bus_specs)
            bus = self.buses.get(key)
            if bus is not None and bus.poller.settings != settings:
                await self._stop_bus(key)
                bus = None
            if bus is None:
                link = self._link_factory(bus_specs[0].transport, settings)
                poller = BusPoller(key, link, self._sinks, self._clock, settings=settings, policy=self._policy)
                bus = self.buses[key] = _Bus(poller, asyncio.Event())
            bus.poller.set_targets(
                PollTarget(spec.meter_id, spec.profile, spec.unit_id, spec.poll_interval_s) for spec in bus_specs
            )

    async def _load(self) -> bool:
        """Bring the validated specs in line with the configuration; True when any meter changed.

        Only meters whose `updated_at` changed are loaded and validated again, so a reload every 2 s stays cheap
        with thousands of meters."""
        async with self._store.transaction() as session:
            versions = {
                meter_id: updated_at
                for meter_id, updated_at in (
                    await session.execute(select(Meter.id, Meter.updated_at).where(Meter.enabled.is_(True)))
                ).all()
            }
            changed = [meter_id for meter_id, version in versions.items() if self._versions.get(meter_id) != version]
            removed = set(self._versions) - set(versions)
            if not changed and not removed:
                first, self._configured = not self._configured, True
                return first
            query = select(Meter).where(Meter.enabled.is_(True))
            if len(changed) <= _LOAD_BY_ID_LIMIT:
                query = query.where(Meter.id.in_(changed))
            rows = [row for row in await session.scalars(query) if row.id in changed]
        self._configured = True
        for meter_id in removed:
            self._versions.pop(meter_id, None)
            self._specs.pop(meter_id, None)
            self.invalid.pop(meter_id, None)
        for row in rows:
            self._versions[row.id] = row.updated_at
            try:
                self._specs[row.id] = spec_of(row)
                self.invalid.pop(row.id, None)
            except InvalidInput as exc:
                self._specs.pop(row.id, None)
                self.invalid[row.id] = exc.message
                log.error("meter %s has a malformed configuration and is not polled: %s", row.id, exc.message)
        return True

    async def _load_grid(self) -> bool:
        """Bring the grid meters' specs in line with the store; True when any changed."""
        async with self._store.read() as session:
            rows = {row.id: row for row in await session.scalars(select(GridMeter))}
        changed = False
        for meter_id in set(self._grid_versions) - set(rows):
            self._grid_versions.pop(meter_id)
            self._grid_specs.pop(meter_id, None)
            self.invalid.pop(meter_id, None)
            changed = True
        for meter_id, row in rows.items():
            if self._grid_versions.get(meter_id) == row.updated_at:
                continue
            changed = True
            self._grid_versions[meter_id] = row.updated_at
            try:
                self._grid_specs[meter_id] = grid_spec_of(row)
                self.invalid.pop(meter_id, None)
            except InvalidInput as exc:
                self._grid_specs.pop(meter_id, None)
                self.invalid[meter_id] = exc.message
                log.error("grid meter %s has a malformed configuration and is not polled: %s", meter_id, exc.message)
        return changed

    async def _stop_bus(self, key: str) -> None:
        bus = self.buses.pop(key)
        bus.stopping.set()
        if bus.task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await bus.task
        bus.poller.link.close()

    async def save_health(self) -> None:
        """Copy every held bus's counters to the store (one transaction; a bus whose lease is gone is skipped)."""
        now = self._clock.now()
        async with self._store.transaction() as session:
            insert = (postgresql.insert if self._store.dialect == "postgresql" else sqlite.insert)(MeterPollHealth)
            for key, bus in sorted(self.buses.items()):
                if not bus.poller.health.meters or not await self.leases.still_held(session, key):
                    continue
                rows = [
                    {
                        "meter_id": meter_id,
                        "bus_key": key,
                        "owner": self.owner,
                        "reads": health.reads,
                        "errors": health.errors,
                        "timeouts": health.timeouts,
                        "crc_errors": health.crc_errors,
                        "last_answer_at": health.last_answer_at,
                        "last_error": health.last_error,
                        "dead": health.dead,
                        "updated_at": now,
                    }
                    for meter_id, health in sorted(bus.poller.health.meters.items())
                    # A meter deleted meanwhile has no row to point at; a grid meter's health stays in memory.
                    if meter_id in self._specs
                ]
                if not rows:
                    continue
                statement = insert.values(rows)
                changed = {name: statement.excluded[name] for name in rows[0] if name != "meter_id"}
                await session.execute(
                    statement.on_conflict_do_update(index_elements=[MeterPollHealth.meter_id], set_=changed)
                )

    async def run(self, stopping: asyncio.Event) -> None:
        loaded_at: datetime | None = None
        saved_at: datetime | None = None
        try:
            while not stopping.is_set():
                now = self._clock.now()
                load = loaded_at is None or (now - loaded_at).total_seconds() >= self._reload_interval_s
                try:
                    await self.reload(configuration=load)
                    if load:
                        loaded_at = now
                    await self.sessions.tick(self._clock.now())
                except Exception:
                    log.exception("meter configuration reload or lease round failed")
                if saved_at is None or (now - saved_at).total_seconds() >= self._health_interval_s:
                    try:
                        await self.save_health()
                        saved_at = now
                    except Exception:
                        log.exception("meter health could not be stored")
                for bus in self.buses.values():
                    if bus.task is None or bus.task.done():
                        bus.task = asyncio.create_task(bus.poller.run(bus.stopping), name=f"meters {bus.poller.key}")
                sleeper = asyncio.ensure_future(self._clock.sleep(self._lease_interval_s))
                waiter = asyncio.ensure_future(stopping.wait())
                await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
                for task in (sleeper, waiter):
                    task.cancel()
        finally:
            for key in list(self.buses):
                await self._stop_bus(key)
            with contextlib.suppress(Exception):
                await self.leases.release()

    async def health(self) -> list[ComponentHealth]:
        """One component per bus: degraded while any of its meters is dead; malformed meters are named."""
        components = []
        for key, bus in sorted(self.buses.items()):
            health = bus.poller.health
            meters = {}
            for meter_id, meter in health.meters.items():
                tracked = self.sessions.meters.get(meter_id)
                meters[meter_id] = {
                    **meter.to_json(),
                    "charging": bool(tracked and tracked.transaction_id is not None),
                    "transactionId": tracked.transaction_id if tracked else None,
                }
            level = Level.DEGRADED if any(m.dead for m in health.meters.values()) else Level.OK
            components.append(
                ComponentHealth(
                    f"meters {key}",
                    level,
                    {
                        "reads": health.reads,
                        "errors": health.errors,
                        "cycleSeconds": round(health.last_cycle_s, 4),
                        "timeout": bus.poller.settings.timeout_s,
                        "leaseOwner": self.owner,
                        "meters": meters,
                    },
                )
            )
        if self.invalid:
            components.append(ComponentHealth("meters configuration", Level.DEGRADED, {"invalid": dict(self.invalid)}))
        return components


class MeterMetrics(Collector):
    """Prometheus view of the pollers' counters, read at scrape time."""

    def __init__(self, polling: MeterPolling) -> None:
        self._polling = polling

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        reads = CounterMetricFamily("chargenet_meter_reads", "Meter polls attempted", labels=["meter", "bus"])
        errors = CounterMetricFamily("chargenet_meter_read_errors", "Meter polls that failed", labels=["meter", "bus"])
        timeouts = CounterMetricFamily(
            "chargenet_meter_read_timeouts", "Meter polls without a valid reply", labels=["meter", "bus"]
        )
        crc_errors = CounterMetricFamily(
            "chargenet_meter_read_crc_errors", "RTU meter polls answered with a broken CRC", labels=["meter", "bus"]
        )
        rejected = CounterMetricFamily(
            "chargenet_meter_readings_rejected", "Readings the detector found implausible", labels=["meter", "reason"]
        )
        last_good = GaugeMetricFamily(
            "chargenet_meter_last_good_reading_timestamp_seconds", "Time of the last good reading", labels=["meter"]
        )
        dead = GaugeMetricFamily("chargenet_meter_dead", "1 while the meter is backed off as dead", labels=["meter"])
        charging = GaugeMetricFamily("chargenet_meter_charging", "1 while a session is open", labels=["meter"])
        cycle = GaugeMetricFamily(
            "chargenet_meter_bus_cycle_seconds", "Duration of the last poll cycle", labels=["bus"]
        )
        for key, poller in self._polling.pollers.items():
            cycle.add_metric([key], poller.health.last_cycle_s)
            for meter_id, health in poller.health.meters.items():
                reads.add_metric([meter_id, key], health.reads)
                errors.add_metric([meter_id, key], health.errors)
                timeouts.add_metric([meter_id, key], health.timeouts)
                crc_errors.add_metric([meter_id, key], health.crc_errors)
                dead.add_metric([meter_id], 1.0 if health.dead else 0.0)
                if health.last_good_at is not None:
                    last_good.add_metric([meter_id], health.last_good_at.timestamp())
        for meter_id, tracked in self._polling.sessions.meters.items():
            charging.add_metric([meter_id], 1.0 if tracked.transaction_id is not None else 0.0)
            for reason, count in tracked.rejected.items():
                rejected.add_metric([meter_id, reason.value], count)
        yield from (reads, errors, timeouts, crc_errors, rejected, last_good, dead, charging, cycle)
