"""The meter values and poll health use cases on both stores: a session's samples (only its own station's), a
meter's latest sessions, and the buses with their summed health, within the caller's reach."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert

from chargenet.clock import ManualClock
from chargenet.domain.operators import Role
from chargenet.keys import KeyStore
from chargenet.services import meters, sessions
from chargenet.services.callers import OperatorCaller
from chargenet.services.pages import PageRequest
from chargenet.store.db import Store
from chargenet.store.models import EdgeTransaction, MeterBusLease, MeterPollHealth, MeterSample, MeterSession
from tests.factories import Tenant, edge_row, make_tenant
from tests.integration.meters.helpers import add_meter


@pytest.fixture
async def tenant(store: Store, clock: ManualClock, tmp_path: Path) -> Tenant:
    return await make_tenant(store, KeyStore(tmp_path / "keys"), clock.now(), station_id="CS-1", connectors=4)


def viewer_of(tenant: Tenant) -> OperatorCaller:
    return OperatorCaller("op_viewer", tenant.company_id, "viewer@acme.test", Role.VIEWER)


async def meter_on(store: Store, clock: ManualClock, tenant: Tenant, connector: int, tcp: str) -> str:
    return await add_meter(store, clock, tenant, connector_id=connector, unit_id=connector, tcp=tcp)


async def test_a_session_s_samples_are_its_start_its_own_station_s_values_and_its_stop(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    start = clock.now()
    async with store.transaction() as session:
        await session.execute(
            insert(EdgeTransaction).values(
                edge_row(
                    7,
                    tenant.site_id,
                    start,
                    id_tag="TAG1",
                    auth_status=None,
                    stopped_at=start + timedelta(hours=1),
                    meter_stop=9000,
                    stop_reason=None,
                )
            )
        )
        await session.execute(
            insert(MeterSample),
            [
                {"transaction_id": 7, "station_id": "CS-1", "at": start + timedelta(minutes=40), "energy_wh": 6000},
                {"transaction_id": 7, "station_id": "CS-1", "at": start + timedelta(minutes=20), "energy_wh": 3500},
                {"transaction_id": 7, "station_id": "CS-X", "at": start + timedelta(minutes=30), "energy_wh": 1},
            ],
        )
    async with store.transaction() as session:
        view = await sessions.get_session(session, viewer_of(tenant), 7)
        found = await sessions.session_samples(session, view)
    assert [(s.at - start, s.energy_wh, s.delivered_wh) for s in found.samples] == [
        (timedelta(0), 1000, 0),
        (timedelta(minutes=20), 3500, 2500),
        (timedelta(minutes=40), 6000, 5000),
        (timedelta(hours=1), 9000, 8000),
    ]
    assert not found.cut


async def test_a_meter_s_latest_sessions_come_newest_first_up_to_the_limit(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    meter_id = await meter_on(store, clock, tenant, 1, "192.0.2.7:502")
    async with store.transaction() as session:
        await session.execute(
            insert(MeterSession),
            [
                {
                    "transaction_id": n,
                    "meter_id": meter_id,
                    "site_id": tenant.site_id,
                    "station_id": "CS-1",
                    "charge_point_id": "CS-1",
                    "connector_id": 1,
                    "id_tag": "METER",
                    "meter_start_wh": 0,
                    "started_at": clock.now() + timedelta(hours=n),
                    "last_charging_wh": 10,
                    "last_charging_at": clock.now() + timedelta(hours=n),
                    "meter_stop_wh": 10,
                    "stopped_at": clock.now() + timedelta(hours=n, minutes=30),
                    "reason": "Other",
                }
                for n in range(1, 6)
            ],
        )
        found = await sessions.sessions_of_meter(session, viewer_of(tenant), meter_id, limit=3)
        strangers = await sessions.sessions_of_meter(
            session, OperatorCaller("op_x", "co_other", "x@other.test", Role.OWNER), meter_id, limit=3
        )
    assert [view.transaction_id for view in found] == [5, 4, 3] and strangers == []


async def test_buses_sum_their_meters_health_and_name_the_lease_holder(
    store: Store, clock: ManualClock, tenant: Tenant, tmp_path: Path
) -> None:
    first = await meter_on(store, clock, tenant, 1, "192.0.2.7:502")
    second = await meter_on(store, clock, tenant, 2, "192.0.2.7:502")
    third = await meter_on(store, clock, tenant, 3, "192.0.2.8:502")
    other = await make_tenant(store, KeyStore(tmp_path / "other"), clock.now(), station_id="CS-O")
    theirs = await meter_on(store, clock, other, 1, "192.0.2.9:502")
    now = clock.now()

    def health(meter_id: str, bus_key: str, **values: object) -> dict[str, object]:
        row = {
            "meter_id": meter_id,
            "bus_key": bus_key,
            "owner": "host:1:old",
            "reads": 10,
            "errors": 3,
            "timeouts": 2,
            "crc_errors": 1,
            "last_answer_at": now,
            "last_error": "crc",
            "dead": False,
            "updated_at": now,
        }
        return {**row, **values}

    async with store.transaction() as session:
        await session.execute(
            insert(MeterPollHealth),
            [
                health(first, "tcp:192.0.2.7:502", last_answer_at=now - timedelta(minutes=1)),
                health(second, "tcp:192.0.2.7:502", dead=True, last_answer_at=None),
                health(third, "tcp:192.0.2.8:502"),
                health(theirs, "tcp:192.0.2.9:502"),
            ],
        )
        await session.execute(
            insert(MeterBusLease).values(
                bus_key="tcp:192.0.2.7:502", owner="host:2:new", expires_at=now + timedelta(seconds=15)
            )
        )
    async with store.transaction() as session:
        listed = await meters.list_buses(session, viewer_of(tenant), PageRequest(limit=1))
        rest = await meters.list_buses(session, viewer_of(tenant), PageRequest.of(1, listed.next))
        polled = await meters.poll_health(session, [first, third])
    [bus] = listed.items
    assert (bus.bus_key, bus.owner, bus.lease_expires_at) == (
        "tcp:192.0.2.7:502",
        "host:2:new",
        now + timedelta(seconds=15),
    )
    assert (bus.meters, bus.dead_meters, bus.reads, bus.timeouts, bus.crc_errors) == (2, 1, 20, 4, 2)
    assert bus.last_answer_at == now - timedelta(minutes=1)
    assert [(b.bus_key, b.owner, b.lease_expires_at) for b in rest.items] == [("tcp:192.0.2.8:502", "host:1:old", None)]
    assert rest.next is None
    assert sorted(polled) == sorted([first, third]) and polled[third].last_error == "crc"


async def test_an_ocpp_session_in_progress_shows_its_energy_as_of_its_newest_meter_value(
    store: Store, clock: ManualClock, tenant: Tenant
) -> None:
    start = clock.now()
    async with store.transaction() as session:
        for transaction_id in (8, 9):
            await session.execute(
                insert(EdgeTransaction).values(
                    id=transaction_id,
                    station_id="CS-1",
                    site_id=tenant.site_id,
                    charge_point_id="CS-1",
                    connector_id=transaction_id - 7,
                    ocpp_connector_id=transaction_id - 7,
                    id_tag="TAG1",
                    started_at=start,
                    meter_start=1000,
                    created_at=start,
                )
            )
        await session.execute(
            insert(MeterSample),
            [
                {"transaction_id": 8, "station_id": "CS-1", "at": start + timedelta(minutes=1), "energy_wh": 1800},
                {"transaction_id": 8, "station_id": "CS-1", "at": start + timedelta(minutes=2), "energy_wh": 2600},
            ],
        )
    async with store.transaction() as session:
        listed = await sessions.list_sessions(
            session, viewer_of(tenant), PageRequest(), sessions.SessionFilter(state="active")
        )
        one = await sessions.get_session(session, viewer_of(tenant), 8)
    assert {view.transaction_id: view.energy_wh for view in listed.items} == {8: 1600, 9: None}
    assert one.energy_wh == 1600 and one.active
