"""The console's protections as pure functions: origin checks, CSRF tokens, the session cookie."""

from __future__ import annotations

import pytest

from chargenet.console.protection import (
    CookiePolicy,
    CrossOriginRequest,
    CsrfTokenMismatch,
    check_csrf_token,
    check_origin,
    origin_of,
)

EXPECTED = "https://cpo.example"


@pytest.mark.parametrize(
    "url,origin",
    [
        ("https://CPO.example/charging", "https://cpo.example"),
        ("https://cpo.example:443", "https://cpo.example"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://[::1]:8080/x", "http://[::1]:8080"),
    ],
)
def test_the_origin_of_a_url_is_written_as_browsers_send_it(url: str, origin: str) -> None:
    assert origin_of(url) == origin


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_reading_is_never_refused_whatever_the_origin(method: str) -> None:
    check_origin(method, {"origin": "https://evil.example", "sec-fetch-site": "cross-site"}, EXPECTED)


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://evil.example"},
        {"origin": "http://cpo.example"},  # the plain-HTTP origin behind a TLS proxy is another origin
        {"origin": "https://cpo.example:8443"},
        {"origin": "null"},
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},
        {"origin": "https://evil.example", "sec-fetch-site": "same-origin"},
    ],
)
def test_a_change_from_another_origin_is_refused(headers: dict[str, str]) -> None:
    with pytest.raises(CrossOriginRequest):
        check_origin("POST", headers, EXPECTED)


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://cpo.example"},
        {"origin": "https://CPO.example:443"},
        {"sec-fetch-site": "same-origin"},
        {"sec-fetch-site": "none"},
        {},  # not a browser: the CSRF token still has to match
    ],
)
def test_a_change_from_the_public_urls_origin_passes(headers: dict[str, str]) -> None:
    check_origin("POST", headers, EXPECTED)


@pytest.mark.parametrize("given", [None, "", "wrong", "abc", "abcd"])
def test_a_missing_or_wrong_csrf_token_is_refused(given: str | None) -> None:
    with pytest.raises(CsrfTokenMismatch):
        check_csrf_token("abcdef", given)


def test_the_sessions_csrf_token_passes() -> None:
    check_csrf_token("abcdef", "abcdef")


def test_the_session_cookie_is_httponly_lax_on_the_console_path_and_secure_only_under_https() -> None:
    plain = CookiePolicy.for_public_url("http://127.0.0.1:8080")
    assert plain.set_cookie("t") == "chargenet_console=t; Path=/console; HttpOnly; SameSite=Lax"
    secure = CookiePolicy.for_public_url("https://cpo.example/")
    assert secure.set_cookie("t").endswith("; Secure") and secure.path == "/console"
    assert "Max-Age=0" in secure.clear_cookie()
