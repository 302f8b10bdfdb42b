"""What can fail in authentication and authorization, as data.

The token endpoint maps these to RFC 6749 errors and the API to RFC 6750 challenges with RFC 9457
bodies, each in one place.
"""

from __future__ import annotations

from chargenet.errors import ChargenetError, Forbidden


class InvalidToken(ChargenetError):
    """A bearer token that must not be accepted; `reason` says why, for logs only, never for the caller."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"invalid access token: {reason}")
        self.reason = reason


class ClientAuthenticationFailed(ChargenetError):
    """Unknown client, wrong secret or a disabled application: the caller is told the same in each case."""

    def __init__(self, client_id: str) -> None:
        super().__init__(f"client authentication failed for {client_id!r}")
        self.client_id = client_id


class TooManyFailedAttempts(ChargenetError):
    """Client authentication is refused for a while after repeated failures."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many failed client authentications; retry after {retry_after} s")
        self.retry_after = retry_after


class RateLimitExceeded(ChargenetError):
    """The application has spent its rate limit for now (domain/rate_limits.py); a token is back in `retry_after` s."""

    def __init__(self, requests: int, retry_after: int) -> None:
        super().__init__(
            f"the application's rate limit of {requests} requests a minute is spent; retry after {retry_after} s"
        )
        self.retry_after = retry_after


class InsufficientScope(Forbidden):
    """The caller is authenticated but none of its groups grants `scope` where it was needed."""

    def __init__(self, scope: str) -> None:
        super().__init__(f"the application lacks scope {scope!r} here")
        self.scope = scope


class MissingToken(ChargenetError):
    """A protected endpoint was called without bearer credentials."""

    def __init__(self) -> None:
        super().__init__("an access token is required")


class InvalidClientAssertion(ChargenetError):
    """A private_key_jwt assertion or key set that cannot be accepted; `reason` says why (logs and the operator
    registering keys; a client authenticating is told only that authentication failed)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"invalid client assertion: {reason}")
        self.reason = reason


class UnknownSigningKey(InvalidClientAssertion):
    """No registered key verifies the assertion: the client signed with another key, or rotated to a key its
    published key set has that the server has not read yet."""

    def __init__(self) -> None:
        super().__init__("no registered key verifies the signature")


class TokenOfAnotherClient(ChargenetError):
    """A client asked to revoke a token issued to another client (decisions.md §5: refused, nothing revoked)."""

    def __init__(self, client_id: str) -> None:
        super().__init__(f"the token was not issued to {client_id!r}")
        self.client_id = client_id
