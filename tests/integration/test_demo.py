"""`make demo` shows real events flow: simulated stations of both generations charge through the edge and the
partner receiver prints every event type, each verified against the server's published keys; the site's grid meter
is read, so its Power page shows a measured load."""

from __future__ import annotations

import json
import select
import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.test_serve import chargenet, wait_for_health
from tests.support.ports import free_port


@pytest.mark.slow
def test_demo_delivers_every_event_type_verified_to_the_partner(tmp_path: Path) -> None:
    port = free_port()
    process = chargenet("demo", "--port", str(port), "--data-dir", str(tmp_path / "demo"))
    seen: dict[str, dict[str, object]] = {}
    seen_201: dict[str, dict[str, object]] = {}  # the OCPP 2.0.1 station's, which takes the first turn
    sign_in: list[str] = []
    site_id = ""
    try:
        wait_for_health(port, process)
        assert process.stdout is not None
        deadline = time.monotonic() + 90
        while len(seen_201) < 4 and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stdout], [], [], 1.0)
            if not ready:
                continue
            line = process.stdout.readline()
            if line.startswith("  site "):
                site_id = line.split()[1]
            if line.startswith("  console sign-in "):
                sign_in = line.removeprefix("  console sign-in ").split(" (")[0].split(" / ")
            if line.startswith("partner received "):
                event = json.loads(line.removeprefix("partner received "))
                seen.setdefault(event["eventType"], event)
                if event["payload"].get("stationId") == "DEMO-3":
                    seen_201.setdefault(event["eventType"], event)
        # The printed console credentials work: the operator signs in and reaches the overview.
        assert len(sign_in) == 2, "make demo prints the console's sign-in"
        console = f"http://127.0.0.1:{port}/console"
        with httpx.Client(base_url=console) as client:
            response = client.post(
                "/login",
                data={"email": sign_in[0], "password": sign_in[1]},
                headers={"Origin": f"http://127.0.0.1:{port}"},
            )
            assert response.status_code == 303
            assert "Overview" in client.get("/").text
            # The grid meter is read: its circuit shows a measured load rather than falling back to its limit.
            power = client.get(f"/sites/{site_id}/power").text
            assert "<td>reading<br>" in power
    finally:
        process.kill()
        process.communicate()
    assert set(seen) == set(seen_201) == {"Authorize", "ChargePointStatus", "StartTransaction", "StopTransaction"}
    for event in [*seen.values(), *seen_201.values()]:
        assert event["verified"] == {"keyId": "sign", "alg": "ed25519", "legacy": False}
    assert seen_201["StartTransaction"]["payload"]["stationTransactionId"]  # told in TransactionEvents


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_demo_stops_on_ctrl_c_or_sigterm_without_a_traceback(tmp_path: Path, signum: signal.Signals) -> None:
    port = free_port()
    process = chargenet("demo", "--port", str(port), "--data-dir", str(tmp_path / "demo"))
    try:
        wait_for_health(port, process)
        process.send_signal(signum)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0
    assert "Traceback" not in err
    assert "chargenet stopped" in err
