"""A session detected from a meter on an RS-485 bus: pymodbus's serial server on a pseudo-terminal pair (serial_bus)."""

from __future__ import annotations

from pathlib import Path

from chargenet.clock import ManualClock
from chargenet.keys import KeyStore
from chargenet.meters.bus import SerialLine
from chargenet.meters.profiles import get_profile
from chargenet.services import meters as meter_service
from chargenet.services.callers import OPERATOR
from chargenet.simulators.meter import MeterServer, SimulatedMeter
from chargenet.store.db import Store
from tests.factories import make_tenant
from tests.integration.meters.conftest import PtyPair
from tests.integration.meters.helpers import close, payloads, poll, start_polling


async def test_two_meters_on_one_rtu_bus_each_get_their_session(
    store: Store, clock: ManualClock, tmp_path: Path, pty_pair: PtyPair
) -> None:
    tenant = await make_tenant(store, KeyStore(tmp_path / "keys"), clock.now(), connectors=2)
    em24 = SimulatedMeter(get_profile("em24"), unit_id=5, energy_wh=50_000)
    sdm72 = SimulatedMeter(get_profile("sdm72v1"), unit_id=6, energy_wh=70_000)
    for simulated in (em24, sdm72):
        simulated.advance(clock.now())
    server = await MeterServer.serial([em24, sdm72], clock, pty_pair.server, SerialLine(9600, stopbits=1))
    try:
        async with store.transaction() as session:
            for connector, simulated in ((1, em24), (2, sdm72)):
                await meter_service.create_meter(
                    session,
                    OPERATOR,
                    site_id=tenant.site_id,
                    station_id=tenant.station_id,
                    connector_id=connector,
                    profile=simulated.profile.name,
                    unit_id=simulated.unit_id,
                    rtu=pty_pair.client,
                    baud=9600,
                    now=clock.now(),
                )
        polling = await start_polling(store, clock)
        assert len(polling.pollers) == 1
        em24.set_load(clock.now(), 16.0)
        await poll(polling, clock, 600)
        sdm72.set_load(clock.now(), 10.0)
        em24.set_load(clock.now(), 0.0)
        await poll(polling, clock, 600)
        sdm72.set_load(clock.now(), 0.0)
        await poll(polling, clock, 300)
        close(polling)
    finally:
        await server.stop()
    events = await payloads(store)
    # The second meter starts while the first one's grace period still runs.
    assert [(kind, p["connectorId"]) for kind, p in events] == [
        ("StartTransaction", 1),
        ("StartTransaction", 2),
        ("StopTransaction", 1),
        ("StopTransaction", 2),
    ]
    em24_stop = events[2][1]
    # EM24 counts in 0.1 kWh steps: 600 s at 11 kW is 1.84 kWh, read as 1.7 to 1.9.
    charged = em24_stop["meterStop"] - em24_stop["meterStart"]
    assert charged >= 1.7 and charged <= 1.9
    assert events[0][1]["transactionId"] == em24_stop["transactionId"]
