"""The authorization server's shell: client authentication, the token grant, introspection and revocation, the
bearer check, and the documents it publishes.

It glues the sans-IO cores (token request parsing, client assertions, limiter, tokens, permissions) to the store,
the keys folder and the clock. HTTP lives in `chargenet.auth.routes`; the API's use of the bearer check lives in
`chargenet.api.security`.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from chargenet.auth.client_assertions import ALLOWED_ALGORITHMS as ASSERTION_ALGORITHMS
from chargenet.auth.client_assertions import VerifiedAssertion, verify_assertion
from chargenet.auth.client_keys import ClientKeys
from chargenet.auth.errors import (
    ClientAuthenticationFailed,
    InvalidClientAssertion,
    InvalidToken,
    TokenOfAnotherClient,
    TooManyFailedAttempts,
    UnknownSigningKey,
)
from chargenet.auth.keys import SigningKeys
from chargenet.auth.limiter import FailureLimiter
from chargenet.auth.permissions import Permissions
from chargenet.auth.principals import Principal, PrincipalCache, PrincipalReader
from chargenet.auth.rate_limits import RateLimits
from chargenet.auth.revocations import RevokedTokens, UsedAssertions
from chargenet.auth.token_request import AuthMethod, ClientAssertion, ClientAuthentication
from chargenet.auth.tokens import AccessTokenClaims, IssuedToken, TokenIssuer, TokenValidator
from chargenet.clock import Clock
from chargenet.config import Settings
from chargenet.keys import KeyStore, SecretHasher
from chargenet.store.db import Store

log = logging.getLogger(__name__)

KEY_REFRESH = timedelta(seconds=2)
AUTH_METHODS = [AuthMethod.BASIC.value, AuthMethod.POST.value, AuthMethod.PRIVATE_KEY_JWT.value]
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
        self.rate_limits = RateLimits(store, clock)
        self.revoked = RevokedTokens(store, clock)
        self._used_assertions = UsedAssertions(store, clock)
        self.client_keys = ClientKeys(clock=clock, allow_private=settings.webhook_allow_private)
        # RFC 7523 §3 and decisions.md §5: an assertion may name the issuer or the token endpoint.
        self.assertion_audiences = frozenset({self.issuer, f"{self.issuer}/oauth2/token"})
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

    async def authenticate_client(self, credentials: ClientAuthentication, address: str | None) -> Principal:
        """The application that authenticated, or `ClientAuthenticationFailed`/`TooManyFailedAttempts`.

        The application is read from the database, not the cache: a rotated secret stops working at once.
        """
        self.check_limits(credentials.client_id, address)
        principal = await self._reader.read(credentials.client_id)
        if isinstance(credentials, ClientAssertion):
            # A disabled application's assertion is not even checked, so its `jti` is not stored.
            good = principal is not None and principal.enabled and await self._assertion_holds(credentials, principal)
        else:
            stored = principal.secret_hash if principal is not None else self._decoy
            good = self._hasher.verify(credentials.client_secret, stored)
        if principal is None or not good or not principal.enabled:
            self.limiter.record_failure(client_id=credentials.client_id, address=address, now=self._clock.now())
            raise ClientAuthenticationFailed(credentials.client_id)
        return principal

    async def _assertion_holds(self, credentials: ClientAssertion, principal: Principal) -> bool:
        now = int(self._clock.now().timestamp())

        async def verified_with(*, again: bool) -> VerifiedAssertion:
            keys = await self.client_keys.key_set(principal, again=again)
            return verify_assertion(
                credentials.assertion,
                client_id=principal.client_id,
                key_set=keys,
                audiences=self.assertion_audiences,
                now=now,
            )

        try:
            try:
                verified = await verified_with(again=False)
            except UnknownSigningKey:
                if principal.jwks_url is None:
                    raise
                # The client may have rotated its keys since its key set was read.
                verified = await verified_with(again=True)
        except InvalidClientAssertion as exc:
            log.info("client assertion of %s refused: %s", principal.client_id, exc.reason)
            return False
        if not await self._used_assertions.first_use(
            client_id=principal.client_id, jti=verified.jti, expires_at=verified.expires_at
        ):
            log.info("client assertion of %s refused: its jti was used before", principal.client_id)
            return False
        return True

    async def grant(self, credentials: ClientAuthentication, address: str | None) -> IssuedToken:
        """Authenticate the client and issue a token, or raise `ClientAuthenticationFailed`/`TooManyFailedAttempts`."""
        principal = await self.authenticate_client(credentials, address)
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

    # -- introspection (RFC 7662) and revocation (RFC 7009) --

    async def introspect(self, credentials: ClientAuthentication, token: str, address: str | None) -> dict[str, Any]:
        """What the authenticated client may learn of `token`: its claims when it is the client's own and still
        accepted by the API, else only `{"active": false}` (another client's token included: nothing leaks)."""
        principal = await self.authenticate_client(credentials, address)
        try:
            caller = await self.authenticate(token)
        except InvalidToken:
            return {"active": False}
        if caller.claims.client_id != principal.client_id:
            return {"active": False}
        claims = caller.claims
        answer: dict[str, Any] = {
            "active": True,
            "client_id": claims.client_id,
            "sub": claims.client_id,
            "token_type": "Bearer",
            "iss": claims.issuer,
            "aud": claims.audience,
            "iat": claims.issued_at,
            "exp": claims.expires_at,
            "jti": claims.jti,
        }
        if claims.scopes:
            answer["scope"] = " ".join(claims.scopes)
        return answer

    async def revoke(self, credentials: ClientAuthentication, token: str, address: str | None) -> None:
        """Revoke the authenticated client's `token`. A token that is not ours, malformed or expired needs no
        revoking (RFC 7009 §2.2: answered as done); another client's token raises `TokenOfAnotherClient`."""
        principal = await self.authenticate_client(credentials, address)
        now = self._clock.now()
        self._refresh(now)
        assert self._validator is not None
        try:
            claims = self._validator.validate(token, now=now)
        except InvalidToken:
            return
        if claims.client_id != principal.client_id:
            raise TokenOfAnotherClient(principal.client_id)
        await self.revoked.revoke(jti=claims.jti, client_id=claims.client_id, expires_at=claims.expires_at)

    async def close(self) -> None:
        self._reader.close()
        await self.client_keys.aclose()

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
        if await self.revoked.is_revoked(claims.jti):
            raise InvalidToken("the token was revoked")
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
            "token_endpoint_auth_methods_supported": AUTH_METHODS,
            "token_endpoint_auth_signing_alg_values_supported": list(ASSERTION_ALGORITHMS),
            "introspection_endpoint": f"{self.issuer}/oauth2/introspect",
            "introspection_endpoint_auth_methods_supported": AUTH_METHODS,
            "introspection_endpoint_auth_signing_alg_values_supported": list(ASSERTION_ALGORITHMS),
            "revocation_endpoint": f"{self.issuer}/oauth2/revoke",
            "revocation_endpoint_auth_methods_supported": AUTH_METHODS,
            "revocation_endpoint_auth_signing_alg_values_supported": list(ASSERTION_ALGORITHMS),
            "response_types_supported": [],
            "service_documentation": f"{self.settings.public_url}/api/v1/docs",
        }
