"""`chargenet admin app ...`: client applications (decisions.md §1)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from chargenet.cli.admin import NOUNS
from chargenet.cli.common import add_verb, emit, emit_views, in_transaction, read_every_item, run_with_context, show

if TYPE_CHECKING:
    from chargenet.context import AppContext
    from chargenet.services.applications import ApplicationView


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("app", help=NOUNS["app"][1])
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)
    create = add_verb(verbs, "create", "create an application; its secret is shown once", _create)
    create.add_argument("--company", required=True, dest="company_id", metavar="ID")
    create.add_argument("name")
    for name, text, run in (
        ("disable", "refuse the application's tokens and grants (within 5 s)", _disable),
        ("enable", "allow a disabled application again", _enable),
        ("delete", "delete the application; its tokens stop working within 5 s", _delete),
        ("rotate-secret", "issue a new secret; the old one and its tokens stop working", _rotate),
        ("show", "show one application", _show),
    ):
        add_verb(verbs, name, text, run).add_argument("client_id", metavar="CLIENT_ID")
    keys = add_verb(verbs, "set-keys", "register the public keys of private_key_jwt (RFC 7523)", _set_keys)
    keys.add_argument("client_id", metavar="CLIENT_ID")
    source = keys.add_mutually_exclusive_group(required=True)
    source.add_argument("--jwks-file", type=Path, metavar="FILE", help="a JWKS document of public keys")
    source.add_argument("--jwks-url", metavar="URL", help="an http(s) URL serving the JWKS document")
    source.add_argument("--none", action="store_true", help="remove the keys, and with them private_key_jwt")
    limit = add_verb(verbs, "set-rate-limit", "set the API requests a minute the application may make", _set_limit)
    limit.add_argument("client_id", metavar="CLIENT_ID")
    amount = limit.add_mutually_exclusive_group(required=True)
    amount.add_argument("--rate-limit", type=int, metavar="N", help="requests a minute")
    amount.add_argument("--default", action="store_true", help="back to the default limit")
    listing = add_verb(verbs, "list", "list applications", _list)
    listing.add_argument("--company", dest="company_id", metavar="ID")


def _create(args: argparse.Namespace) -> None:
    from chargenet.services import applications
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    created = in_transaction(
        args,
        lambda ctx, s: applications.create_application(
            s, OPERATOR, ctx.keys.secret_hasher(), company_id=args.company_id, name=args.name, now=ctx.clock.now()
        ),
    )
    emit(
        args,
        rendered(created),
        f"created application {created.client_id}\nclient_secret: {created.client_secret}\n"
        "(the secret is shown only now; store it safely)",
    )


def _set_enabled(args: argparse.Namespace, enabled: bool) -> None:
    from chargenet.services import applications
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    view = in_transaction(
        args, lambda ctx, s: applications.set_enabled(s, OPERATOR, args.client_id, enabled=enabled, now=ctx.clock.now())
    )
    emit(args, rendered(view), f"application {view.client_id} {'enabled' if enabled else 'disabled'}")


def _disable(args: argparse.Namespace) -> None:
    _set_enabled(args, False)


def _enable(args: argparse.Namespace) -> None:
    _set_enabled(args, True)


def _delete(args: argparse.Namespace) -> None:
    from chargenet.services import applications
    from chargenet.services.callers import OPERATOR

    in_transaction(
        args, lambda ctx, s: applications.delete_application(s, OPERATOR, args.client_id, now=ctx.clock.now())
    )
    emit(args, {"client_id": args.client_id, "deleted": True}, f"application {args.client_id} deleted")


def _rotate(args: argparse.Namespace) -> None:
    from chargenet.services import applications
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    rotated = in_transaction(
        args,
        lambda ctx, s: applications.rotate_secret(
            s, OPERATOR, ctx.keys.secret_hasher(), args.client_id, now=ctx.clock.now()
        ),
    )
    emit(args, rendered(rotated), f"new client_secret for {rotated.client_id}: {rotated.client_secret}")


def _set_keys(args: argparse.Namespace) -> None:
    from chargenet.errors import InvalidInput
    from chargenet.services import applications
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    jwks: str | None = None
    if args.jwks_file is not None:
        try:
            jwks = args.jwks_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"cannot read {args.jwks_file}: {exc}", field="jwks-file") from None

    async def action(ctx: AppContext) -> ApplicationView:
        return await applications.set_public_keys(
            ctx.store.transaction,
            OPERATOR,
            args.client_id,
            jwks=jwks,
            jwks_url=args.jwks_url,
            now=ctx.clock.now(),
            allow_private=ctx.settings.webhook_allow_private,
        )

    view = run_with_context(args, action)
    source = "a key set" if view.jwks else f"the key set at {view.jwks_url}" if view.jwks_url else "no keys"
    emit(args, rendered(view), f"application {view.client_id} authenticates with {source}")


def _set_limit(args: argparse.Namespace) -> None:
    from chargenet.domain.rate_limits import DEFAULT_REQUESTS
    from chargenet.services import applications
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    view = in_transaction(
        args,
        lambda ctx, s: applications.set_rate_limit(
            s, OPERATOR, args.client_id, requests=None if args.default else args.rate_limit, now=ctx.clock.now()
        ),
    )
    limit = f"the default ({DEFAULT_REQUESTS})" if view.rate_limit is None else str(view.rate_limit)
    emit(args, rendered(view), f"application {view.client_id} may make {limit} API requests a minute")


def _show(args: argparse.Namespace) -> None:
    from chargenet.services import applications
    from chargenet.services.callers import OPERATOR

    show(args, lambda s: applications.get_application(s, OPERATOR, args.client_id))


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import applications
    from chargenet.services.callers import OPERATOR

    items = read_every_item(
        args,
        lambda s, page: applications.list_applications(s, OPERATOR, page, company_id=args.company_id),
    )
    emit_views(args, items, ["client_id", "companyId", "name", "enabled"])
