"""Group commit: many small units of work share one transaction, so one commit (one fsync) serves a whole batch,
and each unit's caller learns its outcome only once the batch's commit has decided it.

Two kinds of unit, which may share a batch:
- `unit()`: the body of an `async with group.unit() as session:` block, run in the CALLER's task while the
  committer holds the batch's transaction open (the edge: a station message's database work, written inline).
- `submit(work)` / `run(work)`: a function of the session run inside the committer's task, so it is written
  even when the task that handed it over is cancelled meanwhile (the webhook engine's acknowledgements).
`bulk(handler, item)` hands an item to a handler that writes all items of a batch with a few multi-row statements;
the handlers run after the batch's units (`submit_bulk`: the same without waiting, and, like `submit`, without
asking for a commit now if need be). From the body of a `unit()`, `submit_bulk_with_unit` hands over an item that
belongs with the unit's writes: it joins the bulk writes of the unit's own batch once the body has ended well, and
is dropped with a unit that fails, so that a write the unit decides costs its share of a multi-row statement
rather than statements of its own in the unit.

The failure policy is a parameter (`Failure`):
- `Failure.UNIT`: each unit (and each bulk handler) runs in a savepoint of its own, so one that fails (a unique
  constraint, a value the column cannot hold) is rolled back alone and its caller gets its exception, while the
  rest of the batch commits. A bulk handler that fails is run again for each of its items alone, so only the
  items that fail by themselves fail. A unit that stops in the middle of a statement (its caller was cancelled) or whose
  connection is gone may leave the session unusable: the batch then ends at that unit, is rolled back and
  discarded, and the units still waiting get a new transaction; nothing inherits a broken session.
- `Failure.BATCH`: no savepoints; if anything in the batch fails, the whole batch rolls back and every unit in it
  gets the error (for units whose writes only make sense together, or which check their own preconditions). A
  unit is in a batch once the batch has taken it: an ordered batch takes its units when it starts, an unordered
  one as it goes, so units it had not reached yet get a new transaction.

Options:
- `ordered`: a batch is fixed when it starts and runs its units in the order of their `key` (arrival order among
  equal keys): give the order in which other writers lock the same rows, and the two cannot deadlock. Units
  arriving meanwhile wait for the next batch. Unordered, a batch takes units in arrival order until none is
  waiting, including those arriving while it runs: under load it grows to what arrives during one batch, which
  is what makes group commit pay, and a lone unit waits for nobody.
- `max_batch`: at most this many units a batch; the rest start the next one at once.
- `delay`: work submitted with `now=False` is committed when someone waits for it (`flush`, `settled`), with a
  unit that asks for a commit now, or `delay` seconds after it was handed over, whichever comes first: work that
  nobody waits for yet gathers company instead of paying a commit of its own.
- `carries` and `rides`, on SQLite only, where every transaction takes the one writer in turn: a committer that
  `rides` (under `Failure.BATCH`) has its batch written in a batch of the store's committer that `carries`
  (one a store, in this process), right before that batch commits, rather than waiting behind it for a turn of the
  writer and a sync of its own. While a batch of the carrier runs, the rider starts none of its own: what it is
  handed meanwhile, flushed or not, goes into that batch, or into the next one the carrier runs at once; once the
  carrier has no batch to run, the rider commits on its own again. The rider's batch runs in one savepoint of the
  carrier's transaction: if anything in it fails, that savepoint is rolled back and every unit of the rider's batch
  gets the error, while the carrier's units commit as their own policy says; if the carrier's commit fails, both
  fail. On PostgreSQL, whose writers do not take turns, each commits on its own as before.

When a batch starts and what it takes is plain code (`Batching`); `GroupCommit` runs it against a `Store`.
Units are short: database work only, never a network call.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import logging
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar

from sqlalchemy.exc import DBAPIError, PendingRollbackError
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.store.db import Store

log = logging.getLogger(__name__)

T = TypeVar("T")
U = TypeVar("U")
G = TypeVar("G", bound=Hashable)
M = TypeVar("M")

Work = Callable[[AsyncSession], Awaitable[T]]
BulkHandler = Callable[[AsyncSession, list[Any]], Awaitable[None]]


class Failure(Enum):
    """What one failing unit does to the others of its batch."""

    UNIT = "unit"  # rolled back alone, in its own savepoint: the rest of the batch commits
    BATCH = "batch"  # the whole batch rolls back, and every unit in it gets the error


class Batching(Generic[U, G, M]):
    """When a batch starts and which units it takes, in which order: plain code, no I/O.

    Units are added with a key; members of bulk groups are added to the group of a key of their own (a handler)
    and are taken, group by group, after a batch's units. A batch is due once something waits and a flush was
    asked for since the last batch started. Units a batch leaves behind (it was full, or its session was
    discarded) asked for a commit already, so they start the next batch without waiting for another flush.
    """

    def __init__(self, *, ordered: bool = False, max_batch: int | None = None) -> None:
        if max_batch is not None and max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.ordered = ordered
        self.max_batch = max_batch
        # A deque: an unordered batch takes its units from the front, one by one (thousands in a storm).
        self._waiting: deque[tuple[int, U]] = deque()
        self._groups: dict[G, list[M]] = {}
        self._batch: deque[tuple[int, U]] = deque()  # ordered: the rest of the batch fixed at its start
        self._taken = 0
        self._flush = False

    def add(self, unit: U, key: int = 0) -> None:
        self._waiting.append((key, unit))

    def add_to_group(self, group: G, member: M) -> None:
        self._groups.setdefault(group, []).append(member)

    def flush(self) -> None:
        """Someone waits for what is waiting: the next batch starts as soon as it can."""
        self._flush = True

    def due(self) -> bool:
        return self._flush and bool(self._waiting or self._groups)

    def start(self) -> None:
        """A batch starts: it answers every flush asked for so far."""
        self._flush = False
        self._taken = 0
        if self.ordered:
            # Stable: units of one key keep the order they were handed over in.
            waiting = sorted(self._waiting, key=lambda entry: entry[0])
            cut = len(waiting) if self.max_batch is None else self.max_batch
            self._batch = deque(waiting[:cut])
            self._waiting = deque(waiting[cut:])
            if self._waiting:
                self._flush = True

    def next(self) -> U | None:
        """The batch's next unit, or None once it has taken all it will."""
        if self.ordered:
            return self._batch.popleft()[1] if self._batch else None
        if not self._waiting:
            return None
        if self.max_batch is not None and self._taken >= self.max_batch:
            self._flush = True
            return None
        self._taken += 1
        return self._waiting.popleft()[1]

    def take_groups(self) -> dict[G, list[M]]:
        """The bulk groups, for the batch that has taken its last unit."""
        groups, self._groups = self._groups, {}
        return groups

    def ride(self) -> bool:
        """A carrier's batch takes what waits here, flushed or not (it commits anyway): starts a batch if anything
        waits. False when nothing does."""
        if not (self._waiting or self._groups):
            return False
        self._flush = True
        self.start()
        return True

    def abandon(self) -> list[U]:
        """The batch failed: the units it fixed at its start and had not taken yet fail with it; those it never
        took (unordered) are left behind, and start the next batch at once."""
        rest, self._batch = [unit for _, unit in self._batch], deque()
        if self._waiting and not self.ordered:
            self._flush = True
        return rest

    def requeue(self) -> None:
        """The batch was discarded: the units it had not taken yet go first into the next one, at once."""
        self._waiting.extendleft(reversed(self._batch))
        self._batch = deque()
        self._flush = True

    def empty(self) -> bool:
        return not (self._batch or self._waiting or self._groups)

    def pending(self) -> tuple[list[U], list[M]]:
        """The units and group members not taken by a batch yet."""
        units = [unit for _, unit in (*self._batch, *self._waiting)]
        return units, [member for members in self._groups.values() for member in members]


