"""The session shell: feeds each poll result to the meter's detector and stores what it decides.

Theory of operation. Every meter has a detector state in memory. A poll result runs the pure detector; when it
starts or stops a session, one database transaction stores the session (before its StartTransaction) and
publishes the event through the outbox. Only after that commit does the in-memory state move on: if the
database fails, the same decision is made again on the next reading, so nothing is lost or doubled. Between
events the last good reading (the plausibility baseline) and an open session's last charging reading are
written at most every `persist_interval_s`, which is all a restart needs: `track` restores an open session in
the detector's reconciling phase, and the first good reading resumes it under the same transaction id or
closes it with reason Reboot.

While a session is open its readings are also its samples (its energy over time, for its chart): thinned to one
per `domain.samples.SPACING`, held in memory and written with the next of those writes, in its transaction (so
at least every `persist_interval_s`, and with the stop). A write that fails keeps them for the next one, up to
`MAX_PENDING_SAMPLES` a meter; a process that lost the bus drops them, as it drops everything else it knew.

With several processes on one database, every write is fenced by the meter's bus lease (`fence`): a process that
lost the bus writes nothing and its detector does not move; the poller worker then stops the bus and forgets its
meters, and whoever holds the lease restores them from the store.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain.samples import Sample, Thinning
from chargenet.meters import detect
from chargenet.meters import records as meter_sessions
from chargenet.meters.detect import (
    DetectorState,
    Mark,
    MeterReset,
    ReadingRejected,
    Rejection,
    SessionResumed,
    SessionStarted,
    SessionStopped,
    Step,
)
from chargenet.meters.errors import BusLeaseLost, MeterUnreachable
from chargenet.meters.readings import Reading
from chargenet.meters.spec import MeterSpec
from chargenet.outbox import Outbox
from chargenet.store import samples as sample_store
from chargenet.store.db import Store
from chargenet.store.models import MeterState

log = logging.getLogger(__name__)

MAX_PENDING_SAMPLES = 1000

Fence = Callable[[AsyncSession, str], Awaitable[bool]]
"""In the write's transaction: does this process still hold the bus (by key)?"""


@dataclass(slots=True)
class TrackedMeter:
    spec: MeterSpec
    state: DetectorState
    transaction_id: int | None = None
    persisted_at: datetime | None = None
    last_reading: Reading | None = None
    rejected: dict[Rejection, int] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)  # kept, not yet written
    resets: int = 0
    sessions_started: int = 0
    sessions_stopped: int = 0


