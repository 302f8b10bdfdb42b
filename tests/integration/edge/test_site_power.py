"""Site power on the wire (decisions.md "Site power"): the allocator's decisions reach real 1.6 connections as
charging profiles, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import replace
from datetime import timedelta

import httpx
import pytest
from ocpp.v201 import call
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from chargenet import power_changes
from chargenet.domain.charging_profiles import TX, TX_DEFAULT, profile_id
from chargenet.edge.power import PowerController
from chargenet.meters.profiles import get_profile
from chargenet.services.callers import OPERATOR
from chargenet.services.circuits import update_circuit
from chargenet.services.grid_meters import create_grid_meter
from chargenet.services.site_power import SitePowerView, site_power
from chargenet.simulators.cpo import SimulatedCentralSystem
from chargenet.simulators.meter import MeterServer, grid_meter
from chargenet.simulators.ocpp201.station import SimulatedStation201
from chargenet.simulators.station import SimulatedStation
from chargenet.store.models import Circuit, PowerAllowance, StationCircuit, StationProfileAnswer
from tests.integration.edge.conftest import PASSWORD, Served, manual_clock
from tests.integration.edge.test_ocpp201_upstream import Upstream201
from tests.support.processes import eventually

LIMIT_A = 20.0


async def limit_the_site(served: Served, station_id: str = "CS-1") -> None:
    """A grid connection of 20 A per phase, the station on it with its three phases."""
    now = served.context.clock.now()
    async with served.context.store.transaction() as session:
        session.add(
            Circuit(
                id="circuit_grid",
                site_id=served.tenant.site_id,
                name="Grid",
                limit_a=LIMIT_A,
                created_at=now,
                updated_at=now,
            )
        )
    await place(served, station_id)


async def place(served: Served, station_id: str) -> None:
    """The station on the site's grid connection, with its three phases."""
    now = served.context.clock.now()
    async with served.context.store.transaction() as session:
        session.add(StationCircuit(station_id=station_id, circuit_id="circuit_grid", phases="L1L2L3", updated_at=now))


def sample(metrics: str, name: str, labels: dict[str, str]) -> float | None:
    for family in text_string_to_metric_families(metrics):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return float(found.value)
    return None


def watts(amps: float) -> float:
    """What a three-phase vehicle held to `amps` per phase draws, as the 2.0.1 simulator counts it."""
    return amps * 230.0 * 3


def limit_on(station: SimulatedStation, connector_id: int, purpose: str) -> float | None:
    profile = station.profiles.in_force(connector_id, purpose)
    if profile is None:
        return None
    return float(profile["chargingSchedule"]["chargingSchedulePeriod"][0]["limit"])


async def test_sessions_on_a_limited_circuit_share_it_and_a_restart_keeps_their_allowances(
    served_manual: Served,
) -> None:
    served = served_manual
    await limit_the_site(served)
    station = served.station()
    await station.connect()
    await station.boot()
    # Every connector holds a safe default: as many 6 A as fit under the limit.
    await eventually(lambda: [limit_on(station, c, TX_DEFAULT) for c in (1, 2)] == [6.0, 6.0])

    first = int((await station.start(1, "TAG1"))["transactionId"])
    second = int((await station.start(2, "TAG2"))["transactionId"])
    await eventually(lambda: [limit_on(station, c, TX) for c in (1, 2)] == [10.0, 10.0])
    assert station.current_a(1) + station.current_a(2) <= LIMIT_A
    async with httpx.AsyncClient() as client:
        metrics = (await client.get(f"{served.http_url}/metrics")).text
    circuit = {"site": served.tenant.site_id, "circuit": "circuit_grid"}
    assert sample(metrics, "chargenet_site_power_limit_amperes", circuit) == LIMIT_A
    assert sample(metrics, "chargenet_site_power_allocated_amperes", {**circuit, "phase": "L2"}) == 20.0
    assert sample(metrics, "chargenet_site_sessions_paused", circuit) == 0

    # One ends: the other gets what it leaves once the station may be sent an increase (30 s after the last).
    await station.stop(first, 1000)
    await served.edge.message_log.run_once()  # the store shows the station connected now, not within a second
    async with served.context.store.read() as session:
        view = await site_power(session, OPERATOR, served.tenant.site_id, now=served.context.clock.now())
    assert [(s.transaction_id, s.allowance_amps) for s in view.sessions] == [(second, 10.0)]  # what it holds yet
    manual_clock(served).advance(31)
    assert served.edge.power is not None
    served.edge.power.poke(served.tenant.site_id)  # its next timed round, whether or not its sleep had begun
    await eventually(lambda: limit_on(station, 2, TX) == 20.0)
    assert station.current_a(2) == 20.0

    # Another process runs the site's rounds only once this one has let it go (PostgreSQL; SQLite is one process),
    # and resumes from the stored allowances: nothing to send, the site still under its limit.
    async with served.context.store.read() as session:
        stored = {row.transaction_id: row.amps for row in await session.scalars(select(PowerAllowance))}
    assert stored == {second: 20.0}
    site_id, now = served.tenant.site_id, served.context.clock.now()
    restarted = PowerController(served.edge, owner="another-process")
    running = served.edge.power
    assert running is not None
    if served.context.store.dialect == "postgresql":
        assert await running.hold([site_id], now) == [site_id]  # renewed, as each of its rounds does
        assert await restarted.hold([site_id], now) == []
        await running.release()
    assert await restarted.hold([site_id], now) == [site_id]
    sent_before = len(station.received_calls)
    result = await restarted.run_site(site_id)
    assert [(a.session_id, a.amps, a.send) for a in result.allowances] == [(str(second), 20.0, False)]
    assert len(station.received_calls) == sent_before
    await station.close()


