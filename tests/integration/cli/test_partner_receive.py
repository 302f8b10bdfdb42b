"""`chargenet partner receive`: the reference receiver verifies every request and stores what it verified."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric import ed25519

from chargenet.webhooks.signing import webhook_signature_headers
from tests.support.jwks import jwk, serve_jwks
from tests.support.keys import signing_keys
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[3]


def _envelope(event_id: str) -> bytes:
    return json.dumps(
        {
            "eventId": event_id,
            "eventType": "Authorize",
            "siteId": "site_1",
            "timestamp": "2026-07-01T14:00:00.000+02:00",
            "payload": {"stationId": "ST-1", "idTag": "TAG", "status": "Accepted"},
        }
    ).encode()


def _post(url: str, body: bytes, key: ed25519.Ed25519PrivateKey) -> httpx.Response:
    request_id = str(uuid.uuid4())
    headers = webhook_signature_headers(url=url, request_id=request_id, body=body, created=int(time.time()), key=key)
    headers |= {"Content-Type": "application/json", "x-request-id": request_id}
    return httpx.post(url, content=body, headers=headers, timeout=5)


def test_receiver_stores_verified_events_and_refuses_forged_ones(tmp_path: Path) -> None:
    out, port = tmp_path / "events.jsonl", free_port()
    with serve_jwks({"keys": [jwk("sign", signing_keys().ed25519.public_key())]}) as jwks:
        command = ["partner", "receive", "--jwks-url", jwks.url, "--port", str(port), "--path", "/hook"]
        receiver = subprocess.Popen(
            [sys.executable, "-m", "chargenet", *command, "--out", str(out)],
            env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'sdk' / 'python'}"},
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            url = f"http://127.0.0.1:{port}/hook"
            deadline = time.monotonic() + 30
            while True:
                assert receiver.poll() is None, receiver.communicate()[1]
                try:
                    httpx.get(url, timeout=1)
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the receiver did not start within 30 s"
                    time.sleep(0.1)
            genuine = _post(url, _envelope("e-genuine"), signing_keys().ed25519)
            forged = _post(url, _envelope("e-forged"), ed25519.Ed25519PrivateKey.generate())
        finally:
            receiver.terminate()
            receiver.communicate()
    assert (genuine.status_code, forged.status_code) == (204, 401)
    assert forged.headers["content-type"] == "application/problem+json"
    stored = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(e["eventId"], e["verified"]["keyId"]) for e in stored] == [("e-genuine", "sign")]
