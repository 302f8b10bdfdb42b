"""Token requests that are not UTF-8 text get RFC 6749 `invalid_request`, never a 5xx (decisions.md "Input the
service refuses")."""

from __future__ import annotations

import pytest

from tests.integration.auth.conftest import Served

FORM = "application/x-www-form-urlencoded"


async def test_form_with_a_byte_order_mark_is_read(served: Served) -> None:
    tenant = await served.tenant("CS-9")
    credentials = await served.app(tenant.company_id, "sites:read")
    response = await served.http.post(
        served.token_url,
        content=b"\xef\xbb\xbfgrant_type=client_credentials",
        headers={"Content-Type": FORM},
        auth=(credentials.client_id, credentials.client_secret),
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"grant_type=client_credentials&client_id=a\xe9&client_secret=s", FORM),
        (b"grant_type=client_credentials&client_id=a%E9&client_secret=s", FORM),
        (b"grant_type=client_credentials&client_id=a%ED%A0%80&client_secret=s", FORM),
        (b"grant_type=client_credentials&client_id=app_%00x&client_secret=s", FORM),
        (b"grant_type=client_credentials&client_id=app_x&client_secret=%00", FORM),
        (b"grant_type=client_credentials&client_id=a&client_secret=s", FORM + "; charset=iso-8859-1"),
    ],
)
async def test_form_that_is_not_utf8_text_is_invalid_request(served: Served, body: bytes, content_type: str) -> None:
    response = await served.http.post(served.token_url, content=body, headers={"Content-Type": content_type})
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_request"
    assert response.headers["cache-control"] == "no-store"


async def test_basic_credentials_holding_nul_are_refused_without_a_5xx(served: Served) -> None:
    response = await served.http.post(
        served.token_url, data={"grant_type": "client_credentials"}, auth=("app_\x00", "secret")
    )
    assert response.status_code in (400, 401), response.text
