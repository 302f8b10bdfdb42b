"""chargenet partner SDK: what a partner needs to call the chargenet API and receive its webhooks."""

from chargenet_partner.tokens import AsyncTokenClient, Token, TokenClient, TokenRequestError, TokenResponseError

__all__ = ["AsyncTokenClient", "Token", "TokenClient", "TokenRequestError", "TokenResponseError"]
