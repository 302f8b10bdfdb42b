"""The delivery engine of one process: fills lanes from the outbox, holds lane leases, drains each held lane.

Theory of operation.
- The supervisor loop runs the filler (outbox -> lanes, one transaction) as soon as a transaction of this
  process has published into the outbox (`outbox_committed`), as soon as another process's has (its
  notification on `store.notify.OUTBOX`, PostgreSQL), but no sooner than `fill_spacing` after its last round
  started, so a stream of commits is taken a round per spacing rather than a round per commit; and every
  `poll_interval` for events whose news did not come (SQLite, which has no notifications; a listening
  connection that was down). While the notifications reach this process the poll is only a fallback and
  slows to the lease round (`lease_interval`), which fills too. Every `lease_interval` it renews the leases
  this process holds, gives up those of disabled webhooks, and takes free or expired ones; at once when a
  change of a webhook that this process made commits (`webhooks.changes`). A lease lasts 10 s
  and is renewed every second, so the lanes of a process that died are taken over within about 11 s
  (decisions.md §4 asks for 15).
- Each held lane has one task that repeats `step`: read the lane (up to WINDOW entries), ask the lane core
  what is due, send the head if it is, persist the core's effect (only while the lease is still ours) and read
  the lane again in the same transaction. While heads are acknowledged, the step sends on from the entries it
  read and leaves the acknowledgements to the group committer, which records those of one lane together; so a
  busy lane sends at the receiver's pace rather than the store's, and lanes settling at the same moment share
  one transaction. The commit starts when a lane is about to wait (UNSETTLED_LIMIT ahead, the end of its
  window, any outcome but an acknowledgement), or ACK_DELAY after the acknowledgement was handed over (a slow
  receiver), whichever comes first: a busy lane commits up to UNSETTLED_LIMIT acknowledgements at a time.
  Every attempt goes into the delivery log in the transaction that records its outcome (the acknowledgements'
  group commit, a retry, a dead letter), never in a commit of its own; an attempt whose outcome is left to a new
  owner (the lease was lost) is not logged by this process. Retry waits sleep on the injected clock, so tests
  drive them with a ManualClock. A step that fails for a reason of our own (keys, credentials,
  the database) is tried again once after `poll_interval`, then at the retry policy's interval until one
  succeeds.
- A lane with nothing to send sleeps until it is woken: at once by this process's filler; when another process's
  filler queued entries for it, at once by that filler's notification on `store.notify.WEBHOOK_LANES`
  (PostgreSQL), else by the lease round (one query for all held lanes, either way). Idle lanes cost nothing
  between wake-ups, however many webhooks there are.
- Losing the lease, or the webhook being disabled, cancels the lane's task; an attempt in flight is cancelled
  with it and leaves the head as it was (lane Rule 7). A crash at any point leaves the store consistent: an
  event recorded as acknowledged is never sent again; one acknowledged by the receiver but not yet recorded
  (at most UNSETTLED_LIMIT a lane) is sent again by the next owner (partners de-duplicate by eventId).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.errors import NotFound
from chargenet.ids import process_owner
from chargenet.keys import CredentialCipher
from chargenet.outbox import outbox_committed
from chargenet.store.db import Store
from chargenet.store.group_commit import Failure, GroupCommit
from chargenet.store.models import Webhook
from chargenet.store.notify import OUTBOX, WEBHOOK_LANES
from chargenet.waiting import first_of
from chargenet.webhooks import queue
from chargenet.webhooks.changes import wake_on_changes
from chargenet.webhooks.endpoints import endpoint_of
from chargenet.webhooks.filler import FillReport, fill_once
from chargenet.webhooks.lane import (
    Acknowledge,
    Action,
    DeadLetter,
    Effect,
    Head,
    Idle,
    Paused,
    SendHead,
    WaitUntil,
    due,
    on_result,
)
from chargenet.webhooks.metrics import WebhookMetrics
from chargenet.webhooks.retry import RetryPolicy
from chargenet.webhooks.sender import AttemptResult, Endpoint, WebhookSender

log = logging.getLogger(__name__)

# A running lane reads this many entries at a time and sends on while they are acknowledged, with at most
# UNSETTLED_LIMIT acknowledgements waiting for their commit: what a crash can make it send a second time.
WINDOW = 32
UNSETTLED_LIMIT = 4  # decisions.md "Crash re-sends": at most 4 events a lane
# An acknowledgement's commit starts when its lane is about to wait (for that commit, or for anything else), or
# this long after it was handed over, whichever comes first: a busy lane's acknowledgements then commit up to
# UNSETTLED_LIMIT at a time rather than one or two, and one whose lane waits on a slow receiver is still written
# within milliseconds.
ACK_DELAY = 0.01
# Filler rounds start at least this far apart. Each round is a transaction of a few statements however many events it
# takes; at 500 events/s one round an event (events commit about 2 ms apart) took a fifth of the event loop and most
# of the SQLite writer's turns, and the lane fell behind. A round that is due sooner waits out the rest: an event
# waits at most this long for its round, and not at all when the last round began longer ago.
FILL_SPACING = 0.01


@dataclass(frozen=True, slots=True)
class LeaseLost:
    """This process no longer holds the lane."""


StepResult = Action | LeaseLost


@dataclass(slots=True)
class _Acknowledgements:
    """Acknowledged attempts of one lane waiting for the same commit."""

    snapshot: queue.LaneSnapshot
    acks: list[tuple[SendHead, AttemptResult, Acknowledge]]
    future: asyncio.Future[bool]


class DeliveryEngine:
    name = "webhooks"

    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        sender: WebhookSender,
        cipher: CredentialCipher,
        owner: str | None = None,
        metrics: WebhookMetrics | None = None,
        policy: RetryPolicy | None = None,
        poll_interval: float = 0.25,
        lease_interval: float = 1.0,
        fill_spacing: float = FILL_SPACING,
    ) -> None:
        self.store = store
        self.clock = clock
        self.sender = sender
        self.cipher = cipher
        self.owner = owner or process_owner()
        self.metrics = metrics
        self.policy = policy or RetryPolicy()
        self.poll_interval = poll_interval
        self.lease_interval = lease_interval
        self.fill_spacing = fill_spacing
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._wakes: dict[int, asyncio.Event] = {}
        self._idle: set[int] = set()  # lanes whose task waits for a wake-up with nothing to send
        self._endpoints: dict[str, tuple[datetime, Endpoint]] = {}
        self._poke = asyncio.Event()
        self._outbox = outbox_committed()
        self._next: dict[int, tuple[int, queue.LaneSnapshot]] = {}  # with the settings generation it was read in
        # Lanes settling at the same moment share one transaction, so N busy lanes cost one commit per batch
        # instead of N, and a lone lane waits for no one. Each lane's statements check its own lease; if any
        # statement of a batch fails, the whole batch rolls back and every lane in it sees the error (their
        # attempts are sent again). Lanes are settled in id order, the order in which the filler locks them, so
        # the two cannot deadlock. Each lane reports its own failure, so the committer logs none. On SQLite, whose
        # one writer takes every transaction in turn, the batches ride the edge's (`GroupCommit`'s `rides`): a lane
        # waiting for its acknowledgements' commit waits for the station batch that is committing anyway, not for a
        # turn of the writer and a sync of its own behind it.
        self._commits = GroupCommit(
            store,
            name="webhooks",
            failure=Failure.BATCH,
            ordered=True,
            delay=ACK_DELAY,
            log_failures=False,
            rides=True,
        )
        self._open_acks: dict[int, _Acknowledgements] = {}
        self._generation = 0
        self.spawn_lane_tasks = True
        wake_on_changes(self)  # a webhook changed by this process: `poke` once the change commits

    @property
    def active_lanes(self) -> set[int]:
        """Lanes whose task is running in this process."""
        return {lane_id for lane_id, task in self._tasks.items() if not task.done()}

    @property
    def idle_lanes(self) -> set[int]:
        """Lanes whose task sleeps with nothing to send until it is woken."""
        return set(self._idle)

    # --- one iteration of each part (what tests call) ---------------------------------------------------------

    async def fill_once(self) -> FillReport:
        report = await fill_once(self.store, self.clock)
        for lane_id in report.filled_lanes:
            wake = self._wakes.get(lane_id)
            if wake is not None:
                wake.set()
        return report

    async def lease_once(self) -> set[int]:
        """Renew, give up and take leases; start and stop lane tasks to match. Returns the lanes held."""
        # Acknowledgements waiting for their commit are written while their leases are still held: giving up
        # the lane of a webhook just disabled would otherwise leave them unrecorded, and sent again.
        await self.settled()
        now = self.clock.now()
        # Lanes sending ahead from a window they read re-read the lane (and the webhook's settings) now.
        self._generation += 1
        async with self.store.transaction() as session:
            held = await queue.renew_leases(session, self.owner, now)
            held |= set(await queue.acquire_leases(session, self.owner, now))
            # An idle lane is woken by this process's filler at once; entries another process's filler added are
            # found here (or on its notification, `wake_filled`), by one query for all lanes rather than one a
            # second per idle lane.
            waiting = await queue.lanes_with_entries(session, self.owner)
        for lane_id in list(self._tasks):
            if lane_id not in held:
                self._stop_lane(lane_id)
        if self.spawn_lane_tasks:
            for lane_id in held:
                task = self._tasks.get(lane_id)
                if task is None or task.done():
                    self._wakes[lane_id] = asyncio.Event()
                    self._tasks[lane_id] = asyncio.create_task(self._drain(lane_id), name=f"webhook-lane-{lane_id}")
        for lane_id in waiting & self._idle:
            self._wakes[lane_id].set()
        if self.metrics is not None:
            await self.metrics.refresh(self.store)
        return held

    async def wake_filled(self) -> set[int]:
        """Wake the idle lanes this process holds that have entries (another process's filler put them there).
        Returns the lanes woken."""
        if not self._idle:
            return set()
        async with self.store.transaction() as session:
            waiting = await queue.lanes_with_entries(session, self.owner)
        woken = waiting & self._idle
        for lane_id in woken:
            self._wakes[lane_id].set()
        return woken

    async def step(self, lane_id: int, *, window: int = 1) -> StepResult:
        """Read the lane, send its head if it is due, persist the outcome.

        The transaction that persists an outcome also reads the lane again; that snapshot serves the very
        next step of the lane (and only that one), so a busy lane costs one transaction per delivery.

        With a `window` above 1 the lane is read `window` entries at a time, and while each head is
        acknowledged the step goes on to the entry behind it without waiting for the acknowledgement's commit:
        acknowledgements are recorded by group commits running beside the sends, at most `UNSETTLED_LIMIT` at
        a time. Anything but an acknowledgement, the end of the window, or a settings change (see `poke`)
        waits for all of them before its own outcome is persisted, so the lane's stored state always follows
        the core's decisions in order. A crash can lose only the record of acknowledgements still unsettled:
        those events are sent again (partners de-duplicate by eventId), none is lost.
        """
        generation = self._generation
        cached = self._next.pop(lane_id, None)
        snapshot = cached[1] if cached is not None and cached[0] == generation else None
        if snapshot is None:
            async with self.store.transaction() as session:
                snapshot = await queue.snapshot(session, lane_id, self.owner, window)
        if snapshot is None:
            return LeaseLost()
        unsettled: deque[asyncio.Future[bool]] = deque()
        try:
            return await self._send_window(snapshot, generation, unsettled, window)
        except BaseException:
            # Whatever ends the step, its acknowledgements are settled before anything else is written for the
            # lane, so a later step's retry state is never overwritten by them.
            self._commits.flush()
            await asyncio.gather(*(asyncio.shield(f) for f in unsettled), return_exceptions=True)
            raise

    async def _send_window(
        self,
        snapshot: queue.LaneSnapshot,
        generation: int,
        unsettled: deque[asyncio.Future[bool]],
        window: int,
    ) -> StepResult:
        while True:
            action = due(snapshot.view, self.clock.now())
            if not isinstance(action, SendHead):
                return action if await self._all_settled(unsettled) else LeaseLost()
            assert snapshot.body is not None
            endpoint = await self._endpoint(snapshot)
            result = await self.sender.send(endpoint, snapshot.body.encode())
            effect = on_result(action.head, result.outcome, result.ended_at, self.policy)
            if isinstance(effect, Acknowledge) and snapshot.following and generation == self._generation:
                unsettled.append(self._settle_in_background(snapshot, action, result, effect))
                while unsettled[0].done() and not unsettled[0].cancelled() and unsettled[0].exception() is None:
                    if not unsettled.popleft().result():  # committed, or found the lease gone
                        await self._all_settled(unsettled)
                        return LeaseLost()
                if len(unsettled) >= UNSETTLED_LIMIT:
                    self._commits.flush()
                    if not await asyncio.shield(unsettled.popleft()):
                        await self._all_settled(unsettled)
                        return LeaseLost()
                if any(task.done() and not task.result() for task in unsettled):
                    await self._all_settled(unsettled)
                    return LeaseLost()
                snapshot = _behind_head(snapshot)
                continue
            if not await self._all_settled(unsettled):
                return LeaseLost()
            return await self._settle(snapshot, action, result, effect, window)

    async def _settle(
        self, snapshot: queue.LaneSnapshot, action: SendHead, result: AttemptResult, effect: Effect, window: int
    ) -> StepResult:
        """Persist the outcome of one attempt and read the lane again in the same (group) transaction."""
        lane_id, body = snapshot.lane_id, snapshot.body or ""

        async def settle(session: AsyncSession) -> tuple[bool, queue.LaneSnapshot | None]:
            kept = await queue.apply_effect(
                session, snapshot, self.owner, effect, now=result.ended_at, body=body, request_ms=result.duration_ms
            )
            if kept:
                await queue.record_attempts(
                    session, snapshot.webhook_id, snapshot.event_type, [logged_attempt(action, result)]
                )
            return kept, await queue.snapshot(session, lane_id, self.owner, window) if kept else None

        generation = self._generation
        kept, following = await self._commits.run(settle, key=lane_id)
        if following is not None:
            self._next[lane_id] = (generation, following)
        self._record(snapshot.webhook_id, snapshot.event_type, action, result, effect, kept)
        return action if kept else LeaseLost()

    def _settle_in_background(
        self, snapshot: queue.LaneSnapshot, action: SendHead, result: AttemptResult, effect: Acknowledge
    ) -> asyncio.Future[bool]:
        """Record an acknowledgement in the next group commit without waiting for it; True if the lease held.

        Acknowledgements of one lane that wait for the same commit are recorded together, in one update of the
        lane and one delete of its entries. The future is not tied to the lane's task: a lane cancelled
        (disabled, lease lost) still records what was delivered.
        """
        lane_id = snapshot.lane_id
        group = self._open_acks.get(lane_id)
        # A group whose commit failed before its record ran was never sealed: it takes nothing more.
        if group is None or group.future.done():

            async def record(session: AsyncSession) -> bool:
                if self._open_acks.get(lane_id) is sealed:
                    del self._open_acks[lane_id]  # later acknowledgements wait for the next commit
                _, last, _ = sealed.acks[-1]
                return await queue.acknowledge(
                    session,
                    sealed.snapshot,
                    self.owner,
                    [ack.entry_id for _, _, ack in sealed.acks],
                    now=last.ended_at,
                    request_ms=last.duration_ms,
                    attempts=[logged_attempt(action, result) for action, result, _ in sealed.acks],
                )

            # Committed with the next batch someone waits for, or ACK_DELAY from now.
            sealed = group = _Acknowledgements(snapshot, [], self._commits.submit(record, key=lane_id, now=False))
            self._open_acks[lane_id] = group
            group.future.add_done_callback(lambda future: self._recorded(sealed, future))
        group.acks.append((action, result, effect))
        return group.future

    def _recorded(self, group: _Acknowledgements, future: asyncio.Future[bool]) -> None:
        if self._open_acks.get(group.snapshot.lane_id) is group:
            del self._open_acks[group.snapshot.lane_id]
        if future.cancelled():
            return
        if future.exception() is not None:
            # The lane that queued it re-reads its state after the error; a lane already gone leaves the events
            # to the next owner, who sends them again.
            log.warning("recording webhook acknowledgements failed", exc_info=future.exception())
            return
        snapshot = group.snapshot
        for action, result, effect in group.acks:
            self._record(snapshot.webhook_id, snapshot.event_type, action, result, effect, future.result())

    async def _all_settled(self, tasks: deque[asyncio.Future[bool]]) -> bool:
        self._commits.flush()
        return await _all_settled(tasks)

    # --- the loops ----------------------------------------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        last_lease = last_fill = float("-inf")
        listener = self.store.listener
        notified = listener.subscribe(OUTBOX)
        filled = listener.subscribe(WEBHOOK_LANES)
        try:
            while not stopping.is_set():
                try:
                    if time.monotonic() - last_lease >= self.lease_interval or self._poke.is_set():
                        self._poke.clear()
                        filled.clear()  # the lease round wakes the lanes that have entries
                        await self.lease_once()
                        last_lease = time.monotonic()
                    if filled.is_set():
                        filled.clear()
                        await self.wake_filled()
                    last_fill = time.monotonic()
                    await self.fill_once()
                except Exception:
                    log.exception("webhook supervisor iteration failed")
                poll = self.poll_interval
                if listener.listening(OUTBOX):
                    poll = max(poll, self.lease_interval)
                # Not past the next lease round, so leases are renewed on time however long the poll (nor shorter
                # than `poll_interval`, so a failing round is not retried in a spin).
                pause = min(poll, max(self.poll_interval, last_lease + self.lease_interval - time.monotonic()))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(_any(stopping, self._poke, self._outbox, notified, filled), pause)
                # Rounds at least `fill_spacing` apart: events committed meanwhile go into the round that follows.
                spacing = last_fill + self.fill_spacing - time.monotonic()
                if spacing > 0 and not stopping.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stopping.wait(), spacing)
                self._outbox.clear()
                notified.clear()
        finally:
            listener.unsubscribe(OUTBOX, notified)
            listener.unsubscribe(WEBHOOK_LANES, filled)
            await self.shutdown()

    async def settled(self) -> None:
        """Wait until everything handed to the group committer so far is committed or has failed (not what busy
        lanes hand over meanwhile, which could go on for ever)."""
        await asyncio.sleep(0)  # lets acknowledgements just handed over reach the batch
        await self._commits.settled()

    def poke(self) -> None:
        """Re-read leases and webhook settings now rather than at the next lease round: called once a change of a
        webhook made by this process has committed (`webhooks.changes`)."""
        self._generation += 1
        self._poke.set()

    async def shutdown(self) -> None:
        for lane_id in list(self._tasks):
            self._stop_lane(lane_id)
        await asyncio.sleep(0)
        # The acknowledgements still waiting are recorded before the leases go.
        await self.settled()
        with contextlib.suppress(Exception):
            async with self.store.transaction() as session:
                await queue.release_leases(session, self.owner)
        await self.sender.aclose()

    def _stop_lane(self, lane_id: int) -> None:
        task = self._tasks.pop(lane_id, None)
        self._wakes.pop(lane_id, None)
        self._idle.discard(lane_id)
        self._next.pop(lane_id, None)
        if task is not None and not task.done():
            task.cancel()

    async def _drain(self, lane_id: int) -> None:
        wake = self._wakes[lane_id]
        failures = 0
        while True:
            try:
                result = await self.step(lane_id, window=WINDOW)
            except Exception:
                failures += 1
                log.exception(
                    "webhook lane step failed", extra={"fields": {"laneId": lane_id, "consecutiveFailures": failures}}
                )
                await self.clock.sleep(self._failed_step_delay(failures))
                continue
            failures = 0
            if isinstance(result, LeaseLost | Paused):
                self._tasks.pop(lane_id, None)
                return
            if isinstance(result, WaitUntil):
                delay = (result.at - self.clock.now()).total_seconds()
                await first_of(self.clock.sleep(delay), wake.wait())
                wake.clear()
            elif isinstance(result, Idle):
                # A wake-up that came while the step ran means entries its snapshot (perhaps read by the step
                # before) may not show: read the lane again at once rather than sleep on an empty view.
                self._idle.add(lane_id)
                try:
                    await wake.wait()
                finally:
                    self._idle.discard(lane_id)
                wake.clear()

    def _failed_step_delay(self, failures: int) -> float:
        # A failure of our own (keys, credentials, the database) says nothing about the receiver, and a step can
        # fail after the receiver answered (a commit after a 2xx): one quick second try for a passing glitch, then
        # the pace of the retry policy, so a lasting fault neither hammers the receiver nor floods the log.
        return self.poll_interval if failures == 1 else self.policy.interval.total_seconds()

    async def _endpoint(self, snapshot: queue.LaneSnapshot) -> Endpoint:
        cached = self._endpoints.get(snapshot.webhook_id)
        if cached is not None and cached[0] == snapshot.webhook_version:
            return cached[1]
        async with self.store.transaction() as session:
            webhook = await session.get(Webhook, snapshot.webhook_id)
        if webhook is None:
            self.sender.forget(snapshot.webhook_id)
            raise NotFound("webhook", snapshot.webhook_id)
        if cached is not None:
            self.sender.forget(webhook.id)
        endpoint = endpoint_of(webhook, self.cipher)
        self._endpoints[webhook.id] = (webhook.updated_at, endpoint)
        return endpoint

    def _record(
        self, webhook_id: str, event_type: str, action: SendHead, result: AttemptResult, effect: object, kept: bool
    ) -> None:
        if self.metrics is not None:
            self.metrics.attempt(webhook_id, event_type, result)
        if isinstance(effect, DeadLetter) and kept:
            log.error(
                "webhook event dead-lettered after its last retry",
                extra={
                    "fields": {
                        "exceptionType": effect.exception_type,
                        "webhookId": webhook_id,
                        "eventType": event_type,
                        "eventId": effect.event_id,
                        "attempts": effect.attempts,
                        "error": effect.error,
                    }
                },
            )
        elif not kept:
            log.warning(
                "webhook lane lease lost during an attempt; its outcome is left to the new owner",
                extra={"fields": {"webhookId": webhook_id, "eventType": event_type, "eventId": action.head.event_id}},
            )


def logged_attempt(action: SendHead, result: AttemptResult) -> queue.Attempt:
    """An attempt of a lane as the delivery log keeps it."""
    return queue.Attempt(event_id=action.head.event_id, attempt=action.attempt, sent=result.sent())


def _behind_head(snapshot: queue.LaneSnapshot) -> queue.LaneSnapshot:
    """The lane as it stands once its head is acknowledged: the next entry of the window is the new head."""
    following = snapshot.following
    view = snapshot.view
    head = Head(following[0].entry_id, following[0].event_id)
    return replace(
        snapshot, view=replace(view, size=view.size - 1, head=head), body=following[0].body, following=following[1:]
    )


async def _all_settled(tasks: deque[asyncio.Future[bool]]) -> bool:
    """Wait for every background acknowledgement; False if any found the lease gone. Re-raises a failed commit."""
    # Shielded: cancelling the lane's task must not cancel futures other lanes' tasks may wait on.
    results = await asyncio.gather(*(asyncio.shield(task) for task in tasks), return_exceptions=True)
    tasks.clear()
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return all(results)


async def _any(*events: asyncio.Event) -> None:
    await first_of(*(e.wait() for e in events))