class MeterSessions:
    """The poll sink of every bus: detector per meter, sessions and events in the store."""

    def __init__(
        self,
        store: Store,
        outbox: Outbox,
        clock: Clock,
        *,
        persist_interval_s: float = 60.0,
        fence: Fence | None = None,
    ) -> None:
        self._store = store
        self._fence = fence
        self._outbox = outbox
        self._clock = clock
        self._persist_interval_s = persist_interval_s
        self._thinning = Thinning()
        self.meters: dict[str, TrackedMeter] = {}

    async def track(self, specs: Iterable[MeterSpec]) -> None:
        """Follow exactly these meters. A meter seen for the first time is restored from the store: its open
        session (to be reconciled by the next good reading) and its last good reading (the baseline)."""
        wanted = {spec.meter_id: spec for spec in specs}
        for meter_id in set(self.meters) - set(wanted):
            del self.meters[meter_id]
        for meter_id, spec in wanted.items():
            if meter_id in self.meters:
                self.meters[meter_id].spec = spec
            else:
                self.meters[meter_id] = await self._restore(spec)

    def forget(self, meter_ids: Iterable[str]) -> None:
        """Drop what memory says about these meters; the next `track` restores them from the store."""
        for meter_id in meter_ids:
            self.meters.pop(meter_id, None)

    async def _restore(self, spec: MeterSpec) -> TrackedMeter:
        now = self._clock.now()
        async with self._store.transaction() as session:
            saved = await session.get(MeterState, spec.meter_id)
            open_session = await meter_sessions.open_session_of(session, spec.meter_id)
        baseline = Mark(saved.energy_wh, saved.read_at) if saved is not None else None
        if open_session is None:
            return TrackedMeter(spec, DetectorState(baseline=baseline))
        last_charging = Mark(open_session.last_charging_wh, open_session.last_charging_at)
        if baseline is None or baseline.energy_wh < last_charging.energy_wh:
            baseline = last_charging
        state = detect.restore(
            meter_start_wh=open_session.meter_start_wh,
            started_at=open_session.started_at,
            last_charging=last_charging,
            baseline=baseline,
            now=now,
        )
        log.info("meter %s: reconciling open session %s after a restart", spec.meter_id, open_session.transaction_id)
        return TrackedMeter(spec, state, transaction_id=open_session.transaction_id)

    async def on_reading(self, meter_id: str, reading: Reading, at: datetime) -> None:
        tracked = self.meters.get(meter_id)
        if tracked is None:
            return
        step = detect.on_reading(tracked.state, reading, at, tracked.spec.thresholds)
        await self._apply(tracked, step, at, reading)

    async def on_failure(self, meter_id: str, failure: MeterUnreachable, at: datetime) -> None:
        tracked = self.meters.get(meter_id)
        if tracked is None:
            return
        await self._apply(tracked, detect.tick(tracked.state, at, tracked.spec.thresholds), at, None)

    async def tick(self, at: datetime) -> None:
        """Age every meter (outages close even when a dead meter is polled rarely)."""
        for tracked in list(self.meters.values()):
            step = detect.tick(tracked.state, at, tracked.spec.thresholds)
            if step.events:
                await self._apply(tracked, step, at, None)
            else:
                tracked.state = step.state

    async def _apply(self, tracked: TrackedMeter, step: Step, at: datetime, reading: Reading | None) -> None:
        decisive = any(isinstance(e, SessionStarted | SessionStopped | SessionResumed) for e in step.events)
        persist_due = reading is not None and (
            tracked.persisted_at is None or (at - tracked.persisted_at).total_seconds() >= self._persist_interval_s
        )
        transaction_id = tracked.transaction_id
        self._sample(tracked, step, at, reading)
        if decisive or persist_due:
            try:
                transaction_id = await self._store_step(tracked, step, reading, transaction_id)
            except BusLeaseLost as lost:
                log.warning("%s; nothing written", lost.message)
                tracked.samples.clear()
                return
            tracked.persisted_at = at
            tracked.samples.clear()
            if tracked.transaction_id is not None and transaction_id != tracked.transaction_id:
                self._thinning.forget(tracked.transaction_id)
        # The detector moves on only once what it decided is committed.
        tracked.state = step.state
        tracked.transaction_id = transaction_id
        if reading is not None and reading.energy_wh is not None and not reading.sentinels:
            tracked.last_reading = reading
        for event in step.events:
            self._note(tracked, event)

    def _sample(self, tracked: TrackedMeter, step: Step, at: datetime, reading: Reading | None) -> None:
        """A good reading of an open session is one of its samples, if the thinning keeps it."""
        transaction_id = tracked.transaction_id
        if transaction_id is None or reading is None or reading.energy_wh is None or reading.sentinels:
            return
        if any(isinstance(event, ReadingRejected | MeterReset) for event in step.events):
            return
        if not self._thinning.keep(transaction_id, at):
            return
        if len(tracked.samples) >= MAX_PENDING_SAMPLES:
            del tracked.samples[0]
        tracked.samples.append(Sample(transaction_id, tracked.spec.station_id, at, reading.energy_wh, reading.power_w))

    async def _store_step(
        self, tracked: TrackedMeter, step: Step, reading: Reading | None, transaction_id: int | None
    ) -> int | None:
        spec = tracked.spec
        async with self._store.transaction() as session:
            if self._fence is not None and not await self._fence(session, spec.bus_key):
                raise BusLeaseLost(spec.meter_id, spec.bus_key)
            await sample_store.write(session, tracked.samples)
            for event in step.events:
                if isinstance(event, SessionStarted):
                    transaction_id = await meter_sessions.start_session(
                        session,
                        self._outbox,
                        spec,
                        meter_start_wh=event.meter_start_wh,
                        started_at=event.started_at,
                        at=event.at,
                    )
                elif isinstance(event, SessionStopped):
                    if transaction_id is None:
                        log.error("meter %s: a session stopped that was never stored", spec.meter_id)
                        continue
                    await meter_sessions.stop_session(
                        session,
                        self._outbox,
                        transaction_id,
                        meter_stop_wh=event.meter_stop_wh,
                        reason=event.reason,
                        at=event.at,
                    )
                    transaction_id = None
            new = step.state
            if transaction_id is not None and new.last_charging is not None:
                await meter_sessions.record_progress(session, transaction_id, new.last_charging)
            if new.baseline is not None:
                last = reading or tracked.last_reading
                await meter_sessions.save_state(
                    session,
                    spec.meter_id,
                    baseline=new.baseline,
                    max_current_a=last.max_current_a if last else None,
                    power_w=last.power_w if last else None,
                    phase=new.phase.value,
                )
        return transaction_id

    @staticmethod
    def _note(tracked: TrackedMeter, event: detect.DetectorEvent) -> None:
        meter_id = tracked.spec.meter_id
        if isinstance(event, ReadingRejected):
            tracked.rejected[event.rejection] = tracked.rejected.get(event.rejection, 0) + 1
            log.debug("meter %s: reading rejected (%s)", meter_id, event.rejection.value)
        elif isinstance(event, MeterReset):
            tracked.resets += 1
            log.warning(
                "meter %s: counter reset or replaced (%d Wh -> %d Wh); baseline moved",
                meter_id,
                event.previous_wh,
                event.new_wh,
            )
        elif isinstance(event, SessionStarted):
            tracked.sessions_started += 1
            log.info("meter %s: session %s started at %d Wh", meter_id, tracked.transaction_id, event.meter_start_wh)
        elif isinstance(event, SessionStopped):
            tracked.sessions_stopped += 1
            log.info("meter %s: session stopped at %d Wh (%s)", meter_id, event.meter_stop_wh, event.reason.value)
        elif isinstance(event, SessionResumed):
            log.info("meter %s: session %s resumed after a restart", meter_id, tracked.transaction_id)
