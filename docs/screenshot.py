"""Make the console screenshots README.md shows, from a live `chargenet demo` (simulated stations, meters and a
partner), with the same Debian Chromium the browser tests drive.

    .venv/bin/python docs/screenshot.py     # writes docs/console-overview.png, console-live.png, console-site.png

It starts the demo in a scratch folder on a free port, signs in with the operator credentials the demo prints,
lets the simulated stations connect and charge for a while, and photographs pages at a laptop's width.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SHOTS = {
    "console-overview.png": "/console/",
    "console-live.png": "/console/connectors",
    "console-site.png": "/console/sites",
}
FOLLOW_FIRST_ROW = {"console-site.png"}  # photographed on the page the list's first row opens
WHOLE_PAGE = {"console-overview.png", "console-live.png"}  # the energy chart, and every demo connector
# The demo's stations boot, report, and one is charging (they take turns of 30 s), with a session or two done.
SETTLE_SECONDS = 45
CHROMIUM_ARGS = ["--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-dev-shm-usage"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _read_credentials(demo: asyncio.subprocess.Process) -> tuple[str, str]:
    assert demo.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = (await asyncio.wait_for(demo.stdout.readline(), timeout=120)).decode()
        if not line:
            break
        found = re.search(r"console sign-in (\S+) / (\S+)", line)
        if found:
            return found.group(1), found.group(2)
    raise SystemExit("screenshot: the demo did not print its console sign-in")


async def main() -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("screenshot: Debian's chromium is needed (`make test` installs it)")
    port = _free_port()
    with tempfile.TemporaryDirectory() as scratch:
        demo = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "chargenet",
            "demo",
            "--data-dir",
            scratch,
            "--port",
            str(port),
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'sdk' / 'python'}", "PYTHONUNBUFFERED": "1"},
        )
        try:
            email, password = await _read_credentials(demo)
            drain = asyncio.create_task(_drain(demo))
            await asyncio.sleep(SETTLE_SECONDS)
            base = f"http://127.0.0.1:{port}"
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                page = await browser.new_page(viewport={"width": 1280, "height": 800})
                await page.goto(f"{base}/console/login")
                await page.get_by_label("E-mail address").fill(email)
                await page.get_by_label("Password").fill(password)
                await page.get_by_role("button", name="Sign in").click()
                await page.wait_for_url(f"{base}/console/")
                for name, path in SHOTS.items():
                    await page.goto(base + path)
                    if name in FOLLOW_FIRST_ROW:
                        await page.locator("main table tbody a").first.click()
                        await page.wait_for_load_state()
                    await page.screenshot(path=str(DOCS / name), full_page=name in WHOLE_PAGE)
                    print(f"screenshot: wrote docs/{name}")
                await browser.close()
            drain.cancel()
        finally:
            demo.terminate()
            await demo.wait()


async def _drain(demo: asyncio.subprocess.Process) -> None:
    assert demo.stdout is not None
    while await demo.stdout.readline():
        pass


if __name__ == "__main__":
    asyncio.run(main())
