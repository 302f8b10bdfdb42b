"""`chargenet admin keys ...`: signing key rotation (decisions.md §4)."""

from __future__ import annotations

import argparse

from chargenet.app import AppContext
from chargenet.auth.keyring import PUBLISH_AHEAD, WebhookRotationTooEarly
from chargenet.auth.keys import SigningKeys
from chargenet.cli.common import add_store_flags, emit, run_with_context
from chargenet.errors import Conflict


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("keys", help="token and webhook signing keys")
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name, text, run in (
        (
            "rotate-token-key",
            f"publish a new token signing key now; it signs after {int(PUBLISH_AHEAD.total_seconds())} s",
            _rotate_token,
        ),
        ("rotate-webhook-key", "publish the next webhook key as sign-next, or promote it after 24 h", _rotate_webhook),
        ("show", "list the published signing keys", _show),
    ):
        verb = verbs.add_parser(name, help=text)
        verb.add_argument("--json", action="store_true")
        add_store_flags(verb)
        verb.set_defaults(_run=run)


def _rotate_token(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> dict[str, object]:
        ring = SigningKeys(ctx.keys).rotate_token_key(ctx.clock.now())
        return {
            "keys": [
                {
                    "kid": e.kid,
                    "signsFrom": e.signs_from.isoformat(),
                    "retireAt": e.retire_at.isoformat() if e.retire_at else None,
                }
                for e in ring.entries
            ]
        }

    result = run_with_context(args, action)
    emit(args, result, "\n".join(str(k) for k in result["keys"]))  # type: ignore[attr-defined]


def _rotate_webhook(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> str:
        try:
            return SigningKeys(ctx.keys).rotate_webhook_key(ctx.clock.now())
        except WebhookRotationTooEarly as exc:
            raise Conflict(str(exc)) from None

    step = run_with_context(args, action)
    emit(args, {"step": step}, step)


def _show(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> dict[str, object]:
        keys = SigningKeys(ctx.keys)
        keys.ensure(ctx.clock.now())
        keys.refresh()
        return {
            "keys": [{"kid": k["kid"], "kty": k["kty"], "alg": k["alg"]} for k in keys.jwks(ctx.clock.now())["keys"]]
        }

    result = run_with_context(args, action)
    emit(args, result, "\n".join(str(k) for k in result["keys"]))  # type: ignore[attr-defined]
