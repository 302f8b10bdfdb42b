"""`chargenet demo` prints a command that, pasted into a shell, gets a token and lists the charge points."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_serve import chargenet, wait_for_health
from tests.support.ports import free_port


@pytest.mark.slow
def test_demo_prints_a_ready_curl_command(tmp_path: Path) -> None:
    assert shutil.which("curl") and shutil.which("python3"), "the demo command needs curl and python3"
    port = free_port()
    process = chargenet("demo", "--port", str(port), "--data-dir", str(tmp_path / "demo"))
    try:
        wait_for_health(port, process)
        assert process.stdout is not None
        command = ""
        while not command:
            line = process.stdout.readline()
            assert line, "demo ended its banner without a command"
            if line.strip().startswith("TOKEN="):
                command = line.strip()
        result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30, check=True)
        listing = json.loads(result.stdout)
        assert set(listing) == {"items", "next"}
        assert listing["items"], "the demo site has simulated charge points"
        assert all("connectors" in item for item in listing["items"])
    finally:
        process.kill()
        process.communicate()
