"""A real `chargenet serve` process for tests that kill or share one: started, and returned once it answers."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


async def start_serve(data_dir: Path, *flags: str) -> asyncio.subprocess.Process:
    """`chargenet serve` on a free port with the data folder and `flags`, webhooks to private addresses allowed,
    once its /health answers (60 s at most)."""
    return await serve_on(data_dir, free_port(), "--webhook-allow-private", *flags)


async def serve_on(data_dir: Path, port: int, *flags: str) -> asyncio.subprocess.Process:
    """`chargenet serve` on `port` with the data folder and `flags`, once its /health answers (60 s at most)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "chargenet",
        "serve",
        *("--port", str(port), "--data-dir", str(data_dir), "--log-level", "error"),
        *flags,
        env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'sdk' / 'python'}"},
        stdout=subprocess.DEVNULL,
    )
    async with httpx.AsyncClient() as client:
        deadline = time.monotonic() + 60
        while True:
            assert process.returncode is None, "chargenet serve exited early"
            try:
                if (await client.get(f"http://127.0.0.1:{port}/health", timeout=1)).status_code < 500:
                    return process
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "chargenet serve did not answer /health within 60 s"
            await asyncio.sleep(0.1)
