"""`chargenet partner receive`: run the reference webhook receiver (prints or stores each verified event)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chargenet_partner.webhooks import VerifiedWebhook


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    partner = subparsers.add_parser("partner", help="tools for partners of a chargenet service")
    verbs = partner.add_subparsers(dest="verb", metavar="VERB", required=True)
    receive = verbs.add_parser("receive", help="receive, verify and print webhook events")
    source = receive.add_mutually_exclusive_group(required=True)
    source.add_argument("--chargenet-url", dest="chargenet_url", help="the service's public URL (JWKS under /auth)")
    source.add_argument("--jwks-url", dest="jwks_url", help="the JWKS URL itself")
    receive.add_argument("--host", default="127.0.0.1")
    receive.add_argument("--port", type=int, default=9000)
    receive.add_argument("--path", default="/", help="the path the webhook URL points at")
    receive.add_argument("--out", type=Path, help="append events as JSON lines to this file instead of printing")
    receive.add_argument("--max-age", dest="max_age", type=float, default=300.0, help="oldest signature, seconds")
    receive.add_argument("--allow-legacy", dest="allow_legacy", action="store_true", help="accept the legacy format")
    receive.set_defaults(_run=_receive)


def _receive(args: argparse.Namespace) -> None:
    # Imported here: the partner SDK is its own distribution, and the rest of the CLI works without it.
    import uvicorn
    from chargenet_partner.webhooks import AsyncWebhookVerifier

    from chargenet.simulators.partner import create_receiver, json_line

    jwks_url = args.jwks_url or f"{args.chargenet_url.rstrip('/')}/auth/.well-known/jwks.json"
    verifier = AsyncWebhookVerifier(jwks_url, max_age=args.max_age, allow_legacy=args.allow_legacy)

    def sink(verified: VerifiedWebhook) -> None:
        line = json_line(verified)
        if args.out is None:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            return
        with args.out.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    app = create_receiver(verifier, sink, args.path)
    sys.stderr.write(f"receiving webhooks on http://{args.host}:{args.port}{args.path} (keys from {jwks_url})\n")
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
