"""`make demo`'s grid meter: a Modbus TCP meter on the demo site's grid connection, measuring the building beside
the stations plus what the simulated stations draw, so the site's Power page shows a measured load and the
allocator sharing what the building leaves.

The building's load steps through `BUILDING_LOAD_A` every `BUILDING_STEP_S`, so the sessions' allowances follow
it: lowered at once when the building draws more, raised again once it draws less. The meter is served on a free
local port and recreated on each start (the port changes): a new grid meter measures the grid connection, and the
ones of earlier starts are deleted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from chargenet.context import AppContext
from chargenet.meters.profiles import get_profile
from chargenet.services import circuits, grid_meters
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import every_page
from chargenet.simulators.meter import MeterServer, grid_meter

PROFILE = "sdm630"
UNIT_ID = 1
BUILDING_LOAD_A = (4.0, 8.0, 12.0, 6.0)  # per phase, in turn
BUILDING_STEP_S = 90.0


class DemoGridMeter:
    name = "demo grid meter"

    def __init__(self, context: AppContext, site_id: str, stations_draw_a: Callable[[], float]) -> None:
        self._context = context
        self._site_id = site_id
        self._meter = grid_meter(get_profile(PROFILE), UNIT_ID, 0.0, lambda: self.building_load_a() + stations_draw_a())
        self._server: MeterServer | None = None

    def building_load_a(self) -> float:
        """What the building draws per phase now: the step of `BUILDING_LOAD_A` the clock is in."""
        step = int(self._context.clock.now().timestamp() // BUILDING_STEP_S)
        return BUILDING_LOAD_A[step % len(BUILDING_LOAD_A)]

    def described(self) -> str:
        """The meter for the demo's banner: where it is served, what it measures, where to watch it."""
        port = self._server.port if self._server is not None else "-"
        loads = "-".join(f"{load:g}" for load in (min(BUILDING_LOAD_A), max(BUILDING_LOAD_A)))
        page = f"{self._context.settings.public_url}/console/sites/{self._site_id}/power"
        return f"Modbus TCP 127.0.0.1:{port} on the grid connection, the building drawing {loads} A; see {page}"

    async def setup(self) -> None:
        context = self._context
        now = context.clock.now()
        self._server = await MeterServer.tcp([self._meter], context.clock)
        async with context.store.transaction() as session:
            listed = await every_page(
                lambda page: circuits.list_circuits(session, OPERATOR, page, site_id=self._site_id)
            )
            grid = next((circuit for circuit in listed if circuit.parent_id is None), None)
            if grid is None:
                return  # the site has no grid connection to measure
            meter = await grid_meters.create_grid_meter(
                session,
                OPERATOR,
                site_id=self._site_id,
                profile=PROFILE,
                unit_id=UNIT_ID,
                now=now,
                tcp=f"127.0.0.1:{self._server.port}",
            )
            await circuits.update_circuit(session, OPERATOR, grid.id, now=now, meter_id=meter.id)
            earlier = await every_page(
                lambda page: grid_meters.list_grid_meters(session, OPERATOR, page, site_id=self._site_id)
            )
            for old in earlier:
                if old.id != meter.id and old.circuit_id is None:
                    await grid_meters.delete_grid_meter(session, OPERATOR, old.id, now=now)

    async def run(self, stopping: asyncio.Event) -> None:
        try:
            await stopping.wait()
        finally:
            if self._server is not None:
                await self._server.stop()


async def install(context: AppContext, site_id: str, stations_draw_a: Callable[[], float]) -> DemoGridMeter:
    demo = DemoGridMeter(context, site_id, stations_draw_a)
    await demo.setup()
    context.workers.append(demo)
    return demo
