"""Logs asked of stations and the files they upload (1.6 GetDiagnostics, 2.0.1 GetLog).

An operator or partner with `charge-points:write` asks for a log: a one-time upload slot is stored
(`domain.log_uploads`), and the station is sent its location, a directory under `/uploads/{token}/` of the upload
base URL. The request is audited once the station answered, in a short unit of its own (nobody waits on the station
inside a unit). The station then uploads one file there (`receive`: its bytes counted against the slot's bound as
they arrive, kept under the data folder's `station-logs/`), and reports its progress in Diagnostics- or
LogStatusNotification, which the edge keeps with the station's notices. `charge-points:read` lists the files
received and downloads them. `StationLogRetention` deletes files and rows past their retention (30 days).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.clock import Clock
from chargenet.domain import log_uploads
from chargenet.domain.generations import OCPP201
from chargenet.domain.log_uploads import ByteBudget, SizeExceeded, SlotRefusal
from chargenet.domain.scopes import Scope
from chargenet.edge.ocpp16.frames import Payload
from chargenet.edge.ocpp201.commands import Command
from chargenet.errors import Conflict, InputTooLarge, LogUploadRefused, NotFound
from chargenet.ports import StationCommands
from chargenet.services import audit
from chargenet.services.callers import Caller
from chargenet.services.charge_point_commands import checked, generation_of
from chargenet.services.reach import reachable_station
from chargenet.services.views import Instant, View
from chargenet.store.db import Store, Transactions
from chargenet.store.models import LogUploadSlot, Station, StationLog
from chargenet.workers import RetentionWorker

log = logging.getLogger(__name__)

LOGS_FOLDER = "station-logs"  # under the data folder
INCOMING_FOLDER = ".incoming"  # uploads being received, under LOGS_FOLDER
RETENTION_DAYS = 30
CHUNK_WRITE = 64 * 1024


class StationLogView(View):
    id: int
    station_id: str
    request_id: int
    file_name: str
    size: int
    sha256: str
    received_at: Instant


class StationLogs(View):
    items: list[StationLogView]  # the latest first


class LogRequestAnswer(View):
    request_id: int
    status: str  # Accepted, Rejected, ... (a 1.6 station that answers GetDiagnostics has accepted it)
    file_name: str | None  # the name the station said it will upload, when it said one
    location: str


@dataclass(frozen=True, slots=True)
class LogFile:
    view: StationLogView
    path: Path


def _view(row: StationLog) -> StationLogView:
    return StationLogView(
        id=row.id,
        station_id=row.station_id,
        request_id=row.request_id,
        file_name=row.file_name,
        size=row.size,
        sha256=row.sha256,
        received_at=row.received_at,
    )


async def list_logs(session: AsyncSession, caller: Caller, station_id: str) -> StationLogs:
    await reachable_station(session, caller, Scope.CHARGE_POINTS_READ, station_id)
    rows = await session.scalars(
        select(StationLog)
        .where(StationLog.station_id == station_id)
        .order_by(StationLog.received_at.desc(), StationLog.id.desc())
    )
    return StationLogs(items=[_view(row) for row in rows])


async def log_file(session: AsyncSession, caller: Caller, data_dir: Path, station_id: str, log_id: int) -> LogFile:
    """A received log of the station and where its file is; `NotFound` for another station's."""
    await reachable_station(session, caller, Scope.CHARGE_POINTS_READ, station_id)
    row = await session.get(StationLog, log_id)
    if row is None or row.station_id != station_id:
        raise NotFound("log", f"{log_id} of station {station_id}")
    path = data_dir / row.path
    if not path.is_file():  # deleted by the retention since the row was read
        raise NotFound("log", f"{log_id} of station {station_id}")
    return LogFile(_view(row), path)


def log_command(generation: str, request_id: int, location: str) -> Command:
    """GetDiagnostics to a 1.6 station; GetLog of its diagnostics log to a 2.0.1 one."""
    if generation == OCPP201:
        payload: Payload = {"logType": "DiagnosticsLog", "requestId": request_id, "log": {"remoteLocation": location}}
        return Command("GetLog", payload)
    return Command("GetDiagnostics", {"location": location})


def _answer(generation: str, request_id: int, location: str, answer: Payload) -> LogRequestAnswer:
    if generation == OCPP201:
        status, file_name = str(answer.get("status")), answer.get("filename")
    else:
        status, file_name = "Accepted", answer.get("fileName")
    return LogRequestAnswer(
        request_id=request_id,
        status=status,
        file_name=file_name if isinstance(file_name, str) else None,
        location=location,
    )


async def request_log(
    reading: Transactions,
    transactions: Transactions,
    edge: StationCommands,
    caller: Caller,
    *,
    station_id: str,
    upload_base: str,
    now: datetime,
) -> LogRequestAnswer:
    """Asks the station for its diagnostics log, to be uploaded to a fresh one-time location."""
    problem = log_uploads.upload_base_problem(upload_base)
    if problem is not None:
        raise Conflict(f"stations cannot be given an upload location: {problem} (CHARGENET_UPLOAD_URL)")
    async with reading() as session:
        station = await reachable_station(session, caller, Scope.CHARGE_POINTS_WRITE, station_id)
        generation = await generation_of(session, station.id)
    fresh = log_uploads.new_slot(station_id, now)
    async with transactions() as session:
        row = LogUploadSlot(
            station_id=station_id,
            token_hash=fresh.slot.token_hash,
            requested_at=now,
            expires_at=fresh.slot.expires_at,
            max_bytes=fresh.slot.max_bytes,
        )
        session.add(row)
        await session.flush()
        request_id = row.id
    location = log_uploads.upload_location(upload_base, fresh.token)
    command = checked(generation, log_command(generation, request_id, location))
    answer = _answer(generation, request_id, location, await edge.command(station_id, command.action, command.payload))
    async with transactions() as session:
        target = await session.get(Station, station_id)
        if target is None:
            raise NotFound("station", station_id)
        detail = {"requestId": str(request_id), "status": answer.status}
        await audit.record_change(session, caller, "station.request-log", target, now=now, detail=detail)
    return answer


