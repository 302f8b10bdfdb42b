"""The authorization server's shell: the token grant, the bearer check, and the documents it publishes.

It glues the sans-IO cores (token request parsing, limiter, tokens, permissions) to the store, the keys
folder and the clock. HTTP lives in `chargenet.auth.routes`; the API's use of the bearer check lives in
`chargenet.api.security`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from chargenet.auth.errors import ClientAuthenticationFailed, InvalidToken, TooManyFailedAttempts
from chargenet.auth.keys import SigningKeys
from chargenet.auth.limiter import FailureLimiter
from chargenet.auth.permissions import Permissions
from chargenet.auth.principals import Principal, PrincipalCache, PrincipalReader
from chargenet.auth.token_request import AuthMethod, ClientCredentials
from chargenet.auth.tokens import AccessTokenClaims, IssuedToken, TokenIssuer, TokenValidator
from chargenet.clock import Clock
from chargenet.config import Settings
from chargenet.keys import KeyStore, SecretHasher
from chargenet.store.db import Store

KEY_REFRESH = timedelta(seconds=2)
VALIDATED_CACHE = 10_000


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated request: the token's claims and the application's current permissions."""

    claims: AccessTokenClaims
    principal: Principal

    @property
    def permissions(self) -> Permissions:
        return self.principal.permissions


class AuthServer:
    def __init__(self, *, settings: Settings, store: Store, keys: KeyStore, clock: Clock) -> None:
        self.settings = settings
        self.issuer = settings.auth_url
        self.audience = settings.base_url
        self._store = store
        self._clock = clock
        self._hasher: SecretHasher = keys.secret_hasher()
        # Compared against for an unknown client, so that answer costs what a wrong secret costs.
        self._decoy = self._hasher.hash(secrets.token_urlsafe(32))
        self.signing_keys = SigningKeys(keys)
        self.signing_keys.ensure(clock.now())
        self.limiter = FailureLimiter()
        self._reader = PrincipalReader(store)
        self.principals = PrincipalCache(self._reader, clock)
        self._refreshed_at: datetime | None = None
        self._issuer: TokenIssuer | None = None
        self._validator: TokenValidator | None = None
        # Signature checks are the costly part of the bearer check; a token string once verified stays
        # verified, so only its time-based claims are checked again (by re-validating after expiry).
        self._verified: dict[str, AccessTokenClaims] = {}
        self._refresh(clock.now())

    def _refresh(self, now: datetime) -> None:
        if self._refreshed_at is not None and now - self._refreshed_at < KEY_REFRESH:
            return
        self.signing_keys.refresh()
        kid, key = self.signing_keys.token_signing_key(now)
        if self._issuer is None or self._issuer.kid != kid:
            self._issuer = TokenIssuer(issuer=self.issuer, audience=self.audience, key=key, kid=kid)
        keys = self.signing_keys.token_verification_keys(now)
        if self._validator is None or self._validator.kids != frozenset(keys):
            self._validator = TokenValidator(issuer=self.issuer, audience=self.audience, keys=keys)
            self._verified.clear()
        self._refreshed_at = now

    # -- the token grant --

    def check_limits(self, client_id: str | None, address: str | None) -> None:
        wait = self.limiter.retry_after(client_id=client_id, address=address, now=self._clock.now())
        if wait is not None:
            raise TooManyFailedAttempts(wait)

    async def grant(self, credentials: ClientCredentials, address: str | None) -> IssuedToken:
        """Authenticate the client and issue a token, or raise `ClientAuthenticationFailed`/`TooManyFailedAttempts`.

        The application is read from the database, not the cache: a rotated secret stops working at once.
        """
        self.check_limits(credentials.client_id, address)
        principal = await self._reader.read(credentials.client_id)
        stored = principal.secret_hash if principal is not None else self._decoy
        good = self._hasher.verify(credentials.client_secret, stored)
        if principal is None or not good or not principal.enabled:
            self.limiter.record_failure(client_id=credentials.client_id, address=address, now=self._clock.now())
            raise ClientAuthenticationFailed(credentials.client_id)
        now = self._clock.now()
        self._refresh(now)
        assert self._issuer is not None
        return self._issuer.issue(
            client_id=principal.client_id,
            scopes=[s.value for s in principal.permissions.scopes],
            now=now,
            jti=secrets.token_urlsafe(16),
            secret_generation=principal.secret_generation,
        )

    def close(self) -> None:
        self._reader.close()

    # -- the bearer check --

    async def authenticate(self, token: str) -> Caller:
        """The caller behind a bearer token, or `InvalidToken` (also for a disabled, deleted or rotated app)."""
        now = self._clock.now()
        self._refresh(now)
        assert self._validator is not None
        claims = self._verified.get(token)
        if claims is None or now.timestamp() >= claims.expires_at:
            claims = self._validator.validate(token, now=now)
            if len(self._verified) >= VALIDATED_CACHE:
                self._verified.clear()
            self._verified[token] = claims
        principal = await self.principals.get(claims.client_id)
        if principal is None:
            raise InvalidToken("the application no longer exists")
        if not principal.enabled:
            raise InvalidToken("the application is disabled")
        if principal.secret_generation != claims.secret_generation:
            raise InvalidToken("the application's secret was rotated")
        return Caller(claims, principal)

    # -- published documents --

    def jwks(self) -> dict[str, Any]:
        now = self._clock.now()
        self._refresh(now)
        return self.signing_keys.jwks(now)

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 authorization server metadata (and the OpenID discovery fields that apply)."""
        return {
            "issuer": self.issuer,
            "token_endpoint": f"{self.issuer}/oauth2/token",
            "jwks_uri": f"{self.issuer}/.well-known/jwks.json",
            "grant_types_supported": ["client_credentials"],
            "token_endpoint_auth_methods_supported": [AuthMethod.BASIC.value, AuthMethod.POST.value],
            "response_types_supported": [],
            "service_documentation": f"{self.settings.public_url}/api/v1/docs",
        }
