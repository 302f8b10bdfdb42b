from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from chargenet_partner.webhooks import AsyncWebhookVerifier, VerifiedWebhook
from cryptography.hazmat.primitives.asymmetric import ed25519

from chargenet.clock import SystemClock
from chargenet.simulators.partner import create_receiver, json_line
from chargenet.webhooks.lane import Delivered, Failed
from chargenet.webhooks.outbound_auth import NoAuth
from chargenet.webhooks.sender import Endpoint, WebhookSender, WebhookSigningKeys
from tests.support.in_loop import start_serving
from tests.support.jwks import jwk, serve_jwks
from tests.support.keys import signing_keys
from tests.support.ports import free_port

BODY = json.dumps({"eventId": "e-1", "eventType": "Authorize", "siteId": "s", "payload": {}}).encode()


@asynccontextmanager
async def running_receiver(jwks_url: str, received: list[VerifiedWebhook]) -> AsyncIterator[str]:
    verifier = AsyncWebhookVerifier(jwks_url)
    port = free_port()
    app = create_receiver(verifier, received.append, "/hook")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    task = await start_serving(server)
    try:
        yield f"http://127.0.0.1:{port}/hook"
    finally:
        server.should_exit = True
        await task
        await verifier.aclose()


def _document() -> dict[str, object]:
    keys = signing_keys()
    return {"keys": [jwk("sign", keys.ed25519.public_key()), jwk("sign", keys.rsa.public_key())]}


async def test_reference_receiver_accepts_a_signed_event_once() -> None:
    received: list[VerifiedWebhook] = []
    with serve_jwks(_document()) as jwks:
        async with running_receiver(jwks.url, received) as url:
            sender = WebhookSender(clock=SystemClock(), keys=signing_keys, allow_private=True)
            first = await sender.send(Endpoint("wh", url, NoAuth()), BODY)
            again = await sender.send(Endpoint("wh", url, NoAuth()), BODY)
            await sender.aclose()
    assert (first.outcome, again.outcome) == (Delivered(204), Delivered(204))
    assert [v.event["eventId"] for v in received] == ["e-1"]
    assert json.loads(json_line(received[0]))["verified"] == {"keyId": "sign", "alg": "ed25519", "legacy": False}


async def test_reference_receiver_refuses_a_request_signed_by_another_key() -> None:
    received: list[VerifiedWebhook] = []
    impostor = WebhookSigningKeys(ed25519=ed25519.Ed25519PrivateKey.generate(), rsa=signing_keys().rsa)
    with serve_jwks(_document()) as jwks:
        async with running_receiver(jwks.url, received) as url:
            sender = WebhookSender(clock=SystemClock(), keys=lambda: impostor, allow_private=True)
            result = await sender.send(Endpoint("wh", url, NoAuth()), BODY)
            await sender.aclose()
    assert (result.outcome, received) == (Failed("HTTP 401"), [])