class _BodyFailed(Exception):
    """The body of a `unit()` raised; the caller re-raises the original.

    `reusable` is False when the body may have stopped in the middle of a statement (it was cancelled) or the
    connection under it is gone: the batch's session is then suspect, and no later unit gets it."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error
        self.reusable = _leaves_session_reusable(error)


def _leaves_session_reusable(exc: BaseException) -> bool:
    if not isinstance(exc, Exception):
        return False  # cancelled: a statement may be half-way, the driver's connection in an unknown state
    if isinstance(exc, PendingRollbackError):
        return False
    return not (isinstance(exc, DBAPIError) and exc.connection_invalidated)


class _SessionDiscarded(Exception):
    """The batch's transaction was rolled back without a commit because a unit left its session suspect."""

    def __init__(self) -> None:
        super().__init__("the unit of work was rolled back with its batch: another unit broke the batch's session")


class _BatchFailed(Exception):
    """Under `Failure.BATCH`, something in the batch failed: every unit of it gets `error`."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error


@dataclass(slots=True, eq=False)
class _Lease:
    """A unit whose body runs in its caller's task."""

    handoff: asyncio.Future[AsyncSession]
    finished: asyncio.Future[None]
    outcome: asyncio.Future[None]
    with_unit: list[tuple[BulkHandler, _Item]] = field(default_factory=list)  # `submit_bulk_with_unit`


