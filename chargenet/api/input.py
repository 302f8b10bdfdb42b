"""The API's input check, in front of every route (decisions.md "Input the service refuses", `domain.text`).

An ASGI middleware rather than per-route code: whatever the routes become, nothing they or the services read has
skipped it. It reads the body (at most `MAX_BODY` bytes), refuses what is not UTF-8 text (Rule 1), skips a leading
byte-order mark, refuses strings that are not storable text and integers beyond 32 bits in JSON (Rules 2 and 3),
refuses U+0000 in the path and query, and hands the routes the body it checked. Refusals are problems built by
`problems`, the API's one mapper.
"""

from __future__ import annotations

from urllib.parse import unquote

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chargenet.api import problems
from chargenet.domain import text
from chargenet.errors import InputTooLarge, InvalidInput

MAX_BODY = 1 << 20


class InputCheck:
    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            body = await self._checked(scope, receive)
        except InvalidInput as exc:
            response = problems.for_error(exc)
            await response(scope, receive, send)
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return await receive()  # only a disconnect can follow
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _checked(self, scope: Scope, receive: Receive) -> bytes:
        text.check_text(scope["path"], "path")
        query = scope.get("query_string", b"").decode("latin-1")
        text.check_text(unquote(query), "query")
        headers = {name: value for name, value in scope["headers"] if name in (b"content-type", b"content-length")}
        declared = headers.get(b"content-length", b"0")
        if declared.isdigit() and int(declared) > self.max_body:
            raise InputTooLarge(self.max_body)
        body = await self._read(receive)
        content_type = headers.get(b"content-type", b"").decode("latin-1") or None
        if not body and text.declared_charset(content_type) is None:
            return body
        body = text.utf8_body(body, content_type)
        text.check_json_values(body)
        return body

    async def _read(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b""  # the client went away; the route will find out
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise InputTooLarge(self.max_body)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)
