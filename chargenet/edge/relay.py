"""Commands for a station whose OCPP connection another process holds (several `chargenet serve` sharing one
database, or `chargenet admin` beside a running server).

Theory of operation. The asking side writes the command into `station_commands` (state `pending`) and polls
the row. Every serving process runs a `CommandRelay` that looks for pending commands of the stations connected
to it, claims one with a conditional update (`pending` -> `claimed`), sends it over its connection, and writes
the answer (`answered`) or what went wrong (`failed`). A command nobody claims within `CLAIM_WINDOW` is expired
by the asking side, again with a conditional update from `pending`: claim and expiry exclude each other, so a
command is sent to the station at most once, and the asker either gets its answer or knows it was never sent
(503). An asker that stops waiting deletes its row; rows left by an asker that died are purged after an hour.

Neither side waits for its poll on PostgreSQL: the asker's insert notifies `STATION_COMMANDS` (payload: the
station), which wakes every relay at once, and the holder's answer notifies `COMMAND_ANSWERS` (payload: the
command), which wakes that asker only (`store.notify`). The polls stay as the safety net, and slow down while
the notifications reach the process (its `Store.listener` listens: a serving process): the relay's from
RELAY_INTERVAL to RELAY_INTERVAL_LISTENING, the asker's from ASKER_POLL to ASKER_POLL_LISTENING, both well inside
the CLAIM_WINDOW, so a notification missed costs a second rather than a failed command. On SQLite, and for an
asker that runs no listener (`chargenet admin`), the polls are how the two sides learn of each other.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select, update

from chargenet.clock import Clock
from chargenet.edge import records
from chargenet.edge.ocpp16.frames import Payload
from chargenet.errors import StationAnswerFailed, StationDidNotAnswer, StationNotConnected
from chargenet.ids import process_owner
from chargenet.store.db import LONG, Store
from chargenet.store.models import StationCommand
from chargenet.store.notify import COMMAND_ANSWERS, STATION_COMMANDS, notify
from chargenet.waiting import first_of
from chargenet.workers import LoopWorker

log = logging.getLogger(__name__)

CLAIM_WINDOW = timedelta(seconds=3)
"""How long a pending command waits for the station's process; it is woken by the command's notification, or
polls every RELAY_INTERVAL (RELAY_INTERVAL_LISTENING while it listens)."""
CLOCK_SKEW = timedelta(seconds=60)
"""How far apart the clocks of two processes may be: the holder claims commands created (by the asker's clock)
no longer ago than this, which keeps it from sending a command an asker that died left pending long ago."""
RELAY_INTERVAL = 0.1
RELAY_INTERVAL_LISTENING = 1.0
ASKER_POLL = 0.05
ASKER_POLL_LISTENING = 1.0
FORGOTTEN_AFTER = timedelta(hours=1)

PENDING, CLAIMED, ANSWERED, FAILED, EXPIRED = "pending", "claimed", "answered", "failed", "expired"
NOT_CONNECTED, NO_ANSWER, ANSWER_FAILED = "not_connected", "no_answer", "answer_failed"

SendCommand = Callable[[str, str, Payload], Awaitable[Payload]]


class RelayedCommands:
    """`ports.StationCommands` for a process that holds no station connection (`chargenet admin`): every command
    goes to the serving process holding the station, through the store."""

    def __init__(self, store: Store, clock: Clock, command_timeout: timedelta = timedelta(seconds=30)) -> None:
        self.store = store
        self.clock = clock
        # A margin over the serving process's own call timeout, as `Edge.command` allows: that one decides first.
        self.answer_timeout = command_timeout + timedelta(seconds=5)

    async def command(self, station_id: str, action: str, payload: Payload) -> Payload:
        return await forward(self.store, self.clock, station_id, action, payload, answer_timeout=self.answer_timeout)

    def is_connected(self, station_id: str) -> bool:
        return False


async def forward(
    store: Store, clock: Clock, station_id: str, action: str, payload: Payload, *, answer_timeout: timedelta
) -> Payload:
    """Have the process holding `station_id`'s connection send `action`, and return the station's answer.

    Raises `StationNotConnected` when no process holds the station (or none claimed the command in time: it was
    then never sent), and `StationDidNotAnswer` as the sending process reported it, or when that process went
    silent for longer than `answer_timeout` after claiming the command.
    """
    command_id = str(uuid.uuid4())
    # Subscribed before the command exists: an answer can come no sooner.
    with store.listener.subscription(COMMAND_ANSWERS, command_id) as answered:
        async with store.transaction() as session:
            presence = await records.presence(session, station_id)
            if presence is None or not presence.connected:
                raise StationNotConnected(station_id, "no chargenet serve process holds its connection")
            session.add(
                StationCommand(
                    id=command_id,
                    station_id=station_id,
                    action=action,
                    payload=json.dumps(payload),
                    state=PENDING,
                    created_at=clock.now(),
                )
            )
            notify(session, STATION_COMMANDS, station_id)
        try:
            return await _await_answer(store, clock, command_id, station_id, action, answer_timeout, answered)
        finally:
            async with store.transaction() as session:
                await session.execute(delete(StationCommand).where(StationCommand.id == command_id))


async def _await_answer(
    store: Store,
    clock: Clock,
    command_id: str,
    station_id: str,
    action: str,
    answer_timeout: timedelta,
    answered: asyncio.Event,
) -> Payload:
    claim_by = clock.now() + CLAIM_WINDOW
    answer_by: datetime | None = None  # by this process's clock, not the holder's
    while True:
        # Slow only while answers are listened to: one committed since (or missed while the listener reconnected,
        # which then wakes every subscriber) has set `answered`, which is cleared only after the wait.
        poll = ASKER_POLL_LISTENING if store.listener.listening(COMMAND_ANSWERS) else ASKER_POLL
        await first_of(asyncio.sleep(poll), answered.wait())
        answered.clear()
        async with store.transaction() as session:
            row = await session.get(StationCommand, command_id)
            if row is None:
                raise StationNotConnected(station_id)
            if row.state == ANSWERED:
                answer: Payload = json.loads(row.answer or "{}")
                return answer
            if row.state == FAILED:
                if row.error_kind == NOT_CONNECTED:
                    raise StationNotConnected(station_id)
                if row.error_kind == ANSWER_FAILED:
                    failure = json.loads(row.error or "{}")
                    raise StationAnswerFailed(station_id, action, failure.get("code"), failure.get("description", ""))
                raise StationDidNotAnswer(station_id, action, row.error or "no answer")
            now = clock.now()
            if row.state == PENDING and now >= claim_by:
                expired = await session.execute(
                    update(StationCommand)
                    .where(StationCommand.id == command_id, StationCommand.state == PENDING)
                    .values(state=EXPIRED)
                )
                if getattr(expired, "rowcount", 0) == 1:
                    raise StationNotConnected(
                        station_id, f"no chargenet serve process took the command within {CLAIM_WINDOW.seconds} s"
                    )
            if row.state == CLAIMED:
                answer_by = answer_by or now + answer_timeout
                if now >= answer_by:
                    raise StationDidNotAnswer(station_id, action, "the process holding its connection went silent")


class CommandRelay(LoopWorker):
    """Claims and sends the pending commands of the stations connected to this process: every `interval`, or
    `listening_interval` while the store's notifications of new commands reach it, and at once on those."""

    name = "station-command-relay"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        connected: Callable[[], set[str]],
        send: SendCommand,
        interval: float = RELAY_INTERVAL,
        listening_interval: float = RELAY_INTERVAL_LISTENING,
    ) -> None:
        super().__init__(clock, interval)
        self.listening_interval = listening_interval
        self.store = store
        self.connected = connected
        self.send = send
        self.owner = process_owner()
        self._sending: set[asyncio.Task[None]] = set()
        self._last_purge = datetime.min.replace(tzinfo=UTC)  # purge at the first round
        self._asked: asyncio.Event | None = None

    async def run(self, stopping: asyncio.Event) -> None:
        listener = self.store.listener
        self._asked = listener.subscribe(STATION_COMMANDS)
        try:
            await super().run(stopping)
        finally:
            listener.unsubscribe(STATION_COMMANDS, self._asked)
            self._asked = None

    async def pause(self, stopping: asyncio.Event) -> None:
        asked = self._asked
        if asked is None:
            await super().pause(stopping)
            return
        listening = self.store.listener.listening(STATION_COMMANDS)
        interval = max(self.interval, self.listening_interval) if listening else self.interval
        await first_of(self.clock.sleep(interval), stopping.wait(), asked.wait())
        asked.clear()  # before the round it wakes: a command asked for during the round wakes the next one

    async def run_once(self) -> None:
        stations = self.connected()
        now = self.clock.now()
        claimed: list[StationCommand] = []
        if now - self._last_purge >= FORGOTTEN_AFTER:
            async with self.store.transaction() as session:
                await session.execute(
                    delete(StationCommand)
                    .where(StationCommand.created_at < now - FORGOTTEN_AFTER)
                    .execution_options(**LONG)
                )
            self._last_purge = now
        if not stations:
            return
        # Looked for in a read first: most rounds find nothing, and a read takes no write lock (SQLite).
        async with self.store.read() as session:
            found = await session.execute(
                select(StationCommand.id, StationCommand.station_id).where(
                    StationCommand.state == PENDING, StationCommand.created_at >= now - CLAIM_WINDOW - CLOCK_SKEW
                )
            )
            wanted = [command_id for command_id, station_id in found if station_id in stations]
        if not wanted:
            return
        async with self.store.transaction() as session:
            pending = await session.scalars(
                select(StationCommand).where(StationCommand.id.in_(wanted), StationCommand.state == PENDING)
            )
            for command in list(pending):
                taken = await session.execute(
                    update(StationCommand)
                    .where(StationCommand.id == command.id, StationCommand.state == PENDING)
                    .values(state=CLAIMED, claimed_by=self.owner, claimed_at=now)
                )
                if getattr(taken, "rowcount", 0) == 1:
                    claimed.append(command)
        for command in claimed:
            task = asyncio.create_task(self._send(command.id, command.station_id, command.action, command.payload))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _send(self, command_id: str, station_id: str, action: str, payload: str) -> None:
        values: dict[str, object]
        try:
            answer = await self.send(station_id, action, json.loads(payload))
            values = {"state": ANSWERED, "answer": json.dumps(answer)}
        except StationNotConnected:
            values = {"state": FAILED, "error_kind": NOT_CONNECTED}
        except StationDidNotAnswer as exc:
            values = {"state": FAILED, "error_kind": NO_ANSWER, "error": exc.reason}
        except StationAnswerFailed as exc:
            failure = json.dumps({"code": exc.code, "description": exc.description})
            values = {"state": FAILED, "error_kind": ANSWER_FAILED, "error": failure}
        except Exception as exc:
            log.exception("relaying a station command failed", extra={"fields": {"station": station_id}})
            values = {"state": FAILED, "error_kind": NO_ANSWER, "error": type(exc).__name__}
        async with self.store.transaction() as session:
            await session.execute(update(StationCommand).where(StationCommand.id == command_id).values(**values))
            notify(session, COMMAND_ANSWERS, command_id)
