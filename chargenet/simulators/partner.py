"""The reference webhook receiver: what a partner endpoint does, built on the partner SDK.

Every request is verified (RFC 9421 signature, Content-Digest, `created` age, key id) with the service's
JWKS; a verified event is answered 204 and handed to the sink, a refused one gets 401 with the reason.
Retries carry the same event, so an `eventId` seen before is answered 204 again and not handed on twice.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from chargenet_partner.webhooks import AsyncWebhookVerifier, Reason, VerifiedWebhook, WebhookVerificationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Sink = Callable[[VerifiedWebhook], None]
MAX_BODY = 1024 * 1024
REMEMBERED_EVENTS = 10_000


def create_receiver(verifier: AsyncWebhookVerifier, sink: Sink, path: str = "/") -> Starlette:
    seen: OrderedDict[str, None] = OrderedDict()

    async def receive(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY:
            return _refusal(413, "body too large")
        try:
            verified = await verifier.verify(
                method=request.method,
                path=request.scope.get("raw_path", b"").decode("ascii", "replace").split("?", 1)[0] or request.url.path,
                headers=dict(request.headers),
                body=body,
            )
        except WebhookVerificationError as error:
            # Keys that cannot be fetched are this side's problem: 503 says so (the sender retries either way).
            status = 503 if error.reason is Reason.JWKS_UNAVAILABLE else 401
            return _refusal(status, error.detail, reason=error.reason.value)
        event_id = str(verified.event.get("eventId", ""))
        if event_id in seen:
            return Response(status_code=204)
        seen[event_id] = None
        if len(seen) > REMEMBERED_EVENTS:
            seen.popitem(last=False)
        sink(verified)
        return Response(status_code=204)

    return Starlette(routes=[Route(path, receive, methods=["POST"])])


def _refusal(status: int, detail: str, **extra: Any) -> JSONResponse:
    body = {"type": "about:blank", "title": "Webhook refused", "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, media_type="application/problem+json")


def json_line(verified: VerifiedWebhook) -> str:
    """One line per event: the envelope with how it was verified."""
    record = {
        "verified": {"keyId": verified.key_id, "alg": verified.algorithm, "legacy": verified.legacy},
        **verified.event,
    }
    return json.dumps(record, ensure_ascii=False)
