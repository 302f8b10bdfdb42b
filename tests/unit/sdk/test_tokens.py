"""The partner token clients against a real HTTP server on loopback (stdlib, so no mocks in between)."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote_plus

import pytest
from chargenet_partner import AsyncTokenClient, TokenClient, TokenRequestError, TokenResponseError


@dataclass
class FakeAuthServer:
    """A tiny token endpoint: answers `reply` (status, body) after `delay` seconds and records requests."""

    reply: tuple[int, Any] = (200, None)
    delay: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        with self.lock:
            self.requests.append({"headers": headers, "form": parse_qs(body.decode())})
            n = len(self.requests)
        status, payload = self.reply
        if payload is None:
            payload = {"access_token": f"tok-{n}", "token_type": "Bearer", "expires_in": 900}
        return status, payload if isinstance(payload, bytes) else json.dumps(payload).encode()


@pytest.fixture
def server() -> Iterator[tuple[FakeAuthServer, str]]:
    state = FakeAuthServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if state.delay:
                threading.Event().wait(state.delay)
            status, payload = state.answer({k.lower(): v for k, v in self.headers.items()}, body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{httpd.server_address[1]}/auth/oauth2/token"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_basic_credentials_are_form_urlencoded(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    with TokenClient(url, "app 1", "s+cr:t/") as client:
        client.token()
    user, _, password = base64.b64decode(state.requests[0]["headers"]["authorization"][6:]).decode().partition(":")
    assert (unquote_plus(user), unquote_plus(password), user) == ("app 1", "s+cr:t/", "app+1")
    assert state.requests[0]["form"] == {"grant_type": ["client_credentials"]}


def test_post_method_sends_credentials_in_the_body(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    with TokenClient(url, "app_1", "s3", auth_method="post") as client:
        client.token()
    assert "authorization" not in state.requests[0]["headers"]
    assert state.requests[0]["form"] == {
        "grant_type": ["client_credentials"],
        "client_id": ["app_1"],
        "client_secret": ["s3"],
    }


def test_scope_is_sent_only_when_given(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    with TokenClient(url, "app_1", "s3", scope="a b") as client:
        client.token()
    assert state.requests[0]["form"]["scope"] == ["a b"]


def test_token_is_cached_until_shortly_before_expiry(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    clock = Clock()
    with TokenClient(url, "app_1", "s", clock=clock, renew_before=60) as client:
        assert client.token() == "tok-1"
        clock.t += 839
        assert client.token() == "tok-1"
        clock.t += 1
        assert client.token() == "tok-2"
    assert len(state.requests) == 2


def test_short_lived_token_renews_at_half_life(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    state.reply = (200, {"access_token": "short", "token_type": "bearer", "expires_in": 60})
    clock = Clock()
    with TokenClient(url, "app_1", "s", clock=clock, renew_before=60) as client:
        client.token()
        clock.t += 29
        client.token()
        assert len(state.requests) == 1
        clock.t += 1
        client.token()
    assert len(state.requests) == 2


def test_invalidate_forces_a_new_token(server: tuple[FakeAuthServer, str]) -> None:
    _state, url = server
    with TokenClient(url, "app_1", "s") as client:
        client.token()
        client.invalidate()
        assert client.token() == "tok-2"


def test_concurrent_threads_share_one_request(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    state.delay = 0.2
    results: list[str] = []
    with TokenClient(url, "app_1", "s") as client:
        threads = [threading.Thread(target=lambda: results.append(client.token())) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == ["tok-1"] * 20 and len(state.requests) == 1


def test_oauth_error_is_raised_with_its_code(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    state.reply = (401, {"error": "invalid_client", "error_description": "client authentication failed"})
    with TokenClient(url, "app_1", "wrong") as client, pytest.raises(TokenRequestError) as info:
        client.token()
    assert (info.value.status, info.value.error) == (401, "invalid_client")


def test_failed_request_caches_nothing(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    state.reply = (400, {"error": "invalid_request"})
    with TokenClient(url, "app_1", "s") as client:
        with pytest.raises(TokenRequestError):
            client.token()
        state.reply = (200, None)
        assert client.token() == "tok-2"


@pytest.mark.parametrize(
    "reply",
    [
        (500, b"oops"),
        (200, b"not json"),
        (200, {"token_type": "Bearer", "expires_in": 900}),
        (200, {"access_token": "t", "token_type": "mac", "expires_in": 900}),
        (200, {"access_token": "t", "token_type": "Bearer", "expires_in": "900"}),
        (200, {"access_token": "t", "token_type": "Bearer", "expires_in": 0}),
        (200, ["t"]),
    ],
)
def test_malformed_response_is_refused(server: tuple[FakeAuthServer, str], reply: tuple[int, Any]) -> None:
    state, url = server
    state.reply = reply
    with TokenClient(url, "app_1", "s") as client, pytest.raises(TokenResponseError):
        client.token()


def test_missing_expires_in_defaults_to_five_minutes(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    state.reply = (200, {"access_token": "t", "token_type": "Bearer"})
    with TokenClient(url, "app_1", "s") as client:
        assert client.get().expires_in == 300


def test_unknown_auth_method_is_refused() -> None:
    with pytest.raises(ValueError):
        TokenClient("http://127.0.0.1:1/token", "a", "b", auth_method="jwt")  # type: ignore[arg-type]


async def test_async_callers_share_one_request(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    state.delay = 0.2
    async with AsyncTokenClient(url, "app_1", "s") as client:
        results = await asyncio.gather(*(client.token() for _ in range(50)))
    assert set(results) == {"tok-1"} and len(state.requests) == 1


async def test_async_token_renews_before_expiry(server: tuple[FakeAuthServer, str]) -> None:
    _state, url = server
    clock = Clock()
    async with AsyncTokenClient(url, "app_1", "s", clock=clock) as client:
        assert await client.token() == "tok-1"
        clock.t += 840
        assert await client.token() == "tok-2"


async def test_async_oauth_error_is_raised(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    state.reply = (400, {"error": "unsupported_grant_type"})
    async with AsyncTokenClient(url, "app_1", "s") as client:
        with pytest.raises(TokenRequestError) as info:
            await client.token()
    assert info.value.error == "unsupported_grant_type"


@pytest.mark.expected_traceback()
async def test_async_waiter_retries_after_the_fetcher_is_cancelled(server: tuple[FakeAuthServer, str]) -> None:
    state, url = server
    state.delay = 0.3
    async with AsyncTokenClient(url, "app_1", "s") as client:
        first = asyncio.create_task(client.token())
        second = asyncio.create_task(client.token())
        await asyncio.sleep(0.05)
        first.cancel()
        assert await second in ("tok-1", "tok-2")
        with pytest.raises(asyncio.CancelledError):
            await first
