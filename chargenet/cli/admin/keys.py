"""`chargenet admin keys ...`: signing key rotation (decisions.md §4)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from chargenet.cli.admin import NOUNS
from chargenet.cli.common import add_verb, emit, emit_list, run_with_context
from chargenet.errors import Conflict

if TYPE_CHECKING:
    from chargenet.auth.keyring import TokenKeyRing
    from chargenet.context import AppContext


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("keys", help=NOUNS["keys"][1])
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)
    # The delays as `auth.keyring` has them (PUBLISH_AHEAD, WEBHOOK_NEXT_MIN_AGE), written out so that building the
    # parser imports no key code; a test holds them equal.
    add_verb(verbs, "rotate-token-key", "publish a new token signing key now; it signs after 600 s", _rotate_token)
    add_verb(
        verbs,
        "rotate-webhook-key",
        "publish the next webhook key as sign-next, or promote it after 24 h",
        _rotate_webhook,
    )
    add_verb(verbs, "show", "list the published signing keys", _show)


def _ring_items(ring: TokenKeyRing) -> list[dict[str, Any]]:
    return [
        {
            "kid": e.kid,
            "signsFrom": e.signs_from.isoformat(),
            "retireAt": e.retire_at.isoformat() if e.retire_at else None,
        }
        for e in ring.entries
    ]


def _rotate_token(args: argparse.Namespace) -> None:
    from chargenet.auth.keys import SigningKeys

    async def action(ctx: AppContext) -> TokenKeyRing:
        return SigningKeys(ctx.keys).rotate_token_key(ctx.clock.now())

    emit_list(args, _ring_items(run_with_context(args, action)), ["kid", "signsFrom", "retireAt"])


def _rotate_webhook(args: argparse.Namespace) -> None:
    from chargenet.auth.keyring import WebhookRotationTooEarly
    from chargenet.auth.keys import SigningKeys

    async def action(ctx: AppContext) -> str:
        try:
            return SigningKeys(ctx.keys).rotate_webhook_key(ctx.clock.now())
        except WebhookRotationTooEarly as exc:
            raise Conflict(str(exc)) from None

    step = run_with_context(args, action)
    emit(args, {"step": step}, step)


def _show(args: argparse.Namespace) -> None:
    from chargenet.auth.keys import SigningKeys

    async def action(ctx: AppContext) -> list[dict[str, Any]]:
        keys = SigningKeys(ctx.keys)
        keys.ensure(ctx.clock.now())
        keys.refresh()
        return [{"kid": k["kid"], "kty": k["kty"], "alg": k["alg"]} for k in keys.jwks(ctx.clock.now())["keys"]]

    emit_list(args, run_with_context(args, action), ["kid", "kty", "alg"])
