from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from chargenet.auth.errors import InvalidToken
from chargenet.auth.tokens import LEEWAY, TokenIssuer, TokenValidator

ISSUER = "https://cn.example/auth"
AUDIENCE = "https://cn.example/api/v1"
NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
KID = "tok-1"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def segment(obj: dict[str, Any]) -> str:
    return b64(json.dumps(obj).encode())


@pytest.fixture
def issuer(rsa_key: RSAKey) -> TokenIssuer:
    return TokenIssuer(issuer=ISSUER, audience=AUDIENCE, key=rsa_key, kid=KID)


@pytest.fixture
def validator(rsa_key: RSAKey) -> TokenValidator:
    public = RSAKey.import_key(rsa_key.as_dict(private=False))
    return TokenValidator(issuer=ISSUER, audience=AUDIENCE, keys={KID: public})


def claims(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "iss": ISSUER,
        "sub": "app_x",
        "client_id": "app_x",
        "aud": AUDIENCE,
        "iat": int(NOW.timestamp()),
        "exp": int(NOW.timestamp()) + 900,
        "jti": "j1",
        "scope": "sites:read",
        "secret_generation": 1,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def signed(key: RSAKey, payload: dict[str, Any], **header: Any) -> str:
    head = {"alg": "RS256", "typ": "at+jwt", "kid": KID, **header}
    head = {k: v for k, v in head.items() if v is not None}
    return jwt.encode(head, payload, key, algorithms=[head["alg"]], default_type=None)


def test_issued_token_has_rfc9068_header(issuer: TokenIssuer) -> None:
    token = issuer.issue(client_id="app_x", scopes=["sites:read"], now=NOW, jti="j1", secret_generation=1).access_token
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header == {"alg": "RS256", "typ": "at+jwt", "kid": KID}


def test_issued_token_carries_rfc9068_claims(issuer: TokenIssuer) -> None:
    token = issuer.issue(
        client_id="app_x", scopes=["sites:read", "charge-points:read"], now=NOW, jti="j1", secret_generation=1
    )
    payload = json.loads(base64.urlsafe_b64decode(token.access_token.split(".")[1] + "=="))
    iat = int(NOW.timestamp())
    assert payload == {
        "iss": ISSUER,
        "sub": "app_x",
        "client_id": "app_x",
        "aud": AUDIENCE,
        "iat": iat,
        "exp": iat + 900,
        "jti": "j1",
        "secret_generation": 1,
        "scope": "charge-points:read sites:read",
    }
    assert token.expires_in == 900


def test_token_without_scopes_has_no_scope_claim(issuer: TokenIssuer) -> None:
    token = issuer.issue(client_id="app_x", scopes=[], now=NOW, jti="j1", secret_generation=1).access_token
    payload = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert "scope" not in payload


def test_issuer_refuses_public_key(rsa_key: RSAKey) -> None:
    public = RSAKey.import_key(rsa_key.as_dict(private=False))
    with pytest.raises(ValueError):
        TokenIssuer(issuer=ISSUER, audience=AUDIENCE, key=public, kid=KID)


def test_issued_token_validates(issuer: TokenIssuer, validator: TokenValidator) -> None:
    token = issuer.issue(client_id="app_x", scopes=["sites:read"], now=NOW, jti="j1", secret_generation=1).access_token
    result = validator.validate(token, now=NOW + timedelta(seconds=899))
    assert (result.client_id, result.scopes, result.jti, result.kid) == ("app_x", ("sites:read",), "j1", KID)


def test_expired_token_is_refused(issuer: TokenIssuer, validator: TokenValidator) -> None:
    token = issuer.issue(client_id="app_x", scopes=[], now=NOW, jti="j1", secret_generation=1).access_token
    with pytest.raises(InvalidToken, match="expired"):
        validator.validate(token, now=NOW + timedelta(seconds=900 + LEEWAY))


def test_token_within_leeway_after_expiry_is_accepted(issuer: TokenIssuer, validator: TokenValidator) -> None:
    token = issuer.issue(client_id="app_x", scopes=[], now=NOW, jti="j1", secret_generation=1).access_token
    assert validator.validate(token, now=NOW + timedelta(seconds=900 + LEEWAY - 1)).client_id == "app_x"


@pytest.mark.parametrize("alg", ["none", "None", "NONE", "nOnE"])
def test_alg_none_in_any_case_is_refused(validator: TokenValidator, alg: str) -> None:
    token = f"{segment({'alg': alg, 'typ': 'at+jwt', 'kid': KID})}.{segment(claims())}."
    with pytest.raises(InvalidToken, match="algorithm"):
        validator.validate(token, now=NOW)


def test_hs256_signed_with_our_public_key_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    pem = rsa_key.as_pem(private=False)
    signing_input = f"{segment({'alg': 'HS256', 'typ': 'at+jwt', 'kid': KID})}.{segment(claims())}"
    mac = hmac.new(pem, signing_input.encode(), hashlib.sha256).digest()
    with pytest.raises(InvalidToken, match="algorithm"):
        validator.validate(f"{signing_input}.{b64(mac)}", now=NOW)


@pytest.mark.parametrize("alg", ["PS256", "RS512", "ES256", "EdDSA", "rs256"])
def test_algorithm_outside_allow_list_is_refused(validator: TokenValidator, alg: str) -> None:
    token = f"{segment({'alg': alg, 'typ': 'at+jwt', 'kid': KID})}.{segment(claims())}.c2ln"
    with pytest.raises(InvalidToken, match="algorithm"):
        validator.validate(token, now=NOW)


@pytest.mark.parametrize("typ", ["JWT", "jwt", None, "at+JWT-x"])
def test_typ_other_than_at_jwt_is_refused(rsa_key: RSAKey, validator: TokenValidator, typ: Any) -> None:
    token = signed(rsa_key, claims(), typ=typ)
    with pytest.raises(InvalidToken, match="typ"):
        validator.validate(token, now=NOW)


def test_typ_that_is_not_a_string_is_refused(validator: TokenValidator) -> None:
    token = f"{segment({'alg': 'RS256', 'typ': 1, 'kid': KID})}.{segment(claims())}.c2ln"
    with pytest.raises(InvalidToken, match="typ"):
        validator.validate(token, now=NOW)


@pytest.mark.parametrize("typ", ["AT+JWT", "application/at+jwt"])
def test_typ_accepts_media_type_spellings(rsa_key: RSAKey, validator: TokenValidator, typ: str) -> None:
    assert validator.validate(signed(rsa_key, claims(), typ=typ), now=NOW).client_id == "app_x"


def test_wrong_issuer_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    with pytest.raises(InvalidToken, match="issuer"):
        validator.validate(signed(rsa_key, claims(iss="https://evil.example/auth")), now=NOW)


def test_wrong_audience_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    with pytest.raises(InvalidToken, match="audience"):
        validator.validate(signed(rsa_key, claims(aud="https://other.example/api")), now=NOW)


def test_audience_list_containing_ours_is_accepted(rsa_key: RSAKey, validator: TokenValidator) -> None:
    token = signed(rsa_key, claims(aud=["https://other.example", AUDIENCE]))
    assert validator.validate(token, now=NOW).audience == AUDIENCE


def test_future_nbf_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    token = signed(rsa_key, claims(nbf=int(NOW.timestamp()) + LEEWAY + 1))
    with pytest.raises(InvalidToken, match="not yet valid"):
        validator.validate(token, now=NOW)


def test_future_iat_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    token = signed(rsa_key, claims(iat=int(NOW.timestamp()) + LEEWAY + 1))
    with pytest.raises(InvalidToken, match="future"):
        validator.validate(token, now=NOW)


def test_missing_exp_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    token = signed(rsa_key, {k: v for k, v in claims().items() if k != "exp"})
    with pytest.raises(InvalidToken, match="numbers"):
        validator.validate(token, now=NOW)


def test_boolean_exp_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    with pytest.raises(InvalidToken, match="numbers"):
        validator.validate(signed(rsa_key, claims(exp=True)), now=NOW)


def test_sub_differing_from_client_id_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    with pytest.raises(InvalidToken, match="client"):
        validator.validate(signed(rsa_key, claims(sub="someone-else")), now=NOW)


def test_missing_jti_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    with pytest.raises(InvalidToken, match="jti"):
        validator.validate(signed(rsa_key, claims(jti=None)), now=NOW)


def test_unknown_kid_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    with pytest.raises(InvalidToken, match="kid"):
        validator.validate(signed(rsa_key, claims(), kid="tok-9"), now=NOW)


def test_missing_secret_generation_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    with pytest.raises(InvalidToken, match="generation"):
        validator.validate(signed(rsa_key, claims(secret_generation=None)), now=NOW)


def test_secret_generation_is_reported(rsa_key: RSAKey, validator: TokenValidator) -> None:
    assert validator.validate(signed(rsa_key, claims(secret_generation=7)), now=NOW).secret_generation == 7


def test_missing_kid_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    with pytest.raises(InvalidToken, match="kid"):
        validator.validate(signed(rsa_key, claims(), kid=None), now=NOW)


def test_token_of_another_issuers_key_is_refused(other_rsa_key: RSAKey, validator: TokenValidator) -> None:
    with pytest.raises(InvalidToken, match="signature"):
        validator.validate(signed(other_rsa_key, claims()), now=NOW)


@pytest.mark.parametrize("header", ["jwk", "jku", "x5u", "x5c", "crit"])
def test_key_carrying_headers_are_refused(other_rsa_key: RSAKey, validator: TokenValidator, header: str) -> None:
    value: Any = {
        "jwk": other_rsa_key.as_dict(private=False),
        "jku": "https://evil.example/jwks.json",
        "x5u": "https://evil.example/cert.pem",
        "x5c": ["MIIB"],
        "crit": ["exp"],
    }[header]
    token = f"{segment({'alg': 'RS256', 'typ': 'at+jwt', 'kid': KID, header: value})}.{segment(claims())}.c2ln"
    with pytest.raises(InvalidToken, match=header):
        validator.validate(token, now=NOW)


def test_truncated_signature_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    token = signed(rsa_key, claims())
    with pytest.raises(InvalidToken, match="signature"):
        validator.validate(token[:-10], now=NOW)


def test_blank_signature_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    head, body, _ = signed(rsa_key, claims()).split(".")
    with pytest.raises(InvalidToken, match="signature"):
        validator.validate(f"{head}.{body}.", now=NOW)


def test_altered_payload_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    head, _, sig = signed(rsa_key, claims()).split(".")
    forged = segment(claims(scope="groups:write applications:write"))
    with pytest.raises(InvalidToken, match="signature"):
        validator.validate(f"{head}.{forged}.{sig}", now=NOW)


@pytest.mark.parametrize("token", ["", "abc", "a.b", "a.b.c.d", "!!!.e30.c2ln", "W10.e30.c2ln", "é.é.é"])
def test_malformed_token_is_refused(validator: TokenValidator, token: str) -> None:
    with pytest.raises(InvalidToken):
        validator.validate(token, now=NOW)


def test_oversized_token_is_refused(validator: TokenValidator) -> None:
    with pytest.raises(InvalidToken, match="malformed"):
        validator.validate("a" * 9000, now=NOW)


def test_payload_that_is_not_an_object_is_refused(rsa_key: RSAKey, validator: TokenValidator) -> None:
    from joserfc import jws

    token = jws.serialize_compact({"alg": "RS256", "typ": "at+jwt", "kid": KID}, b"[1,2]", rsa_key)
    with pytest.raises(InvalidToken, match="object"):
        validator.validate(token, now=NOW)
