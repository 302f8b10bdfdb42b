"""The poller's Modbus shell over RTU: pymodbus's real serial server on a pseudo-terminal pair (serial_bus)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from chargenet.clock import ManualClock
from chargenet.meters.bus import BusSettings, RtuBus, SerialLine
from chargenet.meters.errors import MeterUnreachable, ReadFailure
from chargenet.meters.modbus import ModbusLink
from chargenet.meters.poller import BusPoller, PollTarget
from chargenet.meters.profiles import get_profile
from chargenet.simulators.meter import MeterServer, SimulatedMeter
from tests.integration.meters.conftest import PtyPair, RecordingSink

LINE = SerialLine(9600)
# Long enough for the simulated meter, served from the test's own event loop, to answer on a busy machine; a
# silent meter costs this much each time. Still far from pymodbus's own 3 s and 3 retries.
FAST = BusSettings(timeout_s=1.0)


async def bus(
    meters: list[SimulatedMeter], clock: ManualClock, pty: PtyPair, **kwargs: object
) -> AsyncIterator[ModbusLink]:
    server = await MeterServer.serial(meters, clock, pty.server, LINE, **kwargs)  # type: ignore[arg-type]
    link = ModbusLink(RtuBus(pty.client, LINE), FAST)
    try:
        yield link
    finally:
        link.close()
        await server.stop()


async def test_two_meters_on_one_bus_answer_under_their_unit_ids(pty_pair: PtyPair) -> None:
    clock = ManualClock()
    sdm = SimulatedMeter(get_profile("sdm630"), unit_id=5, energy_wh=10_000)
    em = SimulatedMeter(get_profile("em24"), unit_id=6, energy_wh=20_000)
    async for link in bus([sdm, em], clock, pty_pair):
        assert (await link.read("a", sdm.profile, 5)).energy_wh == 10_000
        assert (await link.read("b", em.profile, 6)).energy_wh == 20_000


async def test_crc_error_is_told_apart_from_silence_and_the_next_read_works(pty_pair: PtyPair) -> None:
    clock = ManualClock()
    meter = SimulatedMeter(get_profile("sdm120"), unit_id=5, energy_wh=750, crc_errors=1)
    async for link in bus([meter], clock, pty_pair):
        with pytest.raises(MeterUnreachable) as raised:
            await link.read("m", meter.profile, 5)
        assert (await link.read("m", meter.profile, 5)).energy_wh == 750
    assert raised.value.failure is ReadFailure.CRC


async def test_a_silent_meter_after_a_crc_error_is_a_timeout(pty_pair: PtyPair) -> None:
    clock = ManualClock()
    meter = SimulatedMeter(get_profile("sdm120"), unit_id=5, energy_wh=750, crc_errors=1)
    async for link in bus([meter], clock, pty_pair):
        with pytest.raises(MeterUnreachable):
            await link.read("m", meter.profile, 5)
        meter.silent = True
        with pytest.raises(MeterUnreachable) as raised:
            await link.read("m", meter.profile, 5)
    assert raised.value.failure is ReadFailure.TIMEOUT


async def test_reply_from_the_wrong_unit_is_dropped_and_the_next_read_works(pty_pair: PtyPair) -> None:
    # pymodbus's RTU framer skips a frame addressed from another unit, so it ends as a timeout.
    clock = ManualClock()
    meter = SimulatedMeter(get_profile("abb-b24"), unit_id=5, wrong_unit_replies=1, energy_wh=1230)
    async for link in bus([meter], clock, pty_pair):
        with pytest.raises(MeterUnreachable) as raised:
            await link.read("m", meter.profile, 5)
        assert (await link.read("m", meter.profile, 5)).energy_wh == 1230
    assert raised.value.failure is ReadFailure.TIMEOUT


async def test_dead_meter_costs_at_most_its_timeout_per_cycle(pty_pair: PtyPair) -> None:
    clock = ManualClock()
    live = [SimulatedMeter(get_profile("sdm630"), unit_id=u) for u in (1, 2, 3)]
    dead = SimulatedMeter(get_profile("sdm630"), unit_id=9, silent=True)
    sink = RecordingSink()
    start = clock.now()
    async for link in bus([*live, dead], clock, pty_pair):
        poller = BusPoller("rtu", link, sink, clock, settings=FAST)
        poller.set_targets([PollTarget(f"m{m.unit_id}", m.profile, m.unit_id) for m in [*live, dead]])
        for _ in range(6):
            await poller.run_once()
            clock.advance(5)
    assert sink.polled().count("m1") == 6
    # Dead after 3 failures in a row, then probed after a 10 s backoff.
    assert [(at - start).total_seconds() for _, _, at in sink.failures] == [0, 5, 10, 20]
    # Each failure was one request, not retried: the cycle waited one timeout for it (the link's, FAST's).
    assert dead.reads == len(sink.failures)
