"""`make demo`'s OCPP side: an upstream central system and two stations charging in turns through the edge.

The demo site is pointed at a simulated upstream CPO on a free local port (recreated on each start, since the
port changes). DEMO-1 charges with a tag from the site's local list, decided at the edge and never forwarded;
DEMO-2 with a tag only the upstream knows, so its Authorize goes through the proxy. Both alternate plug-first
and tag-first sessions, so Authorize, ChargePointStatus, StartTransaction and StopTransaction events flow.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from chargenet.context import AppContext
from chargenet.errors import NotFound
from chargenet.services import localauth, sites, stations
from chargenet.services.callers import OPERATOR
from chargenet.simulators.cpo import SimulatedCentralSystem
from chargenet.simulators.scenario import drive_station
from chargenet.simulators.station import SimulatedStation

log = logging.getLogger(__name__)

# (station id, idTag it charges with); the first tag is in the local list, the second only upstream.
DEMO_STATIONS = (("DEMO-1", "DEMO-LOCAL-TAG"), ("DEMO-2", "DEMO-UPSTREAM-TAG"))
DEMO_AUTHORIZATION_KEY = "demo-authorization-key"
PAUSE_BETWEEN_ROUNDS_S = 20.0


class DemoFleet:
    name = "demo fleet"

    def __init__(self, context: AppContext, site_id: str) -> None:
        self._context = context
        self._site_id = site_id
        self.central = SimulatedCentralSystem()

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
            for station_id, _ in DEMO_STATIONS:
                try:
                    await stations.get_station(session, OPERATOR, station_id)
                except NotFound:
                    await stations.create_station(
                        session,
                        OPERATOR,
                        context.keys.secret_hasher(),
                        context.keys.credential_cipher(),
                        site_id=self._site_id,
                        station_id=station_id,
                        password=DEMO_AUTHORIZATION_KEY,
                        connectors=2,
                        now=now,
                    )
            await localauth.add_entry(session, OPERATOR, site_id=self._site_id, id_tag=DEMO_STATIONS[0][1], now=now)
        context.on_shutdown.append(self.central.stop)

    async def run(self, stopping: asyncio.Event) -> None:
        url = f"ws://127.0.0.1:{self._context.settings.port}/ocpp"
        while not stopping.is_set():
            pause = PAUSE_BETWEEN_ROUNDS_S
            try:
                await asyncio.gather(
                    *(
                        drive_station(SimulatedStation(url, station_id, DEMO_AUTHORIZATION_KEY), tag, 2, 5.0)
                        for station_id, tag in DEMO_STATIONS
                    )
                )
            except OSError:
                # The server is still starting (workers start before it listens), or stopping.
                pause = 1.0
            except Exception:
                log.exception("demo fleet round failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), pause)


async def install(context: AppContext, site_id: str) -> DemoFleet:
    fleet = DemoFleet(context, site_id)
    await fleet.setup()
    context.workers.append(fleet)
    return fleet
