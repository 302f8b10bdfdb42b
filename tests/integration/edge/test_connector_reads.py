"""The links' first reads of their connectors' statuses, gathered into one statement (`edge.connector_reads`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from chargenet.clock import ManualClock
from chargenet.domain.connectors import KnownStatus
from chargenet.domain.events import ChargePointErrorCode, ConnectorStatus
from chargenet.domain.tenants import ConnectorAddress, locate_connector
from chargenet.edge import statuses
from chargenet.edge.connector_reads import ConnectorReads
from chargenet.errors import InvalidInput
from chargenet.keys import KeyStore
from chargenet.outbox import Outbox
from chargenet.store.db import Store
from chargenet.store.models import Station
from tests.factories import make_tenant


async def first_connector_of_a_new_station(store: Store, clock: ManualClock, tmp_path: Path) -> ConnectorAddress:
    await make_tenant(store, KeyStore(tmp_path), clock.now(), station_id="CS-A")
    async with store.transaction() as session:
        station = await session.get(Station, "CS-A")
    assert station is not None
    return locate_connector(station.layout(), 1)


async def test_reads_that_arrive_together_are_one_statement_and_each_gets_its_own_connector(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    keys = KeyStore(tmp_path)
    await make_tenant(store, keys, clock.now(), station_id="CS-A")
    await make_tenant(store, keys, clock.now(), station_id="CS-B")
    async with store.transaction() as session:
        await statuses.record_status(
            session,
            Outbox(clock),
            station_id="CS-A",
            ocpp_connector_id=1,
            status=ConnectorStatus.CHARGING,
            error_code=ChargePointErrorCode.NO_ERROR,
            timestamp=clock.now(),
            now=clock.now(),
        )
        a, b = await session.get(Station, "CS-A"), await session.get(Station, "CS-B")
    assert a is not None and b is not None
    charging, unreported = locate_connector(a.layout(), 1), locate_connector(b.layout(), 2)
    reads = ConnectorReads(store)

    found = await asyncio.gather(reads.load(charging, 1), reads.load(unreported, 2))

    assert found == [
        statuses.LoadedConnector(
            exists=True,
            last=KnownStatus(ConnectorStatus.CHARGING, ChargePointErrorCode.NO_ERROR, None, clock.now()),
        ),
        statuses.LoadedConnector(exists=False, last=None),
    ]
    assert reads.statements == 1


async def test_a_connector_above_the_limit_without_a_row_fails_its_own_read_alone(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    first = await first_connector_of_a_new_station(store, clock, tmp_path)
    reads = ConnectorReads(store)

    above, fine = await asyncio.gather(
        reads.load(ConnectorAddress(first.charge_point_id, 17), 17), reads.load(first, 1), return_exceptions=True
    )

    assert isinstance(above, InvalidInput) and above.field == "connectorId"
    assert fine == statuses.LoadedConnector(exists=False, last=None)


async def test_closing_cancels_the_reads_still_waiting_and_leaves_no_reader_running(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    first = await first_connector_of_a_new_station(store, clock, tmp_path)
    reads = ConnectorReads(store)
    waiting = asyncio.ensure_future(reads.load(first, 1))
    await asyncio.sleep(0)  # one turn: the read is asked for and its reader task created, not yet run

    await reads.close()

    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert reads.statements == 0
