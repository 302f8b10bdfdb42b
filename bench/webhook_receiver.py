"""The benchmark's webhook receiver, a process of its own as a partner's would be: a minimal HTTP/1.1 server
answering 204. It prints its port, then one line per request: the monotonic time it arrived (perf_counter is
CLOCK_MONOTONIC on Linux, the same clock in every process), so the benchmark measures delivery latency, and the
event's `payload.info` when it has one, so a benchmark that marked the frame it sent can tell which one arrived."""

from __future__ import annotations

import asyncio
import json
import sys
import time


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length)
            arrived = time.perf_counter()
            sys.stdout.write(f"{arrived} {_mark(body)}\n")
            sys.stdout.flush()
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


def _mark(body: bytes) -> str:
    try:
        event = json.loads(body)
        payload = event.get("payload") if isinstance(event, dict) else None
        info = payload.get("info") if isinstance(payload, dict) else None
    except ValueError:
        return ""
    return info if isinstance(info, str) else ""


async def main() -> None:
    server = await asyncio.start_server(_handle, "127.0.0.1", 0)
    sys.stdout.write(f"{server.sockets[0].getsockname()[1]}\n")
    sys.stdout.flush()
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
