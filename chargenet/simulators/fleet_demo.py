"""`make demo`'s OCPP side: an upstream central system and two stations charging in turns through the edge.

The demo site is pointed at a simulated upstream CPO on a free local port (recreated on each start, since the
port changes). DEMO-1 charges with a tag from the site's local list, decided at the edge and never forwarded;
DEMO-2 with a tag only the upstream knows, so its Authorize goes through the proxy. The stations stay connected
and take turns: one charges for half a minute, reporting its meter every few seconds, while the other waits
Available; they alternate plug-first and tag-first sessions and connectors 1 and 2. So Authorize,
ChargePointStatus, StartTransaction and StopTransaction events flow, the live page shows a connector Charging at
any moment, and each session has a curve of meter values to draw.

With `OCPP201_STATION` on (as it is), a third station, DEMO-3, takes its turns beside them speaking OCPP 2.0.1 (a
station's generation is its own: the same story, told in TransactionEvents), charging with the local tag. It takes
the first turn, so the newest generation is on show from the start.

The site has a limit: its grid connection carries `DEMO_LIMIT_A` per phase and every demo station hangs on it, so
each station holds its safe default and each session the allowance the edge sends it as a charging profile. What
the charging station draws (`stations_draw_a`) is what the site's grid meter adds to the building's load
(`grid_demo`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from chargenet.context import AppContext
from chargenet.services import circuits, localauth, sites
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from chargenet.simulators import demo_site
from chargenet.simulators.cpo import SimulatedCentralSystem
from chargenet.simulators.ocpp201.charging_profiles import DEFAULT_PHASES, VOLTS
from chargenet.simulators.ocpp201.station import SimulatedStation201
from chargenet.simulators.ocppj import StationConnectionLost
from chargenet.simulators.scenario import simulated_station
from chargenet.simulators.session import DemoStation
from chargenet.simulators.station import SimulatedStation

log = logging.getLogger(__name__)

# (station id, idTag it charges with); the first tag is in the local list, the second only upstream.
DEMO_STATIONS = (("DEMO-1", "DEMO-LOCAL-TAG"), ("DEMO-2", "DEMO-UPSTREAM-TAG"))
# The OCPP 2.0.1 station and its tag (the local one: the simulated upstream speaks 1.6 only, so the edge is its
# central system), in the demo when OCPP201_STATION is on.
DEMO_STATION_201 = ("DEMO-3", "DEMO-LOCAL-TAG")
OCPP201_STATION = True
CONNECTORS = 2
DEMO_AUTHORIZATION_KEY = "demo-authorization-key"
CHARGING_S = 30.0  # a session's length
METER_EVERY_S = 5.0  # MeterValues while charging
PAUSE_BETWEEN_TURNS_S = 5.0
DEMO_LIMIT_A = 20.0  # per phase, the demo site's grid connection


class DemoFleet:
    name = "demo fleet"

    def __init__(self, context: AppContext, site_id: str, *, ocpp201: bool = OCPP201_STATION) -> None:
        self._context = context
        self._site_id = site_id
        self.central = SimulatedCentralSystem()
        # (station id, tag, speaks 2.0.1)
        self.stations = [(station_id, tag, False) for station_id, tag in DEMO_STATIONS]
        if ocpp201:
            self.stations.insert(0, (*DEMO_STATION_201, True))
        self._charging: tuple[DemoStation, int] | None = None  # the station whose turn it is, and its connector

    def stations_draw_a(self) -> float:
        """What the stations draw per phase now: the vehicle of the station whose turn it is, within its profiles."""
        if self._charging is None:
            return 0.0
        station, connector_id = self._charging
        if isinstance(station, SimulatedStation201):
            power_w = station.power_w(connector_id)
            return (station.max_power_w if power_w is None else power_w) / (VOLTS * DEFAULT_PHASES)
        assert isinstance(station, SimulatedStation)
        return station.current_a(connector_id)

    def described(self) -> str:
        """The stations for the demo's banner, by generation: the 1.6 ones go through the upstream CPO, and the edge
        is the 2.0.1 station's central system (the demo's upstream, a 1.6 simulator, takes 1.6 only)."""
        by_16 = [station_id for station_id, _, speaks_201 in self.stations if not speaks_201]
        by_201 = [station_id for station_id, _, speaks_201 in self.stations if speaks_201]
        parts = [f"{' and '.join(by_16)} (OCPP 1.6J, through the upstream CPO)"]
        if by_201:
            parts.append(f"{' and '.join(by_201)} (OCPP 2.0.1, answered by the edge)")
        return "; ".join(parts)

    async def setup(self) -> None:
        context = self._context
        now = context.clock.now()
        await self.central.start()
        async with context.store.transaction() as session:
            await sites.update_site(
                session,
                OPERATOR,
                context.keys.credential_cipher(),
                self._site_id,
                now=now,
                upstream_url=self.central.url,
            )
            for station_id, _, speaks_201 in self.stations:
                await demo_site.ensure_station(
                    context, session, self._site_id, station_id, password=DEMO_AUTHORIZATION_KEY, ocpp201=speaks_201
                )
            await localauth.add_entry(session, OPERATOR, site_id=self._site_id, id_tag=DEMO_STATIONS[0][1], now=now)
            await self._limit_the_site(session, now)
        context.on_shutdown.append(self.central.stop)

    async def _limit_the_site(self, session: AsyncSession, now: datetime) -> None:
        """The site's grid connection with its limit, every demo station on it, unless it has circuits already."""
        existing = await circuits.list_circuits(session, OPERATOR, PageRequest(limit=1), site_id=self._site_id)
        if existing.items:
            return
        grid = await circuits.create_circuit(
            session, OPERATOR, site_id=self._site_id, name="Grid connection", limit_amps=DEMO_LIMIT_A, now=now
        )
        for station_id, _, _ in self.stations:
            await circuits.place_station(session, OPERATOR, station_id, now=now, circuit_id=grid.id, phases="L1L2L3")

    async def run(self, stopping: asyncio.Event) -> None:
        url = f"ws://127.0.0.1:{self._context.settings.port}/ocpp"
        while not stopping.is_set():
            pause = PAUSE_BETWEEN_TURNS_S
            try:
                await self._take_turns(url, stopping)
            except Exception as failed:
                if _server_away(failed):
                    pause = 1.0
                elif not stopping.is_set():
                    log.exception("demo fleet round failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), pause)

    async def _take_turns(self, url: str, stopping: asyncio.Event) -> None:
        fleet = [
            (simulated_station(url, station_id, DEMO_AUTHORIZATION_KEY, ocpp201=speaks_201), tag)
            for station_id, tag, speaks_201 in self.stations
        ]
        try:
            for station, _ in fleet:
                await station.connect()
                await station.boot()
                await station.report_available(CONNECTORS)
            turn = 0
            while not stopping.is_set():
                station, tag = fleet[turn % len(fleet)]
                # Each station alternates its connectors and the order of cable and badge, turn by turn.
                round_ = turn // len(fleet)
                session = station.plug_first_session if round_ % 2 == 0 else station.id_first_session
                connector_id = 1 + round_ % 2
                self._charging = (station, connector_id)
                try:
                    await session(
                        connector_id,
                        tag,
                        wh=random.randint(2_000, 12_000),
                        charging_seconds=CHARGING_S,
                        meter_every=METER_EVERY_S,
                    )
                finally:
                    self._charging = None
                for waiting, _ in fleet:
                    await waiting.heartbeat()
                turn += 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), PAUSE_BETWEEN_TURNS_S)
        finally:
            for station, _ in fleet:
                await station.close()


def _server_away(failed: Exception) -> bool:
    """Whether a round ended because the server is not there: still starting (its workers start before it listens),
    or stopping. uvicorn closes the stations' sockets (1012) before the lifespan tells the workers it stops, so the
    fleet's `stopping` may not be set yet. A connection closed with any other code, or a call the server left
    unanswered, ends the round as a failure."""
    if isinstance(failed, TimeoutError):  # an OSError too
        return False
    if isinstance(failed, StationConnectionLost):
        return failed.code in (None, CloseCode.SERVICE_RESTART)
    if isinstance(failed, ConnectionClosed):
        return failed.rcvd is None or failed.rcvd.code == CloseCode.SERVICE_RESTART
    return isinstance(failed, OSError)


async def install(context: AppContext, site_id: str, *, ocpp201: bool = OCPP201_STATION) -> DemoFleet:
    fleet = DemoFleet(context, site_id, ocpp201=ocpp201)
    await fleet.setup()
    context.workers.append(fleet)
    return fleet
