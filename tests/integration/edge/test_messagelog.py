from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from chargenet.clock import ManualClock
from chargenet.edge import messagelog, records
from chargenet.edge.messagelog import FrameHead, MessageLog, frame_head
from chargenet.edge.ocpp16 import parse
from chargenet.keys import KeyStore
from chargenet.store.db import Store
from chargenet.store.models import OcppMessage, StationNotice, StationPresence
from tests.factories import make_tenant


async def frames(store: Store) -> list[str]:
    async with store.transaction() as session:
        return list(await session.scalars(select(OcppMessage.frame).order_by(OcppMessage.id)))


async def test_frames_are_written_in_order_by_the_next_run(store: Store, clock: ManualClock) -> None:
    log = MessageLog(store, clock)
    logger = log.logger("CS-1", "station")
    logger("in", '[2,"a","Heartbeat",{}]')
    logger("out", '[3,"a",{}]')
    assert await frames(store) == []
    await log.run_once()
    assert await frames(store) == ['[2,"a","Heartbeat",{}]', '[3,"a",{}]']


async def test_frames_older_than_30_days_are_purged(store: Store, clock: ManualClock) -> None:
    log = MessageLog(store, clock)
    log.add("CS-1", "station", "in", "old")
    await log.run_once()
    clock.advance(31 * 86400)
    log.add("CS-1", "station", "in", "new")
    await log.run_once()
    assert await frames(store) == ["new"]


