"""Browsers for bench_live, in a process of their own: `python -m bench.sse_browsers HOST PORT PATH COOKIE COUNT`.

Opens COUNT server-sent event streams at PATH over plain sockets (an HTTP client library parsing 50 streams cost
more CPU than the server spent sending them, and on a shared machine that measured the client), prints `ready`
once every stream has its response head, and when its standard input closes prints one JSON line: for each
stream, the `time.monotonic()` at which each marked row (`<td>mN</td>`) first arrived. CLOCK_MONOTONIC is one
clock for every process of the machine, so the writer's commit times compare with these.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time

_MARK = re.compile(rb"<td>m(\d+)</td>")


async def _stream(
    host: str, port: int, path: str, cookie: str, received: dict[int, float], ready: asyncio.Event
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nCookie: {cookie}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"the stream answered {head.splitlines()[0]!r}")
    ready.set()
    tail = b""
    while chunk := await reader.read(65536):
        now = time.monotonic()
        text = tail + chunk
        for found in _MARK.finditer(text):
            received.setdefault(int(found.group(1)), now)
        if b"event: resync" in text or b"event: end" in text:
            raise RuntimeError("a browser's stream was told to resync or end")
        tail = text[-64:]


async def _main(host: str, port: int, path: str, cookie: str, count: int) -> None:
    streams: list[dict[int, float]] = [{} for _ in range(count)]
    readies = [asyncio.Event() for _ in range(count)]
    tasks = [asyncio.create_task(_stream(host, port, path, cookie, streams[n], readies[n])) for n in range(count)]
    await asyncio.gather(*(ready.wait() for ready in readies))
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for task in tasks:
        task.cancel()
    failed = [
        r for r in await asyncio.gather(*tasks, return_exceptions=True) if not isinstance(r, asyncio.CancelledError)
    ]
    if failed:
        raise RuntimeError(f"{len(failed)} streams failed: {failed[0]!r}")
    print(json.dumps(streams), flush=True)


if __name__ == "__main__":
    host, port, path, cookie, count = sys.argv[1:6]
    asyncio.run(_main(host, int(port), path, cookie, int(count)))