async def test_a_limit_lowered_by_another_process_is_shared_at_once_on_postgresql(
    served_manual_pg: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = served_manual_pg
    # This process's own commits poke nobody here: the change reaches the controller as another process's would.
    monkeypatch.setattr(power_changes, "_controllers", weakref.WeakSet())
    await limit_the_site(served)
    station = served.station()
    await station.connect()
    await station.boot()
    await station.start(1, "TAG1")  # the session's start pokes the round itself
    await eventually(lambda: limit_on(station, 1, TX) == LIMIT_A)
    async with served.context.store.transaction() as session:
        await update_circuit(session, OPERATOR, "circuit_grid", now=served.context.clock.now(), limit_amps=12.0)
    # No timed round comes (the clock stands still): the notification alone runs it.
    await eventually(lambda: limit_on(station, 1, TX) == 12.0)
    await station.close()


async def test_an_upstreams_lower_profile_wins_over_the_edges(served: Served, cpo: SimulatedCentralSystem) -> None:
    await limit_the_site(served)
    await served.point_site_at(cpo)
    station = served.station()
    await station.connect()
    await cpo.wait_connected("CS-1")
    await station.boot()
    started = int((await station.start(1, "TAG1"))["transactionId"])
    await eventually(lambda: limit_on(station, 1, TX) == LIMIT_A)
    upstream_id = 90001  # the upstream simulator's first transaction id
    lower = {
        "connectorId": 1,
        "csChargingProfiles": {
            "chargingProfileId": 5,
            "transactionId": upstream_id,
            "stackLevel": 2,
            "chargingProfilePurpose": TX,
            "chargingProfileKind": "Relative",
            "chargingSchedule": {"chargingRateUnit": "A", "chargingSchedulePeriod": [{"startPeriod": 0, "limit": 8}]},
        },
    }
    answer = await cpo.call("CS-1", "SetChargingProfile", lower)
    assert answer[2] == {"status": "Accepted"}
    assert limit_on(station, 1, TX) == 8.0
    assert station.current_a(1) == 8.0
    # One profile per purpose: the merge replaced the edge's, it did not stack beside it.
    assert [p.profile["transactionId"] for p in station.profiles.kept if p.purpose == TX] == [started]
    # The upstream asks what the station will do: the station's own answer, which is the merge's.
    composite = await cpo.call("CS-1", "GetCompositeSchedule", {"connectorId": 1, "duration": 3600})
    assert composite[2]["chargingSchedule"]["chargingSchedulePeriod"][0]["limit"] == 8.0

    # Cleared by the upstream: the edge's own limit comes back rather than none.
    answer = await cpo.call("CS-1", "ClearChargingProfile", {"id": 5})
    assert answer[2] == {"status": "Accepted"}
    assert limit_on(station, 1, TX) == LIMIT_A
    await station.close()


async def test_an_upstreams_profile_before_the_edges_allowance_is_replaced_by_the_merge_and_cleared_by_its_id(
    served_manual: Served, cpo: SimulatedCentralSystem
) -> None:
    served = served_manual
    await served.point_site_at(cpo)
    station = served.station()
    await station.connect()
    await cpo.wait_connected("CS-1")
    await station.boot()
    await station.start(1, "TAG1")
    await limit_the_site(served)  # placed after the session started, before any round gave it an allowance
    lower = {
        "connectorId": 1,
        "csChargingProfiles": {
            "chargingProfileId": 5,
            "transactionId": 90001,  # the upstream simulator's first transaction id
            "stackLevel": 2,
            "chargingProfilePurpose": TX,
            "chargingProfileKind": "Relative",
            "chargingSchedule": {"chargingRateUnit": "A", "chargingSchedulePeriod": [{"startPeriod": 0, "limit": 8}]},
        },
    }
    assert (await cpo.call("CS-1", "SetChargingProfile", lower))[2] == {"status": "Accepted"}
    # Under the edge's id and stack level: the edge's own profile will replace it rather than lose to it.
    (held,) = [p.profile for p in station.profiles.kept if p.purpose == TX]
    assert (held["chargingProfileId"], held["stackLevel"], limit_on(station, 1, TX)) == (profile_id(TX, 1), 0, 8.0)

    # Cleared by the upstream while the edge has no limit of its own there: the station holds no TxProfile.
    assert (await cpo.call("CS-1", "ClearChargingProfile", {"id": 5}))[2] == {"status": "Accepted"}
    assert [p for p in station.profiles.kept if p.purpose == TX] == []

    # Set again, then the edge's round: one TxProfile, the lower of both.
    assert (await cpo.call("CS-1", "SetChargingProfile", lower))[2] == {"status": "Accepted"}
    assert served.edge.power is not None
    served.edge.power.poke(served.tenant.site_id)
    await eventually(
        lambda: sum(1 for p in station.profiles.kept if p.purpose == TX) == 1 and station.current_a(1) == 8.0
    )
    assert limit_on(station, 1, TX) == 8.0
    await station.close()


async def test_on_2_0_1_an_upstreams_lower_profile_wins_is_what_the_schedule_says_and_a_clear_restores_the_edges(
    served: Served,
) -> None:
    await served.add_station("CS-201", password=PASSWORD, charge_points=2, connectors=1)
    await limit_the_site(served, "CS-201")
    upstream = Upstream201()
    await upstream.start()
    await served.set_upstream(upstream.url, ocpp_versions=["ocpp1.6", "ocpp2.0.1"])
    station = SimulatedStation201(served.ocpp_url, "CS-201", PASSWORD)
    await station.connect()
    await station.boot()
    await station.cable_in(1)
    await station.badge(1, "TAG1")
    transaction = await station.begin(1, "TAG1")
    await eventually(lambda: station.power_w(1) == watts(LIMIT_A) and "CS-201" in upstream.points)
    csms = upstream.points["CS-201"]
    lower = {
        "id": 5,
        "stackLevel": 2,
        "chargingProfilePurpose": TX,
        "chargingProfileKind": "Relative",
        "transactionId": transaction.transaction_id,
        "chargingSchedule": [
            {"id": 1, "chargingRateUnit": "W", "chargingSchedulePeriod": [{"startPeriod": 0, "limit": watts(8.0)}]}
        ],
    }
    answer = await csms.call(call.SetChargingProfile(evse_id=1, charging_profile=lower))
    assert answer.status == "Accepted"
    assert station.power_w(1) == watts(8.0)
    # One profile per purpose: the merge replaced the edge's, it did not stack beside it.
    assert [p.profile["id"] for p in station.profiles.kept if p.purpose == TX] == [profile_id(TX, 1)]

    # The upstream asks what the station will do: the station's own answer, which is the merge's.
    composite = await csms.call(call.GetCompositeSchedule(duration=3600, evse_id=1, charging_rate_unit="A"))
    assert composite.status == "Accepted"
    assert composite.schedule["charging_schedule_period"][0]["limit"] == 8.0

    # Cleared by the upstream: the edge's own limit comes back rather than none.
    cleared = await csms.call(call.ClearChargingProfile(charging_profile_id=5))
    assert cleared.status == "Accepted"
    assert station.power_w(1) == watts(LIMIT_A)
    await station.close()
    await upstream.stop()


async def test_a_2_0_1_station_charges_within_its_allowance_beside_one_that_refuses_profiles(served: Served) -> None:
    await served.add_station("CS-201", password=PASSWORD, charge_points=2, connectors=1)
    await limit_the_site(served, "CS-201")
    station = SimulatedStation201(served.ocpp_url, "CS-201", PASSWORD)
    await station.connect()
    await station.boot()
    await eventually(lambda: [station.power_w(evse) for evse in (1, 2)] == [watts(6.0), watts(6.0)])

    await station.cable_in(1)
    await station.badge(1, "TAG1")
    await station.begin(1, "TAG1")
    await eventually(lambda: station.power_w(1) == watts(LIMIT_A))
    assert station.power_w(2) == watts(6.0)

    # A station that refuses profiles is counted at its full rating: a session there leaves no room for this one.
    await place(served, "CS-1")
    refusing = served.station()
    refusing.answers["SetChargingProfile"] = lambda _: {"status": "Rejected"}
    await refusing.connect()
    await refusing.boot()
    await refusing.start(1, "TAG2")
    await eventually(lambda: station.power_w(1) == 0)
    async with served.context.store.read() as session:
        answer = await session.get(StationProfileAnswer, "CS-1")
    assert answer is not None and answer.answer == "Rejected"
    await refusing.close()
    await station.close()


async def test_a_grid_meters_measured_load_lowers_the_allowances_and_a_silent_meter_falls_back_to_the_limit(
    served: Served,
) -> None:
    await limit_the_site(served)
    station = served.station()
    # The building draws 8 A per phase beside the station, whose vehicle draws what its profile allows.
    meter = grid_meter(get_profile("sdm630"), 1, 8.0, lambda: station.current_a(1))
    server = await MeterServer.tcp([meter], served.context.clock)
    controller = served.edge.power
    assert controller is not None
    # A silent meter after a second; increases sent at once, so that the fallback shows without waiting 30 s.
    controller.settings = replace(
        controller.settings, meter_silent_after=timedelta(seconds=1), increase_every=timedelta(0)
    )
    now = served.context.clock.now()
    async with served.context.store.transaction() as session:
        created = await create_grid_meter(
            session,
            OPERATOR,
            site_id=served.tenant.site_id,
            profile="sdm630",
            unit_id=1,
            now=now,
            tcp=f"127.0.0.1:{server.port}",
        )
        circuit = await session.get(Circuit, "circuit_grid")
        assert circuit is not None
        circuit.meter_id = created.id
    await station.connect()
    await station.boot()
    started = int((await station.start(1, "TAG1"))["transactionId"])
    await eventually(lambda: meter.reads > 0 and limit_on(station, 1, TX) is not None)
    await station.meter_values(1, started, 1000)  # what the vehicle draws now, as the station reports it

    # 20 A less the building's 8 A: the station's own draw is not counted twice.
    await eventually(lambda: limit_on(station, 1, TX) == 12.0, within=15)
    site_id, silent_after = served.tenant.site_id, timedelta(seconds=1)

    async def power_view() -> SitePowerView:
        async with served.context.store.read() as session:
            now = served.context.clock.now()
            return await site_power(session, OPERATOR, site_id, now=now, silent_after=silent_after)

    async with asyncio.timeout(10):  # the meter's next reading shows the station at 12 A
        while (view := await power_view()).circuits[0].measured != {"L1": 20.0, "L2": 20.0, "L3": 20.0}:
            await asyncio.sleep(0.05)
    assert view.circuits[0].other_load == {"L1": 8.0, "L2": 8.0, "L3": 8.0}
    assert view.circuits[0].meter_fault is None
    assert (view.sessions[0].draw_amps, view.sessions[0].allowance_amps) == (12.0, 12.0)

    # The meter falls silent: the circuit falls back to its whole limit, and says why.
    meter.silent = True
    await eventually(lambda: limit_on(station, 1, TX) == LIMIT_A, within=15)
    grid = (await power_view()).circuits[0]
    assert (grid.meter_silent, grid.meter_fault, grid.measured) == (True, "silent", None)
    assert grid.available == {"L1": LIMIT_A, "L2": LIMIT_A, "L3": LIMIT_A}
    async with httpx.AsyncClient() as client:
        metrics = (await client.get(f"{served.http_url}/metrics")).text
    labels = {"site": served.tenant.site_id, "circuit": "circuit_grid", "reason": "silent"}
    assert sample(metrics, "chargenet_site_power_meter_fallback", labels) == 1.0
    await station.close()
    await server.stop()
