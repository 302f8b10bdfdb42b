"""RFC 9068 access tokens: issue and validate (sans-IO).

Issuing signs a JWT with RS256 and the header `typ: at+jwt`. Validation follows RFC 8725 in this order,
so that nothing an attacker controls picks the key or the algorithm:

Rule 1: the token is three base64url segments and its header a JSON object, or it is refused.
Rule 2: `alg` must be exactly one of ALLOWED_ALGORITHMS (case matters: `none`, `None`, `HS256` are refused).
Rule 3: `typ` must be `at+jwt` (RFC 9068 §4; the `application/` prefix may be present; case-insensitive).
Rule 4: headers that carry or point at a key (`jwk`, `jku`, `x5u`, `x5c`) or ask for extensions (`crit`)
        are refused: keys come only from our own key set, by `kid`; an unknown `kid` is refused.
Rule 5: the signature is verified with that key before any claim is read.
Rule 6: `iss` and `aud` must be ours; `exp` must be in the future and `iat`/`nbf` not in the future,
        each with LEEWAY seconds for clock skew between processes.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import RSAKey

from chargenet.auth.errors import InvalidToken

ACCESS_TOKEN_LIFETIME = 900
LEEWAY = 30
ALLOWED_ALGORITHMS = ("RS256",)
ACCESS_TOKEN_TYPES = ("at+jwt", "application/at+jwt")
FORBIDDEN_HEADERS = ("jwk", "jku", "x5u", "x5c", "x5t", "x5t#S256", "crit")
MAX_TOKEN_LENGTH = 8192
# A private claim (RFC 7519 §4.3): only our own API reads it.
SECRET_GENERATION_CLAIM = "secret_generation"  # noqa: S105 (a claim name, not a secret)


@dataclass(frozen=True, slots=True)
class AccessTokenClaims:
    issuer: str
    client_id: str
    audience: str
    issued_at: int
    expires_at: int
    jti: str
    scopes: tuple[str, ...]
    kid: str
    secret_generation: int


@dataclass(frozen=True, slots=True)
class IssuedToken:
    access_token: str
    expires_in: int
    claims: AccessTokenClaims


def _epoch(now: datetime) -> int:
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    return int(now.timestamp())


class TokenIssuer:
    """Signs access tokens with one RSA private key, named by `kid` in the header."""

    def __init__(
        self, *, issuer: str, audience: str, key: RSAKey, kid: str, lifetime: int = ACCESS_TOKEN_LIFETIME
    ) -> None:
        if not key.is_private:
            raise ValueError("the token signing key must be a private key")
        self._issuer = issuer
        self._audience = audience
        self._key = key
        self._kid = kid
        self._lifetime = lifetime
        self._header = {"alg": "RS256", "typ": "at+jwt", "kid": kid}

    @property
    def kid(self) -> str:
        return self._kid

    def issue(
        self, *, client_id: str, scopes: Iterable[str], now: datetime, jti: str, secret_generation: int
    ) -> IssuedToken:
        """A signed token for `client_id` valid from `now` for the configured lifetime.

        `secret_generation` is the application's secret generation at issue time: the API refuses a token
        whose generation is no longer current, so rotating a secret revokes the tokens it obtained.
        """
        iat = _epoch(now)
        scope_list = tuple(sorted(set(scopes)))
        claims: dict[str, Any] = {
            "iss": self._issuer,
            "sub": client_id,
            "client_id": client_id,
            "aud": self._audience,
            "iat": iat,
            "exp": iat + self._lifetime,
            "jti": jti,
            SECRET_GENERATION_CLAIM: secret_generation,
        }
        if scope_list:
            # RFC 6749 §3.3 has no empty scope, so an application without grants gets no claim.
            claims["scope"] = " ".join(scope_list)
        token = jwt.encode(self._header, claims, self._key, algorithms=list(ALLOWED_ALGORITHMS))
        return IssuedToken(
            access_token=token,
            expires_in=self._lifetime,
            claims=AccessTokenClaims(
                issuer=self._issuer,
                client_id=client_id,
                audience=self._audience,
                issued_at=iat,
                expires_at=iat + self._lifetime,
                jti=jti,
                scopes=scope_list,
                kid=self._kid,
                secret_generation=secret_generation,
            ),
        )


def _b64decode(segment: str) -> bytes:
    if not segment or "=" in segment:
        raise InvalidToken("malformed segment")
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        raise InvalidToken("malformed segment") from None


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise InvalidToken(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise InvalidToken(f"{what} is not a JSON object")
    return value


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class TokenValidator:
    """Validates access tokens against our issuer, audience and key set only."""

    def __init__(self, *, issuer: str, audience: str, keys: Mapping[str, RSAKey], leeway: int = LEEWAY) -> None:
        self._issuer = issuer
        self._audience = audience
        self._keys = dict(keys)
        self._leeway = leeway

    @property
    def kids(self) -> frozenset[str]:
        return frozenset(self._keys)

    def validate(self, token: str, *, now: datetime) -> AccessTokenClaims:
        """The claims of `token`, or `InvalidToken` naming the first rule it broke."""
        header = self._header(token)
        kid = header.get("kid")
        key = self._keys.get(kid) if isinstance(kid, str) else None
        if key is None:
            raise InvalidToken("unknown kid")
        try:
            verified = jws.deserialize_compact(token, key, algorithms=list(ALLOWED_ALGORITHMS))
        except (JoseError, ValueError):
            raise InvalidToken("bad signature") from None
        claims = _json_object(verified.payload or b"", "payload")
        return self._claims(claims, kid=str(kid), now=_epoch(now))

    def _header(self, token: str) -> dict[str, Any]:
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH or not token.isascii():
            raise InvalidToken("malformed token")
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("not a compact JWS")
        header = _json_object(_b64decode(parts[0]), "header")
        alg = header.get("alg")
        if alg not in ALLOWED_ALGORITHMS:
            raise InvalidToken(f"algorithm {alg!r} not allowed")
        typ = header.get("typ")
        if not isinstance(typ, str) or typ.lower() not in ACCESS_TOKEN_TYPES:
            raise InvalidToken(f"typ {typ!r} is not at+jwt")
        for name in FORBIDDEN_HEADERS:
            if name in header:
                raise InvalidToken(f"header {name!r} refused")
        if not parts[2]:
            raise InvalidToken("blank signature")
        return header

    def _claims(self, claims: dict[str, Any], *, kid: str, now: int) -> AccessTokenClaims:
        if claims.get("iss") != self._issuer:
            raise InvalidToken("wrong issuer")
        aud = claims.get("aud")
        audiences = aud if isinstance(aud, list) else [aud]
        if self._audience not in audiences:
            raise InvalidToken("wrong audience")
        exp, iat, nbf = claims.get("exp"), claims.get("iat"), claims.get("nbf")
        if not _is_number(exp) or not _is_number(iat) or (nbf is not None and not _is_number(nbf)):
            raise InvalidToken("exp and iat must be numbers")
        assert isinstance(exp, int | float) and isinstance(iat, int | float)
        if now >= exp + self._leeway:
            raise InvalidToken("expired")
        if iat > now + self._leeway:
            raise InvalidToken("issued in the future")
        if nbf is not None and nbf > now + self._leeway:
            raise InvalidToken("not yet valid")
        client_id, sub, jti = claims.get("client_id"), claims.get("sub"), claims.get("jti")
        if not isinstance(client_id, str) or not client_id or sub != client_id:
            raise InvalidToken("client_id and sub must name the same client")
        if not isinstance(jti, str) or not jti:
            raise InvalidToken("missing jti")
        generation = claims.get(SECRET_GENERATION_CLAIM)
        if not isinstance(generation, int) or isinstance(generation, bool):
            raise InvalidToken("missing secret generation")
        scope = claims.get("scope", "")
        if not isinstance(scope, str):
            raise InvalidToken("scope is not a string")
        return AccessTokenClaims(
            issuer=self._issuer,
            client_id=client_id,
            audience=self._audience,
            issued_at=int(iat),
            expires_at=int(exp),
            jti=jti,
            scopes=tuple(scope.split()),
            kid=kid,
            secret_generation=generation,
        )