# Receiving an upload -------------------------------------------------------------------------------------------


async def _slot(session: AsyncSession, token: str) -> LogUploadSlot | None:
    return await session.scalar(select(LogUploadSlot).where(LogUploadSlot.token_hash == log_uploads.token_hash(token)))


def _refused(reason: SlotRefusal, token_hint: str, file_name: str) -> LogUploadRefused:
    log.warning(
        "log upload refused",
        extra={"fields": {"reason": reason.value, "token": token_hint, "file": file_name}},
    )
    return LogUploadRefused(reason.value)


async def receive(
    reading: Transactions,
    transaction: Transactions,
    data_dir: Path,
    clock: Clock,
    *,
    token: str,
    file_name: str,
    body: AsyncIterator[bytes],
) -> StationLogView:
    """One upload to the slot `token` names: checked before a byte is kept, written to a file under the data folder
    while its bytes are counted against the slot's bound, then claimed with the log's row in one unit (so a second
    upload racing this one loses). `LogUploadRefused` for an unknown, used or expired slot, `InputTooLarge` past its
    bound, `InvalidInput` for a file name that names no file; nothing is kept then."""
    hint = token[:6]
    name = log_uploads.sanitized_file_name(file_name)
    async with reading() as session:
        slot = await _slot(session, token)
        found = None if slot is None else _domain_slot(slot)
        station_id, request_id = (slot.station_id, slot.id) if slot is not None else ("", 0)
    reason = log_uploads.refusal(found, clock.now())
    if reason is not None or found is None:
        raise _refused(reason or SlotRefusal.UNKNOWN, hint, name)
    incoming = data_dir / LOGS_FOLDER / INCOMING_FOLDER
    incoming.mkdir(parents=True, exist_ok=True)
    partial = incoming / f"{request_id}-{os.urandom(6).hex()}"
    try:
        size, digest = await _write(partial, body, ByteBudget(found.max_bytes))
    except SizeExceeded:
        partial.unlink(missing_ok=True)
        log.warning(
            "log upload refused",
            extra={"fields": {"reason": "too large", "station": station_id, "limit": found.max_bytes}},
        )
        raise InputTooLarge(found.max_bytes) from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    relative = Path(LOGS_FOLDER) / station_id / f"{request_id}-{name}"
    kept = data_dir / relative
    now = clock.now()
    moved = False
    try:
        async with transaction() as session:
            claimed = await session.execute(
                update(LogUploadSlot)
                .where(
                    LogUploadSlot.id == request_id,
                    LogUploadSlot.used_at.is_(None),
                    LogUploadSlot.expires_at > now,
                )
                .values(used_at=now)
            )
            if claimed.rowcount != 1:  # type: ignore[attr-defined]
                raise _refused(SlotRefusal.USED, hint, name)
            row = StationLog(
                station_id=station_id,
                request_id=request_id,
                file_name=name,
                size=size,
                sha256=digest,
                received_at=now,
                path=relative.as_posix(),
            )
            session.add(row)
            await session.flush()
            view = _view(row)
            kept.parent.mkdir(parents=True, exist_ok=True)
            partial.replace(kept)  # before the commit: a row is never without its file
            moved = True
    except BaseException:
        partial.unlink(missing_ok=True)
        if moved:
            kept.unlink(missing_ok=True)
        raise
    log.info("station log received", extra={"fields": {"station": station_id, "request": request_id, "size": size}})
    return view


def _domain_slot(row: LogUploadSlot) -> log_uploads.UploadSlot:
    return log_uploads.UploadSlot(row.token_hash, row.station_id, row.expires_at, row.max_bytes, row.used_at)


async def _write(path: Path, body: AsyncIterator[bytes], budget: ByteBudget) -> tuple[int, str]:
    digest = hashlib.sha256()
    with path.open("wb") as file:
        async for chunk in body:
            budget.take(len(chunk))
            digest.update(chunk)
            file.write(chunk)
    return budget.received, digest.hexdigest()


# Retention ---------------------------------------------------------------------------------------------------


async def purge(session: AsyncSession, data_dir: Path, *, now: datetime, retention: timedelta) -> int:
    """Deletes the logs received, and the slots asked, before `now - retention`, files first."""
    cutoff = now - retention
    rows = (await session.scalars(select(StationLog).where(StationLog.received_at < cutoff))).all()
    for row in rows:
        (data_dir / row.path).unlink(missing_ok=True)
    await session.execute(delete(StationLog).where(StationLog.received_at < cutoff))
    used = select(StationLog.request_id)
    await session.execute(
        delete(LogUploadSlot).where(LogUploadSlot.requested_at < cutoff, LogUploadSlot.id.not_in(used))
    )
    return len(rows)


class StationLogRetention(RetentionWorker):
    """Deletes station logs past their retention (`CHARGENET_LOG_RETENTION_DAYS`, 30), hourly."""

    name = "station-log-retention"
    what = "old station logs"

    def __init__(
        self, store: Store, clock: Clock, data_dir: Path, retention_days: int = RETENTION_DAYS, interval: float = 3600
    ) -> None:
        super().__init__(store, clock, interval)
        self.data_dir = data_dir
        self.retention = timedelta(days=retention_days)

    async def purge(self, session: AsyncSession, now: datetime) -> int:
        return await purge(session, self.data_dir, now=now, retention=self.retention)
