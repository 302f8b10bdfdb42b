"""Why an attempt to open an upstream link failed, as the link's state says it (edge.upstream.describe_failure)."""

from __future__ import annotations

import ssl

import websockets
from websockets.datastructures import Headers
from websockets.http11 import Response

from chargenet.domain.upstream_profiles import LinkFailure
from chargenet.edge.upstream import describe_failure


def refused(status: int) -> websockets.InvalidStatus:
    return websockets.InvalidStatus(Response(status, "refused", Headers()))


def test_an_untrusted_server_certificate_is_named() -> None:
    error = ssl.SSLCertVerificationError(1, "certificate verify failed")
    error.verify_message = "self-signed certificate in certificate chain"
    assert describe_failure(error, over_tls=True) == (
        LinkFailure.SERVER_CERTIFICATE,
        "self-signed certificate in certificate chain",
    )


def test_a_tls_alert_is_a_refused_client_certificate() -> None:
    error = ssl.SSLError(1, "alert")
    error.reason = "TLSV13_ALERT_CERTIFICATE_REQUIRED"
    assert describe_failure(error, over_tls=True)[0] is LinkFailure.CLIENT_CERTIFICATE_REFUSED


def test_a_tls_connection_closed_before_the_http_answer_is_a_refused_client_certificate() -> None:
    error = websockets.InvalidMessage("did not receive a valid HTTP response")
    error.__cause__ = EOFError("connection closed while reading HTTP status line")
    assert describe_failure(error, over_tls=True)[0] is LinkFailure.CLIENT_CERTIFICATE_REFUSED
    assert describe_failure(error, over_tls=False)[0] is LinkFailure.UNREACHABLE


def test_401_and_403_are_refused_credentials() -> None:
    assert describe_failure(refused(401), over_tls=True) == (LinkFailure.CREDENTIALS_REFUSED, "HTTP 401")
    assert describe_failure(refused(403), over_tls=False) == (LinkFailure.CREDENTIALS_REFUSED, "HTTP 403")
    assert describe_failure(refused(502), over_tls=False)[0] is LinkFailure.UNREACHABLE


def test_a_refused_connection_is_an_unreachable_upstream() -> None:
    failure, detail = describe_failure(ConnectionRefusedError(111, "Connection refused"), over_tls=False)
    assert failure is LinkFailure.UNREACHABLE
    assert detail.startswith("ConnectionRefusedError")
