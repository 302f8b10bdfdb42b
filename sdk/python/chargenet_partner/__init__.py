"""chargenet partner SDK: get API tokens and verify the webhooks chargenet sends."""

from __future__ import annotations

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
