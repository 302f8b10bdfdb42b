"""Stations that hold their connections to an edge and heartbeat, as the background of bench_auth's list figure.

`python -m bench._heartbeat_fleet URL PERIOD STATION_ID...` connects every station (`URL/STATION_ID`, OCPP 1.6J,
no password), prints `connected N` once all are, then has each send a Heartbeat every PERIOD seconds, spread
evenly over the period (10,000 stations every 60 s make about 170 a second). On SIGTERM it sends no more, waits
for the answers still due (each at most ANSWER_TIMEOUT), and prints one JSON line: heartbeats sent and answered,
failures by kind (an answer that did not come in time among them), the seconds it heartbeat for, and the p99 of
the answers' round trips.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from collections import Counter

from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

CONNECT_TIMEOUT = 300.0
ANSWER_TIMEOUT = 10.0  # seconds a heartbeat waits for its answer before it counts as unanswered


async def _open(url: str, station_id: str) -> ClientConnection:
    return await connect(
        f"{url}/{station_id}", subprotocols=[Subprotocol("ocpp1.6")], open_timeout=CONNECT_TIMEOUT, ping_interval=None
    )


async def main(url: str, period: float, station_ids: list[str]) -> None:
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    semaphore = asyncio.Semaphore(200)

    async def limited(station_id: str) -> ClientConnection:
        async with semaphore:
            return await _open(url, station_id)

    sockets = await asyncio.gather(*(limited(s) for s in station_ids))
    print(f"connected {len(sockets)}", flush=True)

    counts: Counter[str] = Counter()
    latencies: list[float] = []
    started = time.perf_counter()

    async def station(n: int, socket: ClientConnection) -> None:
        due = started + period * n / len(sockets)
        call = 0
        while True:
            # Stopping ends the wait for the next heartbeat, never the wait for an answer.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), max(0.0, due - time.perf_counter()))
            if stopping.is_set():
                return
            call += 1
            counts["sent"] += 1
            sent_at = time.perf_counter()
            try:
                await socket.send(json.dumps([2, f"hb-{call}", "Heartbeat", {}]))
                answer = json.loads(await asyncio.wait_for(socket.recv(), ANSWER_TIMEOUT))
            except Exception as exc:
                counts[f"no answer: {type(exc).__name__}"] += 1
                return
            if answer[0] == 3 and answer[1] == f"hb-{call}":
                counts["answered"] += 1
                latencies.append((time.perf_counter() - sent_at) * 1000)
            else:
                counts[f"answered {answer[0]}"] += 1
            due += period

    await asyncio.gather(*(station(n, s) for n, s in enumerate(sockets)))
    seconds = time.perf_counter() - started
    sent, answered = counts.pop("sent", 0), counts.pop("answered", 0)
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99)] if latencies else 0.0
    print(
        json.dumps({"sent": sent, "answered": answered, "failures": dict(counts), "seconds": seconds, "p99_ms": p99}),
        flush=True,
    )
    await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2]), sys.argv[3:]))
