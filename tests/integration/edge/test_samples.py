"""A transaction's meter values stored as samples: from a real simulated station's MeterValues and StopTransaction,
written with the message log's batches, thinned, and purged with the log."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.domain.samples import Sample
from chargenet.edge import messagelog
from chargenet.edge.messagelog import MessageLog
from chargenet.edge.ocpp16.meter_values import Reported
from chargenet.simulators.station import SimulatedStation
from chargenet.store import samples as sample_store
from chargenet.store.db import Store
from chargenet.store.models import LocalAuthEntry, MeterSample, OcppMessage
from tests.integration.edge.conftest import Served

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def at(seconds: int) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat()


@pytest.fixture
async def station(served: Served) -> AsyncIterator[SimulatedStation]:
    async with served.context.store.transaction() as session:
        session.add(LocalAuthEntry(site_id=served.tenant.site_id, id_tag="TAG1", status="Accepted", created_at=T0))
    simulated = served.station()
    await simulated.connect()
    await simulated.boot()
    yield simulated
    assert simulated.sent_errors == []
    await simulated.close()


async def stored(store: Store) -> list[tuple[int, str, datetime, int, float | None]]:
    async with store.transaction() as session:
        rows = await session.execute(
            select(
                MeterSample.transaction_id,
                MeterSample.station_id,
                MeterSample.at,
                MeterSample.energy_wh,
                MeterSample.power_w,
            ).order_by(MeterSample.at)
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


async def start(station: SimulatedStation) -> int:
    return int((await station.start(1, "TAG1", 1000, timestamp=at(0)))["transactionId"])


async def test_meter_values_of_a_transaction_are_stored_with_the_log_s_next_batch(
    served: Served, station: SimulatedStation
) -> None:
    transaction_id = await start(station)
    await station.meter_values(1, transaction_id, 1500, timestamp=at(60), power_w=7400)
    await station.meter_values(1, transaction_id, 2100, timestamp=at(120), power_w=7200)
    assert await stored(served.context.store) == []
    await served.edge.message_log.run_once()
    assert await stored(served.context.store) == [
        (transaction_id, "CS-1", T0 + timedelta(seconds=60), 1500, 7400.0),
        (transaction_id, "CS-1", T0 + timedelta(seconds=120), 2100, 7200.0),
    ]


async def test_meter_values_closer_than_the_spacing_keep_one_sample(served: Served, station: SimulatedStation) -> None:
    transaction_id = await start(station)
    for second in (60, 65, 70, 89, 90):
        await station.meter_values(1, transaction_id, 1000 + second, timestamp=at(second))
    await served.edge.message_log.run_once()
    assert [row[3] for row in await stored(served.context.store)] == [1060, 1090]


async def test_a_resent_meter_values_is_stored_once(served: Served, station: SimulatedStation) -> None:
    transaction_id = await start(station)
    await station.meter_values(1, transaction_id, 1500, timestamp=at(60))
    await served.edge.message_log.run_once()
    served.edge.message_log.samples("CS-1", transaction_id, [Reported(T0 + timedelta(seconds=60), 1500, None)])
    await served.edge.message_log.run_once()
    assert len(await stored(served.context.store)) == 1


async def test_meter_values_in_stop_transaction_data_are_stored(served: Served, station: SimulatedStation) -> None:
    transaction_id = await start(station)
    stop = station.stop_payload(transaction_id, 3000)
    stop["transactionData"] = [
        {"timestamp": at(60), "sampledValue": [{"value": "1.8", "unit": "kWh"}]},
        {"timestamp": at(120), "sampledValue": [{"value": "2.6", "unit": "kWh"}]},
    ]
    await station.call("StopTransaction", stop)
    await served.edge.message_log.run_once()
    assert [(row[0], row[3]) for row in await stored(served.context.store)] == [
        (transaction_id, 1800),
        (transaction_id, 2600),
    ]


async def test_meter_values_outside_a_transaction_store_no_sample(served: Served, station: SimulatedStation) -> None:
    await station.meter_values(1, None, 1500, timestamp=at(60))
    await served.edge.message_log.run_once()
    assert await stored(served.context.store) == []


async def test_samples_older_than_the_log_s_retention_are_purged(store: Store, clock: ManualClock) -> None:
    log = MessageLog(store, clock)
    async with store.transaction() as session:  # as the meters write theirs
        await sample_store.write(session, [Sample(8, "CS-2", clock.now(), 500)])
    log.samples("CS-1", 7, [Reported(clock.now(), 100, None)])
    await log.run_once()
    clock.advance(29 * 86400)
    log.samples("CS-1", 7, [Reported(clock.now(), 200, None)])
    await log.run_once()
    clock.advance(2 * 86400)
    await log.run_once()
    assert [row[3] for row in await stored(store)] == [200]


async def test_samples_over_the_buffer_s_bound_drop_the_oldest_and_are_counted(
    store: Store, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(messagelog, "MAX_BUFFERED_SAMPLES", 2)
    log = MessageLog(store, clock)
    log.samples("CS-1", 7, [Reported(clock.now() + timedelta(minutes=minute), minute, None) for minute in range(3)])
    await log.run_once()
    assert (log.samples_dropped, [row[3] for row in await stored(store)]) == (1, [1, 2])


@pytest.mark.expected_traceback("out of int64 range", "too large to convert to SQLite INTEGER")
async def test_samples_the_store_refuses_cost_only_themselves_not_the_frames(store: Store, clock: ManualClock) -> None:
    log = MessageLog(store, clock)
    log.add("CS-1", "station", "in", '[2,"a","Heartbeat",{}]')
    log.samples("CS-1", 7, [Reported(clock.now(), 2**70, None)])  # beyond a 64-bit column
    await log.run_once()
    async with store.transaction() as session:
        assert list(await session.scalars(select(OcppMessage.frame))) == ['[2,"a","Heartbeat",{}]']
    assert (log.samples_dropped, await stored(store)) == (1, [])


async def test_a_sample_stamped_more_than_a_day_ahead_is_left_out(store: Store, clock: ManualClock) -> None:
    log = MessageLog(store, clock)
    log.samples("CS-1", 7, [Reported(clock.now() + timedelta(days=1, seconds=1), 100, None)])
    log.samples("CS-1", 8, [Reported(clock.now() + timedelta(hours=23), 200, None)])
    await log.run_once()
    assert [row[3] for row in await stored(store)] == [200]
