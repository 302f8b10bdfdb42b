"""BootNotifications written in batches (`records.record_boots`), on both backends."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.edge import records
from chargenet.edge.ocpp16 import parse
from chargenet.keys import KeyStore
from chargenet.store.db import Store
from chargenet.store.models import StationPresence
from tests.factories import make_tenant


async def presence(store: Store) -> dict[str, tuple[object, object, object]]:
    async with store.transaction() as session:
        rows = await session.scalars(select(StationPresence))
        return {row.station_id: (row.vendor, row.model, row.booted_at) for row in rows}


async def test_the_boots_of_a_batch_are_each_recorded_on_their_station(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    keys = KeyStore(tmp_path)
    for station_id in ("CS-A", "CS-B"):
        await make_tenant(store, keys, clock.now(), station_id=station_id)
    now = clock.now()
    async with store.transaction() as session:
        await records.record_boots(
            session,
            [
                records.boot_of(
                    "CS-A", parse.station_booted({"chargePointVendor": "V1", "chargePointModel": "M1"}), now
                ),
                records.boot_of(
                    "CS-B", parse.station_booted({"chargePointVendor": "V2", "chargePointModel": "M2"}), now
                ),
            ],
        )
    assert await presence(store) == {"CS-A": ("V1", "M1", now), "CS-B": ("V2", "M2", now)}


async def test_a_station_that_booted_twice_in_a_batch_keeps_its_last_boot(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    await make_tenant(store, KeyStore(tmp_path), clock.now(), station_id="CS-A")
    first, second = clock.now(), clock.now() + timedelta(seconds=1)
    async with store.transaction() as session:
        await records.record_boots(
            session,
            [
                records.boot_of(
                    "CS-A", parse.station_booted({"chargePointVendor": "V1", "chargePointModel": "M1"}), first
                ),
                records.boot_of(
                    "CS-A", parse.station_booted({"chargePointVendor": "V1", "chargePointModel": "M2"}), second
                ),
            ],
        )
    assert await presence(store) == {"CS-A": ("V1", "M2", second)}


async def test_a_boot_updates_the_presence_row_its_connection_wrote(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    await make_tenant(store, KeyStore(tmp_path), clock.now(), station_id="CS-A")
    async with store.transaction() as session:
        session.add(StationPresence(station_id="CS-A", connected=True))
    async with store.transaction() as session:
        await records.record_boots(
            session, [records.boot_of("CS-A", parse.station_booted({"chargePointModel": "M1"}), clock.now())]
        )
    async with store.transaction() as session:
        row = await session.get(StationPresence, "CS-A")
        assert row is not None and row.connected and row.model == "M1"
