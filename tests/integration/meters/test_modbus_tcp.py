"""The poller's Modbus shell against pymodbus's real TCP server serving simulated meters."""

from __future__ import annotations

import asyncio
import gc
import socket
from collections.abc import AsyncIterator

import pytest

from chargenet.clock import ManualClock
from chargenet.meters.bus import BackoffPolicy, BusSettings, TcpEndpoint
from chargenet.meters.errors import MeterUnreachable, ReadFailure
from chargenet.meters.modbus import ModbusLink
from chargenet.meters.poller import BusPoller, PollTarget
from chargenet.meters.profiles import PROFILES, get_profile
from chargenet.simulators.meter import MeterServer, SimulatedMeter
from tests.integration.meters.conftest import RecordingSink

# Long enough for the simulated meter, served from the test's own event loop, to answer on a busy machine; a
# silent meter costs this much each time. Still far from pymodbus's own 3 s and 3 retries.
FAST = BusSettings(timeout_s=1.0)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


async def serve(meters: list[SimulatedMeter], clock: ManualClock) -> AsyncIterator[tuple[MeterServer, ModbusLink]]:
    server = await MeterServer.tcp(meters, clock)
    assert server.port is not None
    link = ModbusLink(TcpEndpoint("127.0.0.1", server.port), FAST)
    try:
        yield server, link
    finally:
        link.close()
        await server.stop()


@pytest.mark.parametrize("name", sorted(PROFILES))
async def test_every_profile_reads_back_what_the_simulated_meter_measures(name: str, clock: ManualClock) -> None:
    profile = get_profile(name)
    meter = SimulatedMeter(profile, unit_id=7, energy_wh=1_234_500)
    meter.set_load(clock.now(), 16.0)
    async for _, link in serve([meter], clock):
        reading = await link.read("m", profile, 7)
    assert reading.energy_wh == 1_234_500
    if profile.currents:
        assert reading.currents_a == pytest.approx((16.0,) * len(profile.currents))
    else:
        assert reading.power_w == pytest.approx(16.0 * 230 * 3)


async def test_counter_advances_with_the_clock(clock: ManualClock) -> None:
    profile = get_profile("sdm630")
    meter = SimulatedMeter(profile, unit_id=1, energy_wh=1000)
    meter.set_load(clock.now(), 16.0)
    async for _, link in serve([meter], clock):
        clock.advance(3600)
        reading = await link.read("m", profile, 1)
    assert reading.energy_wh == 1000 + 16 * 230 * 3


async def test_silent_meter_is_a_timeout_after_the_bus_timeout(clock: ManualClock) -> None:
    meter = SimulatedMeter(get_profile("sdm630"), unit_id=1, silent=True)
    async for _, link in serve([meter], clock):
        with pytest.raises(MeterUnreachable) as raised:
            await link.read("m", meter.profile, 1)
    assert raised.value.failure is ReadFailure.TIMEOUT


async def test_absent_unit_id_stays_silent(clock: ManualClock) -> None:
    meter = SimulatedMeter(get_profile("sdm630"), unit_id=1)
    async for _, link in serve([meter], clock):
        with pytest.raises(MeterUnreachable) as raised:
            await link.read("m", meter.profile, 2)
    assert raised.value.failure is ReadFailure.TIMEOUT


async def test_wrong_function_code_gets_an_exception_response(clock: ManualClock) -> None:
    meter = SimulatedMeter(get_profile("em340"), unit_id=1)
    async for _, link in serve([meter], clock):
        with pytest.raises(MeterUnreachable) as raised:
            await link.read("m", get_profile("abb-b23"), 1)
    assert raised.value.failure is ReadFailure.EXCEPTION


async def test_reply_from_the_wrong_unit_is_dropped_and_the_next_read_works(clock: ManualClock) -> None:
    meter = SimulatedMeter(get_profile("sdm630"), unit_id=3, wrong_unit_replies=1, energy_wh=5000)
    async for _, link in serve([meter], clock):
        with pytest.raises(MeterUnreachable) as raised:
            await link.read("m", meter.profile, 3)
        assert (await link.read("m", meter.profile, 3)).energy_wh == 5000
    assert raised.value.failure is ReadFailure.TIMEOUT


async def test_sentinel_counter_is_reported_as_no_value(clock: ManualClock) -> None:
    meter = SimulatedMeter(get_profile("abb-b23"), unit_id=1, sentinel=True)
    async for _, link in serve([meter], clock):
        reading = await link.read("m", meter.profile, 1)
    assert reading.energy_wh is None


async def test_unreachable_endpoint_is_a_connect_failure() -> None:
    link = ModbusLink(TcpEndpoint("127.0.0.1", 1), FAST)
    with pytest.raises(MeterUnreachable) as raised:
        await link.read("m", get_profile("sdm630"), 1)
    link.close()
    assert raised.value.failure is ReadFailure.CONNECT


async def test_a_peer_that_is_no_meter_costs_a_failed_read_and_no_socket() -> None:
    async def not_modbus(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)  # an HTTP server on the meter's port: it refuses the request and hangs up
        writer.write(b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
        writer.close()

    before = _open_sockets()
    server = await asyncio.start_server(not_modbus, "127.0.0.1", 0)
    # The peer answers at once, if not as a meter: a short timeout is only how long the poller waits for the rest.
    link = ModbusLink(TcpEndpoint("127.0.0.1", server.sockets[0].getsockname()[1]), BusSettings(timeout_s=0.3))
    try:
        for _ in range(3):
            with pytest.raises(MeterUnreachable):
                await link.read("m", get_profile("sdm630"), 1)
    finally:
        link.close()
        server.close()
        await server.wait_closed()
    assert _open_sockets() - before == set()


def _open_sockets() -> set[socket.socket]:
    """The TCP sockets this process holds open, those that nothing refers to any more too (until the GC's turn)."""
    tcp = (socket.AF_INET, socket.AF_INET6)
    # By type, not isinstance: the collector's objects include weak proxies, some to objects gone already.
    found = (s for s in gc.get_objects() if issubclass(type(s), socket.socket))
    return {s for s in found if s.family in tcp and s.fileno() != -1}


async def test_dead_meter_is_backed_off_while_the_live_one_keeps_its_cadence(clock: ManualClock) -> None:
    live = SimulatedMeter(get_profile("sdm630"), unit_id=1)
    dead = SimulatedMeter(get_profile("sdm630"), unit_id=2, silent=True)
    sink = RecordingSink()
    async for _, link in serve([live, dead], clock):
        poller = BusPoller("tcp", link, sink, clock, settings=FAST, policy=BackoffPolicy(initial_backoff_s=60))
        poller.set_targets([PollTarget("live", live.profile, 1), PollTarget("dead", dead.profile, 2)])
        for _ in range(12):
            await poller.run_once()
            clock.advance(5)
    assert [m for m, _, _ in sink.readings] == ["live"] * 12
    assert [m for m, _, _ in sink.failures] == ["dead"] * 3
    assert poller.health.meters["dead"].dead
    assert poller.health.meters["dead"].timeouts == 3
    assert poller.health.meters["live"].last_good_at is not None