@dataclass(slots=True, eq=False)
class _Job:
    """A unit whose work runs in the committer's task."""

    work: Work[Any]
    outcome: asyncio.Future[Any]
    value: Any = None


# Items in the order they were handed over, whichever way: a bulk handler may rely on it (the last status of a
# connector in a batch wins), and an item handed over with a unit joins its group only when the batch runs.
_handed_over = itertools.count()


@dataclass(slots=True, eq=False)
class _Item:
    item: Any
    outcome: asyncio.Future[None]
    order: int = field(default_factory=lambda: next(_handed_over))


@dataclass(slots=True, eq=False)
class _Ride:
    """A rider's batch written in a carrier's transaction: settled once the carrier's batch is."""

    rider: GroupCommit
    done: list[_Unit]
    written: list[_Item]
    failed: bool = False  # its savepoint was rolled back, and its units got the error


class _Writer:
    """The committers sharing a SQLite store's one writer in this process: the carrier and its riders. Held weakly
    (a committer holds its store), so a store and its committers that nobody uses any more go."""

    def __init__(self) -> None:
        self._carrier: weakref.ref[GroupCommit] | None = None
        self.riders: weakref.WeakSet[GroupCommit] = weakref.WeakSet()

    @property
    def carrier(self) -> GroupCommit | None:
        return self._carrier() if self._carrier is not None else None

    @carrier.setter
    def carrier(self, carrier: GroupCommit | None) -> None:
        self._carrier = weakref.ref(carrier) if carrier is not None else None


_writers: weakref.WeakKeyDictionary[Store, _Writer] = weakref.WeakKeyDictionary()


_Unit = _Lease | _Job

# The unit whose body runs in this task, and its committer: what `submit_bulk_with_unit` ties an item to.
_BODY: contextvars.ContextVar[tuple[GroupCommit, _Lease] | None] = contextvars.ContextVar("unit_body", default=None)


def _outcomes(units: list[_Unit]) -> list[asyncio.Future[Any]]:
    """The futures that settle with `units`: their own and those of the bulk items tied to them."""
    futures: list[asyncio.Future[Any]] = []
    for unit in units:
        futures.append(unit.outcome)
        if isinstance(unit, _Lease):
            futures.extend(item.outcome for _, item in unit.with_unit)
    return futures


def _with_units(groups: dict[BulkHandler, list[_Item]], done: list[_Unit]) -> dict[BulkHandler, list[_Item]]:
    """The batch's bulk groups with the items its units that ended well tied to them, each group in the order its
    items were handed over."""
    joined: set[BulkHandler] = set()
    for unit in done:
        if isinstance(unit, _Lease):
            for handler, item in unit.with_unit:
                groups.setdefault(handler, []).append(item)
                joined.add(handler)
    for handler in joined:
        groups[handler].sort(key=_order)
    return groups


def _order(item: _Item) -> int:
    return item.order


