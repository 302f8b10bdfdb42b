"""A small simulated fleet for `make demo`: each station boots, reports its connectors, and charges in turn
(plug-first and id-first), so Authorize, ChargePointStatus, StartTransaction and StopTransaction events flow.

    python -m chargenet.simulators.scenario ws://127.0.0.1:8080/ocpp ST-1 ST-2 --password KEY --tag TAG1 --cycles 3
    python -m chargenet.simulators.scenario --upstream-port 9000   # also run an upstream central system
    python -m chargenet.simulators.scenario ws://127.0.0.1:8080/ocpp ST-1 ST-3 --ocpp201 ST-3   # ST-3 speaks 2.0.1
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
from collections.abc import Collection

from chargenet.simulators.cpo import SimulatedCentralSystem
from chargenet.simulators.ocpp201.station import SimulatedStation201
from chargenet.simulators.session import DemoStation
from chargenet.simulators.station import SimulatedStation

log = logging.getLogger(__name__)


def simulated_station(url: str, station_id: str, password: str | None, *, ocpp201: bool) -> DemoStation:
    """A simulated station speaking OCPP 2.0.1 (two EVSEs of one connector) or 1.6."""
    if ocpp201:
        return SimulatedStation201(url, station_id, password)
    return SimulatedStation(url, station_id, password)


async def drive_station(station: DemoStation, id_tag: str, cycles: int, pause: float) -> list[object]:
    """Connect, boot, report, then charge `cycles` times; returns its transactions' ids (the edge's for a 1.6
    station, the station's own for a 2.0.1 one)."""
    await station.connect()
    await station.boot()
    await station.report_available(1)
    transactions = []
    for cycle in range(cycles):
        session = station.plug_first_session if cycle % 2 == 0 else station.id_first_session
        transactions.append(await session(1, id_tag, wh=random.randint(2_000, 30_000)))
        await station.heartbeat()
        await asyncio.sleep(pause)
    await station.close()
    return transactions


async def run_fleet(
    url: str,
    station_ids: list[str],
    password: str | None,
    id_tag: str,
    cycles: int,
    pause: float,
    *,
    ocpp201: Collection[str] = (),
) -> dict[str, list[object]]:
    """Drive every station at once; those named in `ocpp201` speak OCPP 2.0.1, the others 1.6."""
    stations = [
        simulated_station(url, station_id, password, ocpp201=station_id in ocpp201) for station_id in station_ids
    ]
    results = await asyncio.gather(*(drive_station(s, id_tag, cycles, pause) for s in stations))
    return dict(zip(station_ids, results, strict=True))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", nargs="?", default="ws://127.0.0.1:8080/ocpp")
    parser.add_argument("stations", nargs="*", default=["ST-1"])
    parser.add_argument("--password")
    parser.add_argument("--tag", default="DEMO-TAG")
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--pause", type=float, default=2.0)
    parser.add_argument("--upstream-port", type=int, help="also run an upstream central system on this port")
    parser.add_argument("--ocpp201", action="append", default=[], metavar="STATION", help="this station speaks 2.0.1")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)

    async def run() -> None:
        central = None
        if args.upstream_port:
            central = SimulatedCentralSystem(port=args.upstream_port)
            await central.start()
            log.info("upstream central system at %s", central.url)
        try:
            result = await run_fleet(
                args.url, args.stations, args.password, args.tag, args.cycles, args.pause, ocpp201=args.ocpp201
            )
            for station_id, transactions in result.items():
                log.info("%s charged %d times: transactions %s", station_id, len(transactions), transactions)
        finally:
            if central is not None:
                await central.stop()

    asyncio.run(run())


if __name__ == "__main__":
    main()
