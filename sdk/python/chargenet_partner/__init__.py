"""chargenet partner SDK: get, introspect and revoke API tokens (with a secret or a private key), start charging
sessions and follow them to their stop, and verify the webhooks chargenet sends."""

from __future__ import annotations

from chargenet_partner.assertions import PrivateKeyJwt
from chargenet_partner.sessions import (
    AsyncSessionsClient,
    ChargenetApiError,
    FollowedSession,
    Sample,
    SessionNotStarted,
    SessionRequest,
    Transaction,
)
from chargenet_partner.tokens import AsyncTokenClient, Token, TokenClient, TokenRequestError, TokenResponseError
from chargenet_partner.webhooks import (
    AsyncWebhookVerifier,
    Reason,
    VerifiedWebhook,
    WebhookVerificationError,
    WebhookVerifier,
    verify_request,
)

__all__ = [
    "AsyncSessionsClient",
    "AsyncTokenClient",
    "AsyncWebhookVerifier",
    "ChargenetApiError",
    "FollowedSession",
    "PrivateKeyJwt",
    "Reason",
    "Sample",
    "SessionNotStarted",
    "SessionRequest",
    "Token",
    "TokenClient",
    "TokenRequestError",
    "TokenResponseError",
    "Transaction",
    "VerifiedWebhook",
    "WebhookVerificationError",
    "WebhookVerifier",
    "verify_request",
]