def _taken(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _settle(futures: list[asyncio.Future[Any]], error: BaseException) -> None:
    for future in futures:
        if not future.done():
            future.set_exception(error)


class GroupCommit:
    """One group committer over `store` (see the module's docstring for the policy and the options)."""

    def __init__(
        self,
        store: Store,
        *,
        name: str,
        failure: Failure,
        ordered: bool = False,
        max_batch: int | None = None,
        delay: float = 0.0,
        log_failures: bool = True,
        carries: bool = False,
        rides: bool = False,
    ) -> None:
        if rides and failure is not Failure.BATCH:
            raise ValueError("a rider's batch runs in one savepoint of the carrier's, and fails as a whole")
        self._store = store
        self._name = name
        self._failure = failure
        self._delay = delay
        self._log_failures = log_failures
        self._batching: Batching[_Unit, BulkHandler, _Item] = Batching(ordered=ordered, max_batch=max_batch)
        self._current: list[_Unit] = []  # taken by the batch running now
        self._bulk_current: list[_Item] = []
        self._bulk_taken: list[_Item] = []  # taken by the batch running now, written or not yet
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self.batches = 0  # committed
        self.units = 0  # committed with them
        self.carried = 0  # of those batches, written in a carrier's batch
        self._carrying = False  # carries riders, and a batch of its own runs or is about to
        self._writer: _Writer | None = None
        if (carries or rides) and store.dialect == "sqlite":
            self._writer = _writers.setdefault(store, _Writer())
            if carries:
                self._writer.carrier = self
            else:
                self._writer.riders.add(self)

    @asynccontextmanager
    async def unit(self, *, key: int = 0) -> AsyncIterator[AsyncSession]:
        """`async with group.unit() as session:` like `store.transaction()`, but sharing the commit of a batch;
        the block's effects are durable when the `async with` statement completes."""
        loop = asyncio.get_running_loop()
        lease = _Lease(loop.create_future(), loop.create_future(), loop.create_future())
        self._batching.add(lease, key)
        self.flush()
        try:
            session = await lease.handoff
        except BaseException:
            lease.outcome.cancel()  # nobody waits for it: `settled` must not either
            if lease.handoff.done() and not lease.handoff.cancelled():
                # Cancelled just after its turn came: the body never ran, and the batch must not wait for it.
                lease.finished.set_result(None)
            raise
        body = _BODY.set((self, lease))
        try:
            yield session
            # Flushed here, in the caller's task: what the body left pending (a row whose key another process
            # took meanwhile) fails this unit alone, not the savepoint's release in the batch.
            await session.flush()
        except BaseException as exc:
            lease.outcome.cancel()
            for _, item in lease.with_unit:
                item.outcome.cancel()  # dropped with the unit
            lease.finished.set_exception(_BodyFailed(exc))
            raise
        finally:
            _BODY.reset(body)
        lease.finished.set_result(None)
        try:
            await lease.outcome
        except BaseException:
            # The batch failed, or the caller was cancelled while it committed: whoever handed items over with the
            # unit will not look at them, so their outcome is taken here rather than reported as never retrieved.
            for _, item in lease.with_unit:
                item.outcome.add_done_callback(_taken)
            raise

    def submit(self, work: Work[T], *, key: int = 0, now: bool = True) -> asyncio.Future[T]:
        """Hand `work` over to run in the committer's task in the next batch; the future has its result once
        the batch has committed, or the error that failed it. With `now=False` the commit may wait (`delay`)."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._batching.add(_Job(work, future), key)
        self._asked(now)
        return future

    def _asked(self, now: bool) -> None:
        if now:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._delay, self.flush)

    async def run(self, work: Work[T], *, key: int = 0) -> T:
        """`submit(work)` and wait for its commit."""
        return await self.submit(work, key=key)

    async def bulk(self, handler: BulkHandler, item: Any) -> None:
        """Hand `item` to `handler`, which writes all items of a batch with a few multi-row statements; returns
        once the batch has committed. Raises what the handler raised: under `Failure.UNIT` only for the items that
        fail when written alone, under `Failure.BATCH` for every item of the batch."""
        await self.submit_bulk(handler, item)

    def submit_bulk(self, handler: BulkHandler, item: Any, *, now: bool = True) -> asyncio.Future[None]:
        """`bulk` without waiting: the future is done once the batch has committed, or has the handler's error.
        With `now=False` the commit may wait (`delay`), as for `submit`."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._batching.add_to_group(handler, _Item(item, future))
        self._asked(now)
        return future

    def submit_bulk_with_unit(self, handler: BulkHandler, item: Any) -> asyncio.Future[None]:
        """From the body of one of this committer's `unit()`s: `submit_bulk` for an item that belongs with the
        unit's writes. It is written with the bulk writes of the unit's own batch (so committed with the unit, in
        the same transaction) once the body has ended well; a unit that fails drops it (its future is cancelled),
        a batch that fails fails it too. Its handler runs in a savepoint of its own, after the batch's units, as
        for any bulk item: the future has the handler's error if it fails, the unit's writes committing all the
        same."""
        current = _BODY.get()
        if current is None or current[0] is not self or current[1].finished.done():
            # `finished.done()`: a task started in the body carries its context past the body's end, when the
            # batch may have taken the unit's items already.
            raise RuntimeError("an item is handed over with a unit from the body of that unit")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        current[1].with_unit.append((handler, _Item(item, future)))
        return future

    def flush(self) -> None:
        """Commit what waits without delay: called before anything waits for it."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._batching.flush()
        self._release()

    def _carried(self) -> bool:
        """A carrier's batch runs, or is about to: it takes what this rider has waiting."""
        writer = self._writer
        return writer is not None and writer.carrier is not None and writer.carrier._carrying

    async def settled(self) -> None:
        """Wait until everything handed over so far is committed or has failed (not what is handed over
        meanwhile, which could go on for ever)."""
        self.flush()
        units, items = self._batching.pending()
        taken = (*self._bulk_current, *self._bulk_taken)
        pending = [entry.outcome for entry in (*self._current, *units, *taken, *items)]
        await asyncio.gather(*(asyncio.shield(future) for future in pending), return_exceptions=True)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        # Given up only once its batch has ended: until then a rider that started a batch of its own meanwhile
        # would have that batch's units settled by the ride the carrier's batch is still ending.
        writer = self._writer
        if writer is not None and writer.carrier is self:
            writer.carrier = None
        if self._carrying:
            # Cancelled before its batch began: the riders that left their work to it commit it on their own.
            self._carrying = False
            self._release_riders()

    def _start(self) -> None:
        # In a context of its own: the committer serves every caller, so it must not inherit the station id (or
        # the request id) of the caller that happened to start it, which every line it logs would then carry.
        if self._writer is not None and self._writer.carrier is self:
            self._carrying = True
        self._task = asyncio.create_task(self._loop(), name=f"{self._name}-group-commit", context=contextvars.Context())

    async def _loop(self) -> None:
        try:
            while self._batching.due():
                await self._commit()
        finally:
            if self._carrying:
                self._carrying = False
                self._release_riders()
        # Work handed over with `now=False` during the last commit still has its delay to run.
        if not self._batching.empty() and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._delay, self.flush)

    async def _commit(self) -> None:
        self._batching.start()
        done: list[_Unit] = []
        self._current = []
        written: list[_Item] = []
        self._bulk_current = written
        rides: list[_Ride] = []
        try:
            async with self._store.transaction() as session:
                if self._failure is Failure.UNIT:
                    await self._isolated(session, done, written)
                else:
                    await self._together(session, done, written)
                if self._carrying and self._writer is not None:
                    for rider in list(self._writer.riders):
                        await rider._ride(session, rides)
        except BaseException as exc:
            error = exc.error if isinstance(exc, _BatchFailed) else exc
            if not isinstance(error, Exception):
                error = _SessionDiscarded()  # cancelled: the riders' writes went with the carrier's transaction
            for ride in rides:
                ride.rider._ride_ended(ride, error)
            self._ended(done, written, exc)
            if not isinstance(exc, Exception):
                raise
            return
        finally:
            self._current, self._bulk_current, self._bulk_taken = [], [], []
        self._committed(done, written)
        for ride in rides:
            ride.rider._ride_ended(ride, None)

    def _ended(self, done: list[_Unit], written: list[_Item], exc: BaseException) -> None:
        """The batch did not commit: its units get the error, or (a discarded session) a new transaction."""
        if isinstance(exc, _SessionDiscarded):
            if done and self._log_failures:
                # Their bodies ran in the discarded transaction: they fail, and their callers answer for it.
                log.error(
                    f"{self._name} batch discarded after a unit stopped mid-statement",
                    extra={"fields": {"units": len(done)}},
                )
            self._batching.requeue()
            _settle(_outcomes(done), exc)
        elif isinstance(exc, _BatchFailed):
            self._failed(done, written, exc.error)
        elif isinstance(exc, Exception):
            self._failed(done, written, exc)

    def _committed(self, done: list[_Unit], written: list[_Item]) -> None:
        for item in written:
            if not item.outcome.done():
                item.outcome.set_result(None)
        self.batches += 1
        self.units += len(done)
        for unit in done:
            if not unit.outcome.done():
                unit.outcome.set_result(unit.value if isinstance(unit, _Job) else None)

    async def _ride(self, session: AsyncSession, rides: list[_Ride]) -> None:
        """Write this rider's batch in a carrier's transaction, in a savepoint of its own, unless a batch of its own
        runs. Added to `rides`, it is settled when the carrier's batch is (`_ride_ended`)."""
        if (self._task is not None and not self._task.done()) or not self._batching.ride():
            return
        ride = _Ride(self, [], [])
        rides.append(ride)
        self._current, self._bulk_current = [], ride.written
        try:
            async with session.begin_nested():
                await self._together(session, ride.done, ride.written)
        except Exception as exc:
            ride.failed = True
            error = exc.error if isinstance(exc, _BatchFailed) else exc
            self._failed(ride.done, ride.written, error)
            self._current, self._bulk_current, self._bulk_taken = [], [], []
            if isinstance(error, _SessionDiscarded) or not _leaves_session_reusable(error):
                # The carrier's session is suspect too: its batch is rolled back, as when a unit of its own breaks it.
                raise _SessionDiscarded() from None

    def _ride_ended(self, ride: _Ride, error: Exception | None) -> None:
        """The carrier's batch committed (`error` None) or failed, with this rider's batch in it."""
        if not ride.failed:
            if error is None:
                self._committed(ride.done, ride.written)
                self.carried += 1
            else:
                self._failed(ride.done, ride.written, error)
        self._current, self._bulk_current, self._bulk_taken = [], [], []
        self._release()

    def _release_riders(self) -> None:
        """This carrier runs no batch now: riders with work waiting commit it on their own."""
        if self._writer is not None:
            for rider in list(self._writer.riders):
                rider._release()

    def _release(self) -> None:
        if self._batching.due() and (self._task is None or self._task.done()) and not self._carried():
            self._start()

    def _next(self) -> _Unit | None:
        unit = self._batching.next()
        if unit is not None:
            self._current.append(unit)
        return unit

    def _failed(self, done: list[_Unit], written: list[_Item], error: Exception) -> None:
        if self._log_failures:
            log.exception(f"{self._name} batch failed to commit", exc_info=error)
        for unit in [*self._batching.abandon(), *self._current]:
            # Not run yet, or taken and not finished (its savepoint failed around it): a caller still waiting for
            # its turn gets the error there, one whose body ran gets it as the outcome.
            if isinstance(unit, _Lease) and not unit.handoff.done():
                _settle([unit.handoff], error)
            else:
                _settle(_outcomes([unit]), error)
        _settle(_outcomes(done), error)
        _settle([item.outcome for item in written], error)

    async def _isolated(self, session: AsyncSession, done: list[_Unit], written: list[_Item]) -> None:
        while (unit := self._next()) is not None:
            if isinstance(unit, _Lease):
                if unit.handoff.done():
                    continue  # its caller was cancelled while waiting for its turn
                try:
                    async with session.begin_nested():
                        unit.handoff.set_result(session)
                        await unit.finished
                except _BodyFailed as failed:
                    if failed.reusable:
                        continue
                    # Discarded where it failed: the units still waiting get a new transaction.
                    raise _SessionDiscarded() from None
            else:
                try:
                    async with session.begin_nested():
                        unit.value = await unit.work(session)
                except Exception as exc:
                    _settle([unit.outcome], exc)
                    continue
            done.append(unit)
        groups = _with_units(self._batching.take_groups(), done)
        self._bulk_taken = [entry for items in groups.values() for entry in items]  # what `settled` waits for
        for handler, items in groups.items():
            try:
                async with session.begin_nested():
                    await handler(session, [entry.item for entry in items])
            except Exception as exc:
                if len(items) == 1:
                    self._bulk_failed(items[0], exc)
                    continue
                # Item by item, each in a savepoint of its own: one bad item (a station deleted meanwhile) fails its
                # own caller, not the callers of every other item that happened to share its batch. Only the items
                # that fail alone are logged.
                for entry in items:
                    try:
                        async with session.begin_nested():
                            await handler(session, [entry.item])
                    except Exception as alone:
                        self._bulk_failed(entry, alone)
                    else:
                        written.append(entry)
            else:
                written.extend(items)

    def _bulk_failed(self, entry: _Item, error: Exception) -> None:
        if self._log_failures:
            log.error(f"{self._name} bulk write failed", exc_info=error)
        _settle([entry.outcome], error)

    async def _together(self, session: AsyncSession, done: list[_Unit], written: list[_Item]) -> None:
        while (unit := self._next()) is not None:
            if isinstance(unit, _Lease):
                if unit.handoff.done():
                    continue
                done.append(unit)
                unit.handoff.set_result(session)
                try:
                    await unit.finished
                except _BodyFailed as failed:
                    error = failed.error if isinstance(failed.error, Exception) else _SessionDiscarded()
                    raise _BatchFailed(error) from None
            else:
                done.append(unit)
                unit.value = await unit.work(session)
        groups = _with_units(self._batching.take_groups(), done)
        for items in groups.values():
            written.extend(items)
        for handler, items in groups.items():
            await handler(session, [entry.item for entry in items])
