"""chargenet partner SDK: get, introspect and revoke API tokens (with a secret or a private key), and verify the
webhooks chargenet sends."""

from __future__ import annotations

from chargenet_partner.assertions import PrivateKeyJwt
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
    "AsyncTokenClient",
    "AsyncWebhookVerifier",
    "PrivateKeyJwt",
    "Reason",
    "Token",
    "TokenClient",
    "TokenRequestError",
    "TokenResponseError",
    "VerifiedWebhook",
    "WebhookVerificationError",
    "WebhookVerifier",
    "verify_request",
]
