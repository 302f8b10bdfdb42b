from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chargenet.errors import InvalidInput
from chargenet.webhooks.outbound_auth import (
    AuthType,
    BasicAuth,
    CachedToken,
    NoAuth,
    OAuth2ClientCredentials,
    StaticToken,
    TokenAuthMethod,
    TokenResponseInvalid,
    build_auth,
    check_url,
    from_document,
    parse_token_response,
    static_authorization,
    to_document,
)

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def test_basic_authorization_is_base64_of_user_and_password() -> None:
    assert static_authorization(BasicAuth("Aladdin", "open sesame")) == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="


def test_static_token_uses_the_token_scheme() -> None:
    assert static_authorization(StaticToken("abc")) == "Token abc"


def test_none_sends_no_authorization() -> None:
    assert static_authorization(NoAuth()) is None


def test_fifteen_minute_token_is_renewed_one_minute_before_expiry() -> None:
    token = CachedToken("t", NOW, NOW + timedelta(seconds=900))
    assert token.usable(NOW + timedelta(seconds=839)) and not token.usable(NOW + timedelta(seconds=840))


def test_short_token_is_renewed_a_tenth_of_its_lifetime_before_expiry() -> None:
    token = CachedToken("t", NOW, NOW + timedelta(seconds=30))
    assert token.usable(NOW + timedelta(seconds=26)) and not token.usable(NOW + timedelta(seconds=27))


def test_token_response_without_expiry_lives_five_minutes() -> None:
    token = parse_token_response(200, {"access_token": "a", "token_type": "bearer"}, NOW)
    assert token.expires_at == NOW + timedelta(minutes=5)


@pytest.mark.parametrize(
    ("status", "document", "message"),
    [
        (400, {"error": "invalid_scope"}, "HTTP 400 (invalid_scope)"),
        (200, ["x"], "not answer a JSON object"),
        (200, {"token_type": "Bearer"}, "no access_token"),
        (200, {"access_token": "a", "token_type": "mac"}, "is not Bearer"),
        (200, {"access_token": "a", "token_type": "Bearer", "expires_in": -5}, "positive"),
        (200, {"access_token": "a", "token_type": "Bearer", "expires_in": "60"}, "positive"),
    ],
)
def test_unusable_token_response_is_refused(status: int, document: Any, message: str) -> None:
    with pytest.raises(TokenResponseInvalid, match=re.escape(message)):
        parse_token_response(status, document, NOW)


def test_oauth2_settings_need_token_url_client_id_and_secret() -> None:
    with pytest.raises(InvalidInput) as caught:
        build_auth(AuthType.OAUTH2, token_url="https://idp.example/token", client_id="c")
    assert caught.value.field == "clientSecret"


def test_settings_of_another_auth_type_are_refused() -> None:
    with pytest.raises(InvalidInput) as caught:
        build_auth(AuthType.TOKEN, token="t", username="u")
    assert caught.value.field == "username"


def test_basic_user_name_with_colon_is_refused() -> None:
    with pytest.raises(InvalidInput, match="':'"):
        build_auth(AuthType.BASIC, username="a:b", password="p")


@pytest.mark.parametrize(
    "url", ["ftp://x.example/", "https://user:pw@x.example/", "https://x.example/#frag", "not a url", "https://:80/"]
)
def test_unusable_url_is_refused(url: str) -> None:
    with pytest.raises(InvalidInput):
        check_url(url)


@pytest.mark.parametrize(
    "auth",
    [
        NoAuth(),
        BasicAuth("u", "p"),
        StaticToken("t"),
        OAuth2ClientCredentials("https://idp.example/token", "c", "s", TokenAuthMethod.POST, "hooks"),
    ],
)
def test_credentials_round_trip_through_their_document(auth: Any) -> None:
    assert from_document(to_document(auth)) == auth
