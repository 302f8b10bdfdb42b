"""`chargenet admin app ...`: client applications (decisions.md §1)."""

from __future__ import annotations

import argparse

from chargenet.app import AppContext
from chargenet.cli.common import add_store_flags, emit, run_with_context, table
from chargenet.services import applications


def _verb(verbs: argparse._SubParsersAction[argparse.ArgumentParser], name: str, text: str) -> argparse.ArgumentParser:
    parser = verbs.add_parser(name, help=text)
    parser.add_argument("--json", action="store_true")
    add_store_flags(parser)
    return parser


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("app", help="client applications that get tokens and call the API")
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = _verb(verbs, "create", "create an application; its secret is shown once")
    create.add_argument("--company", required=True, dest="company_id", metavar="ID")
    create.add_argument("name")
    create.set_defaults(_run=_create)

    for name, text, run in (
        ("disable", "refuse the application's tokens and grants (within 5 s)", _disable),
        ("enable", "allow a disabled application again", _enable),
        ("delete", "delete the application; its tokens stop working within 5 s", _delete),
        ("rotate-secret", "issue a new secret; the old one and its tokens stop working", _rotate),
        ("show", "show one application", _show),
    ):
        verb = _verb(verbs, name, text)
        verb.add_argument("client_id", metavar="CLIENT_ID")
        verb.set_defaults(_run=run)

    listing = _verb(verbs, "list", "list applications")
    listing.add_argument("--company", dest="company_id", metavar="ID")
    listing.set_defaults(_run=_list)


def _create(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> applications.Credentials:
        async with ctx.store.transaction() as session:
            return await applications.create_application(
                session, ctx.keys.secret_hasher(), company_id=args.company_id, name=args.name, now=ctx.clock.now()
            )

    created = run_with_context(args, action)
    emit(
        args,
        created.to_json(),
        f"created application {created.client_id}\nclient_secret: {created.client_secret}\n"
        "(the secret is shown only now; store it safely)",
    )


def _set_enabled(args: argparse.Namespace, enabled: bool) -> None:
    async def action(ctx: AppContext) -> applications.ApplicationView:
        async with ctx.store.transaction() as session:
            return await applications.set_enabled(session, args.client_id, enabled=enabled, now=ctx.clock.now())

    view = run_with_context(args, action)
    emit(args, view.to_json(), f"application {view.client_id} {'enabled' if enabled else 'disabled'}")


def _disable(args: argparse.Namespace) -> None:
    _set_enabled(args, False)


def _enable(args: argparse.Namespace) -> None:
    _set_enabled(args, True)


def _delete(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> None:
        async with ctx.store.transaction() as session:
            await applications.delete_application(session, args.client_id)

    run_with_context(args, action)
    emit(args, {"client_id": args.client_id, "deleted": True}, f"application {args.client_id} deleted")


def _rotate(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> applications.Credentials:
        async with ctx.store.transaction() as session:
            return await applications.rotate_secret(
                session, ctx.keys.secret_hasher(), args.client_id, now=ctx.clock.now()
            )

    rotated = run_with_context(args, action)
    emit(args, rotated.to_json(), f"new client_secret for {rotated.client_id}: {rotated.client_secret}")


def _show(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> applications.ApplicationView:
        async with ctx.store.transaction() as session:
            return await applications.get_application(session, args.client_id)

    view = run_with_context(args, action).to_json()
    emit(args, view, "\n".join(f"{k}: {v}" for k, v in view.items()))


def _list(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> list[applications.ApplicationView]:
        async with ctx.store.transaction() as session:
            return await applications.list_applications(session, company_id=args.company_id)

    items = [a.to_json() for a in run_with_context(args, action)]
    emit(args, {"items": items}, table(items, ["client_id", "companyId", "name", "enabled"]))
