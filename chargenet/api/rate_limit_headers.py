"""`RateLimit-Policy` and `RateLimit` on every API answer to an authenticated request (decisions.md §5).

An ASGI middleware rather than headers set by the route: some routes answer with a response of their own (the
charge point list renders its kept JSON) and errors are answered by `problems`; all pass through here. The bearer
check (`security.require`) leaves the limiter's decision in the request's scope under `DECISION`.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chargenet.domain.rate_limits import Decision, limit_header, policy_header

DECISION = "chargenet.rate_limit"


class RateLimitHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                decision = scope.get(DECISION)
                if isinstance(decision, Decision):
                    message["headers"] = [
                        *message.get("headers", ()),
                        (b"ratelimit-policy", policy_header(decision.quota)),
                        (b"ratelimit", limit_header(decision)),
                    ]
            await send(message)

        await self.app(scope, receive, send_with_headers)
