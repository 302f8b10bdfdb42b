"""chargenet partner SDK: verify the webhooks chargenet sends (and, alongside, call its API)."""

from __future__ import annotations

from chargenet_partner.webhooks import (
    AsyncWebhookVerifier,
    Reason,
    VerifiedWebhook,
    WebhookVerificationError,
    WebhookVerifier,
    verify_request,
)

__all__ = [
    "AsyncWebhookVerifier",
    "Reason",
    "VerifiedWebhook",
    "WebhookVerificationError",
    "WebhookVerifier",
    "verify_request",
]