async def test_station_notices_older_than_30_days_are_purged_with_the_frames(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    await make_tenant(store, KeyStore(tmp_path), clock.now(), station_id="CS-1")
    log = MessageLog(store, clock)
    async with store.transaction() as session:
        await records.record_notice(session, "CS-1", "NotifyEvent", {"seqNo": 0}, clock.now())
    clock.advance(31 * 86400)
    async with store.transaction() as session:
        await records.record_notice(session, "CS-1", "NotifyEvent", {"seqNo": 1}, clock.now())
    clock.advance(messagelog.PURGE_EVERY.total_seconds())
    await log.run_once()
    async with store.transaction() as session:
        kept = (await session.scalars(select(StationNotice.payload))).all()
    assert kept == ['{"seqNo":1}']


async def test_a_process_starting_purges_old_frames_a_purge_interval_after_its_start_not_at_it(
    store: Store, clock: ManualClock
) -> None:
    log = MessageLog(store, clock)
    log.add("CS-1", "station", "in", "old")
    await log.run_once()
    clock.advance(31 * 86400)
    restarted = MessageLog(store, clock)
    await restarted.run_once()
    assert await frames(store) == ["old"]
    clock.advance(messagelog.PURGE_EVERY.total_seconds())
    await restarted.run_once()
    assert await frames(store) == []


async def test_boot_recorded_while_another_transaction_writes_the_presence_row_keeps_both(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    await make_tenant(store, KeyStore(tmp_path), clock.now(), station_id="CS-1")

    async def boot() -> None:
        async with store.transaction() as session:
            payload = {"chargePointVendor": "chargenet", "chargePointModel": "SimStation"}
            await records.record_boots(session, [records.boot_of("CS-1", parse.station_booted(payload), clock.now())])

    # The message log writes the row when the station connects, from its own transaction: still uncommitted when
    # the boot writes, the boot must wait for it rather than lose a unique-key race (on SQLite the boot's
    # transaction simply waits its turn).
    async with store.transaction() as session:
        await session.execute(insert(StationPresence).values(station_id="CS-1", connected=True))
        booting = asyncio.create_task(boot())
        await asyncio.sleep(0.3)
    await booting
    async with store.transaction() as session:
        row = await session.get(StationPresence, "CS-1")
        assert row is not None and row.connected and row.model == "SimStation"


async def rows(store: Store) -> list[tuple[str, str, str, int | None, str | None, str | None]]:
    async with store.transaction() as session:
        found = await session.execute(
            select(
                OcppMessage.station_id,
                OcppMessage.direction,
                OcppMessage.frame,
                OcppMessage.message_type,
                OcppMessage.message_id,
                OcppMessage.action,
            ).order_by(OcppMessage.id)
        )
        return [tuple(row) for row in found]  # type: ignore[misc]


def test_a_frames_head_is_read_from_its_first_bytes() -> None:
    assert frame_head('[2, "m-1", "BootNotification", {}]') == FrameHead(2, "m-1", "BootNotification")
    assert frame_head('[3,"m-1",{"status":"Accepted"}]') == FrameHead(3, "m-1", None)
    assert frame_head('[4,"m-1","NotImplemented","",{}]') == FrameHead(4, "m-1", None)  # an error code, no action
    for unreadable in ("old", "", "[2,", '{"a": 1}', f'[2,"{"x" * 65}","Heartbeat",{{}}]', "b'\\x00'"):
        assert frame_head(unreadable) == FrameHead(None, None, None), unreadable


async def test_each_frame_is_logged_with_its_type_id_and_action_and_an_answer_with_its_calls(
    store: Store, clock: ManualClock
) -> None:
    log = MessageLog(store, clock)
    station = log.logger("CS-1", "station")
    upstream = log.logger("CS-1", "upstream")
    station("out", '[2,"c-1","Reset",{"type":"Soft"}]')
    station("in", '[2,"s-1","Heartbeat",{}]')
    upstream("in", '[3,"c-1",{}]')  # another connection's CALL of the same id: not this one's answer
    station("out", '[3,"s-1",{"currentTime":"2026-07-01T12:00:00Z"}]')
    station("in", '[4,"c-1","NotImplemented","no",{}]')
    station("in", "garbage")
    await log.run_once()
    assert [row[1:2] + row[3:] for row in await rows(store)] == [
        ("out", 2, "c-1", "Reset"),
        ("in", 2, "s-1", "Heartbeat"),
        ("in", 3, "c-1", None),
        ("out", 3, "s-1", "Heartbeat"),
        ("in", 4, "c-1", "Reset"),
        ("in", None, None, None),
    ]


async def test_frames_dropped_from_a_full_buffer_leave_a_gap_row_where_they_were(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(messagelog, "MAX_BUFFERED", 3)
    log = MessageLog(store, clock)
    log.add("CS-1", "station", "in", "one")
    log.add("CS-1", "station", "in", "two")
    await log.run_once()
    first_at = clock.now()
    for n in range(5):
        clock.advance(1)
        log.add("CS-2" if n == 1 else "CS-1", "station", "in", f"frame {n}")
    assert log.dropped == 2  # frame 0 (CS-1) and frame 1 (CS-2): the oldest
    await log.run_once()
    written = await rows(store)
    assert [(station, direction, frame) for station, direction, frame, *_ in written[:2]] == [
        ("CS-1", "in", "one"),
        ("CS-1", "in", "two"),
    ]
    gaps = {row[0]: json.loads(row[2]) for row in written[2:4]}
    assert all(row[1] == "gap" for row in written[2:4])
    assert gaps["CS-1"]["dropped"] == 1 and gaps["CS-2"]["dropped"] == 1
    assert gaps["CS-1"]["from"] == (first_at + timedelta(seconds=1)).isoformat()
    assert [row[2] for row in written[4:]] == ["frame 2", "frame 3", "frame 4"]


async def test_a_batch_the_store_refused_is_shown_as_a_gap_by_the_next_one(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = MessageLog(store, clock)
    for n in range(3):
        log.add("CS-1", "station", "in", f"lost {n}")
    write = log._write

    async def refused(*args: object) -> None:
        raise ConnectionError("database unreachable")

    monkeypatch.setattr(log, "_write", refused)
    with pytest.raises(ConnectionError):
        await log.run_once()
    monkeypatch.setattr(log, "_write", write)
    log.add("CS-1", "station", "in", "after")
    await log.run_once()
    written = await rows(store)
    assert [row[1] for row in written] == ["gap", "in"] and json.loads(written[0][2])["dropped"] == 3
    assert log.dropped == 3


async def test_one_batch_writes_each_stations_own_presence_whatever_fields_it_changed(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    keys = KeyStore(tmp_path)
    for station_id in ("CS-A", "CS-B", "CS-C"):
        await make_tenant(store, keys, clock.now(), station_id=station_id)
    log = MessageLog(store, clock)
    connected_at = clock.now()
    log.connection("CS-A", True, connected_at)
    await log.run_once()

    clock.advance(60)
    later = clock.now()
    log.heartbeat("CS-A", later)
    log.connection("CS-A", False, later)
    log.connection("CS-B", True, later)
    log.upstream("CS-C", True)
    await log.run_once()

    async with store.transaction() as session:
        found = {row.station_id: row for row in await session.scalars(select(StationPresence))}
    a, b, c = found["CS-A"], found["CS-B"], found["CS-C"]
    assert (a.connected, a.connected_at, a.disconnected_at, a.last_heartbeat_at) == (
        False,
        connected_at,
        later,
        later,
    )
    assert (b.connected, b.connected_at, b.last_seen_at, b.disconnected_at) == (True, later, later, None)
    assert (c.connected, c.upstream_connected, c.connected_at) == (False, True, None)


async def test_a_large_batch_is_written_in_transactions_of_a_bounded_number_of_rows(
    store: Store, clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(messagelog, "ROWS_PER_TRANSACTION", 2)
    keys = KeyStore(tmp_path)
    for station_id in ("CS-A", "CS-B", "CS-C"):
        await make_tenant(store, keys, clock.now(), station_id=station_id)
    log = MessageLog(store, clock)
    logger = log.logger("CS-A", "station")
    sent = [f'[2,"m{n}","Heartbeat",{{}}]' for n in range(5)]
    for frame in sent:
        logger("in", frame)
    for station_id in ("CS-A", "CS-B", "CS-C"):
        log.connection(station_id, True, clock.now())
    transactions: list[float] = []
    store.time_units(transaction=transactions.append, read=lambda _: None)

    await log.run_once()

    assert len(transactions) == 3  # 5 frames and 3 stations, 2 of each a transaction
    assert await frames(store) == sent
    async with store.transaction() as session:
        assert set(await session.scalars(select(StationPresence.station_id).where(StationPresence.connected))) == {
            "CS-A",
            "CS-B",
            "CS-C",
        }


async def test_heartbeats_are_written_after_the_presence_rows_of_every_chunk(
    store: Store, clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(messagelog, "ROWS_PER_TRANSACTION", 2)
    keys = KeyStore(tmp_path)
    stations = ("CS-A", "CS-B", "CS-C")
    for station_id in stations:
        await make_tenant(store, keys, clock.now(), station_id=station_id)
    log = MessageLog(store, clock)
    connected_at = clock.now()
    for station_id in stations:
        log.connection(station_id, True, connected_at)  # a first connection: its row does not exist yet
    heartbeat_at = connected_at + timedelta(seconds=5)
    for station_id in stations:
        log.heartbeat(station_id, heartbeat_at)

    await log.run_once()

    async with store.transaction() as session:
        rows = {row.station_id: row for row in await session.scalars(select(StationPresence))}
    assert {s: (rows[s].last_heartbeat_at, rows[s].last_seen_at) for s in stations} == {
        s: (heartbeat_at, heartbeat_at) for s in stations
    }
