"""The browser the console tests drive is the real one: Debian's Chromium, reading pages a real server serves."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from playwright.async_api import Page

from tests.browser.console import axe_violations
from tests.integration.test_serve import served, wait_for_health  # noqa: F401 - served is a fixture

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def test_chromium_reads_the_health_of_a_running_server(
    page: Page,
    served: tuple[int, subprocess.Popen[str]],  # noqa: F811
) -> None:
    port, process = served
    await asyncio.to_thread(wait_for_health, port, process)
    response = await page.goto(f"http://127.0.0.1:{port}/health")
    assert response is not None and response.status == 200
    body = json.loads(await page.locator("body").inner_text())
    assert body["status"] in {"ok", "warning", "critical"}
    assert "HeadlessChrome" in await page.evaluate("navigator.userAgent")


async def test_the_accessibility_scan_finds_a_field_without_a_label(page: Page) -> None:
    await page.set_content('<!doctype html><html lang="en"><title>t</title><main><input type="text"></main></html>')
    found = await axe_violations(page)
    assert [v["id"] for v in found] == ["label"]
