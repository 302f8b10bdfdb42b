"""Stations that hold their connections to an edge and heartbeat, as the background of bench_auth's list figure.

`python -m bench._heartbeat_fleet URL PERIOD STATION_ID...` connects every station (`URL/STATION_ID`, OCPP 1.6J,
no password), prints `connected N` once all are, then has each send a Heartbeat every PERIOD seconds, spread
evenly over the period (10,000 stations every 60 s make about 170 a second). On SIGTERM it prints one JSON line:
heartbeats sent and answered, failures by kind, and the seconds it heartbeat for.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections import Counter

from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

CONNECT_TIMEOUT = 300.0


async def _open(url: str, station_id: str) -> ClientConnection:
    return await connect(
        f"{url}/{station_id}", subprotocols=[Subprotocol("ocpp1.6")], open_timeout=CONNECT_TIMEOUT, ping_interval=None
    )


async def main(url: str, period: float, station_ids: list[str]) -> None:
    semaphore = asyncio.Semaphore(200)

    async def limited(station_id: str) -> ClientConnection:
        async with semaphore:
            return await _open(url, station_id)

    sockets = await asyncio.gather(*(limited(s) for s in station_ids))
    print(f"connected {len(sockets)}", flush=True)

    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    counts: Counter[str] = Counter()
    started = time.perf_counter()

    async def station(n: int, socket: ClientConnection) -> None:
        due = started + period * n / len(sockets)
        call = 0
        while True:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            call += 1
            counts["sent"] += 1
            try:
                await socket.send(json.dumps([2, f"hb-{call}", "Heartbeat", {}]))
                answer = json.loads(await socket.recv())
            except Exception as exc:
                counts[type(exc).__name__] += 1
                return
            if answer[0] == 3 and answer[1] == f"hb-{call}":
                counts["answered"] += 1
            else:
                counts[f"answered {answer[0]}"] += 1
            due += period

    tasks = [asyncio.create_task(station(n, s)) for n, s in enumerate(sockets)]
    await stopping.wait()
    seconds = time.perf_counter() - started
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    sent, answered = counts.pop("sent", 0), counts.pop("answered", 0)
    # A heartbeat cancelled while waiting for its answer is no failure of the edge.
    unanswered = max(0, sent - answered - sum(counts.values()))
    print(
        json.dumps({"sent": sent - unanswered, "answered": answered, "failures": dict(counts), "seconds": seconds}),
        flush=True,
    )
    await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2]), sys.argv[3:]))
