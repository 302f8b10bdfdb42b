"""`make demo`: two simulated meters, one on Modbus TCP and one on an RTU bus, charging in a loop.

The TCP meter is served on a free local port; the RTU meter sits on one end of a pseudo-terminal pair
joined by `serial_bus` in the data folder, and chargenet polls the other end as a real serial device. Both are
configured as meters of the demo station `DEMO-METERS` (recreated on each start, since the ports change), so
their sessions show up as StartTransaction and StopTransaction events beside the OCPP ones.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from chargenet.context import AppContext
from chargenet.meters.bus import SerialLine
from chargenet.meters.profiles import get_profile
from chargenet.services import meters
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import every_page
from chargenet.simulators import demo_site
from chargenet.simulators.meter import MeterServer, ScriptStep, SimulatedMeter, play
from chargenet.simulators.serial_bus import AsyncSerialBus

log = logging.getLogger(__name__)

DEMO_STATION = "DEMO-METERS"


def demo_script(*, offset_s: float = 0.0) -> list[ScriptStep]:
    """A 10-minute loop: standby, a charge with a phase-switch pause, a single-phase tail, then standby long
    enough for the detector's 180 s grace period to end the session."""
    return [
        ScriptStep(30 + offset_s, 0.0, 40.0, label="standby"),
        ScriptStep(120, 16.0, 40.0, label="three-phase 16 A"),
        ScriptStep(20, 0.0, 40.0, label="phase switch pause"),
        ScriptStep(120, (16.0, 0.0, 0.0), 40.0, label="single-phase 16 A"),
        ScriptStep(330 - offset_s, 0.0, 40.0, label="finished, standby"),
    ]


class DemoMeters:
    name = "demo meters"

    def __init__(self, context: AppContext, site_id: str) -> None:
        self._context = context
        self._site_id = site_id
        self._servers: list[MeterServer] = []
        self._bus: AsyncSerialBus | None = None
        self._meters: list[SimulatedMeter] = []

    async def setup(self) -> None:
        context, clock = self._context, self._context.clock
        tcp_meter = SimulatedMeter(get_profile("sdm630"), unit_id=1, energy_wh=1_250_000)
        tcp_server = await MeterServer.tcp([tcp_meter], clock)
        self._servers.append(tcp_server)
        self._meters.append(tcp_meter)
        rtu_device = await self._start_rtu(context.settings.data_dir)
        async with context.store.transaction() as session:
            await demo_site.ensure_station(context, session, self._site_id, DEMO_STATION)
            listed = await every_page(lambda page: meters.list_meters(session, OPERATOR, page, site_id=self._site_id))
            for existing in listed:
                if existing.station_id == DEMO_STATION:
                    await meters.delete_meter(session, OPERATOR, context.outbox, existing.id, now=clock.now())
            await meters.create_meter(
                session,
                OPERATOR,
                site_id=self._site_id,
                station_id=DEMO_STATION,
                connector_id=1,
                profile="sdm630",
                unit_id=1,
                tcp=f"127.0.0.1:{tcp_server.port}",
                id_tag="DEMO-TCP",
                now=clock.now(),
            )
            await meters.create_meter(
                session,
                OPERATOR,
                site_id=self._site_id,
                station_id=DEMO_STATION,
                connector_id=2,
                profile="em24",
                unit_id=7,
                rtu=rtu_device,
                baud=9600,
                id_tag="DEMO-RTU",
                now=clock.now(),
            )

    async def _start_rtu(self, data_dir: Path) -> str:
        meters_end, poller_end = data_dir / "demo-rtu-meters", data_dir / "demo-rtu-poller"
        self._bus = AsyncSerialBus(meters_end, poller_end)
        await self._bus.start()
        rtu_meter = SimulatedMeter(get_profile("em24"), unit_id=7, energy_wh=830_000)
        self._servers.append(
            await MeterServer.serial([rtu_meter], self._context.clock, str(meters_end), SerialLine(9600))
        )
        self._meters.append(rtu_meter)
        return str(poller_end)

    async def run(self, stopping: asyncio.Event) -> None:
        players = [
            asyncio.create_task(play(meter, demo_script(offset_s=60.0 * index), self._context.clock, repeat=True))
            for index, meter in enumerate(self._meters)
        ]
        try:
            await stopping.wait()
        finally:
            for player in players:
                player.cancel()
            await asyncio.gather(*players, return_exceptions=True)
            for server in self._servers:
                await server.stop()
            if self._bus is not None:
                await self._bus.stop()


async def install(context: AppContext, site_id: str) -> DemoMeters:
    demo = DemoMeters(context, site_id)
    await demo.setup()
    context.workers.append(demo)
    return demo
