"""The kinds `/health` shows for a lane's last error, from the messages the sender and the lane really write."""

from __future__ import annotations

import httpx
import pytest

from chargenet.webhooks.failures import failure_kind
from chargenet.webhooks.lane import Failed, outcome_of_status
from chargenet.webhooks.outbound_auth import TokenResponseInvalid
from chargenet.webhooks.sender import _describe
from chargenet.webhooks.transport import HostUnresolvable


def _error_of(status: int) -> str:
    outcome = outcome_of_status(status)
    assert isinstance(outcome, Failed)
    return outcome.error


@pytest.mark.parametrize(
    ("status", "kind"), [(500, "http_5xx"), (503, "http_5xx"), (404, "http_4xx"), (429, "http_4xx")]
)
def test_an_http_status_is_its_class(status: int, kind: str) -> None:
    assert failure_kind(_error_of(status)) == kind


def test_a_redirect_is_a_redirect_not_its_status_class() -> None:
    assert failure_kind(_error_of(302)) == "redirect"


def test_a_refused_connection_is_connection_refused() -> None:
    message = _describe(httpx.ConnectError("[Errno 111] Connect call failed ('127.0.0.1', 9)"))
    assert failure_kind(message) == "connection_refused"


def test_another_connect_failure_is_connection_failed() -> None:
    assert failure_kind(_describe(httpx.ConnectError("[Errno 113] No route to host"))) == "connection_failed"


def test_a_reset_connection_is_connection_reset() -> None:
    assert failure_kind(_describe(httpx.ReadError("peer reset"))) == "connection_reset"


def test_an_unresolvable_host_is_name_unresolved() -> None:
    assert failure_kind(HostUnresolvable("hooks.partner.example", "Name or service not known").message) == (
        "name_unresolved"
    )


def test_a_timeout_is_timeout() -> None:
    assert failure_kind("timeout after 10 s") == "timeout"


def test_a_token_endpoint_answer_is_token_failed_without_the_partners_words() -> None:
    message = TokenResponseInvalid("token endpoint answered HTTP 400 (secret is 'hunter2')").detail
    assert failure_kind(message) == "token_failed"


def test_an_unknown_message_is_error_not_its_text() -> None:
    assert failure_kind("ValueError: /srv/partner/secret.txt") == "error"


def test_no_error_is_none() -> None:
    assert failure_kind(None) is None
