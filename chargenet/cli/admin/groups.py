"""`chargenet admin group ...`: groups granting scopes over a company or a site (decisions.md §1)."""

from __future__ import annotations

import argparse

from chargenet.app import AppContext
from chargenet.cli.common import add_store_flags, emit, run_with_context, table
from chargenet.domain.scopes import Scope
from chargenet.services import groups


def _verb(verbs: argparse._SubParsersAction[argparse.ArgumentParser], name: str, text: str) -> argparse.ArgumentParser:
    parser = verbs.add_parser(name, help=text)
    parser.add_argument("--json", action="store_true")
    add_store_flags(parser)
    return parser


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("group", help="groups: scopes over a company or a site, for the applications in them")
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = _verb(verbs, "create", "create a group")
    create.add_argument("--company", required=True, dest="company_id", metavar="ID")
    create.add_argument("--site", dest="site_id", metavar="ID", help="anchor at this site instead of the company")
    create.add_argument(
        "--scope", action="append", required=True, dest="scopes", metavar="S", help=", ".join(s.value for s in Scope)
    )
    create.add_argument("name")
    create.set_defaults(_run=_create)

    for name, text, run in (
        ("add-app", "put an application in the group", _add_app),
        ("remove-app", "take an application out of the group (effective within 5 s)", _remove_app),
    ):
        verb = _verb(verbs, name, text)
        verb.add_argument("group_id", metavar="GROUP_ID")
        verb.add_argument("client_id", metavar="CLIENT_ID")
        verb.set_defaults(_run=run)

    for name, text, run in (("show", "show one group", _show), ("delete", "delete a group", _delete)):
        verb = _verb(verbs, name, text)
        verb.add_argument("group_id", metavar="GROUP_ID")
        verb.set_defaults(_run=run)

    listing = _verb(verbs, "list", "list groups")
    listing.add_argument("--company", dest="company_id", metavar="ID")
    listing.set_defaults(_run=_list)


def _create(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> groups.GroupView:
        async with ctx.store.transaction() as session:
            return await groups.create_group(
                session,
                company_id=args.company_id,
                site_id=args.site_id,
                name=args.name,
                scopes=args.scopes,
                now=ctx.clock.now(),
            )

    group = run_with_context(args, action)
    emit(args, {"id": group.id}, f"created group {group.id} ({group.name})")


def _add_app(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> None:
        async with ctx.store.transaction() as session:
            await groups.add_app(session, args.group_id, args.client_id)

    run_with_context(args, action)
    emit(args, {"groupId": args.group_id, "client_id": args.client_id}, f"{args.client_id} added to {args.group_id}")


def _remove_app(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> None:
        async with ctx.store.transaction() as session:
            await groups.remove_app(session, args.group_id, args.client_id)

    run_with_context(args, action)
    emit(
        args, {"groupId": args.group_id, "client_id": args.client_id}, f"{args.client_id} removed from {args.group_id}"
    )


def _show(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> groups.GroupView:
        async with ctx.store.transaction() as session:
            return await groups.get_group(session, args.group_id)

    view = run_with_context(args, action).to_json()
    emit(args, view, "\n".join(f"{k}: {v}" for k, v in view.items()))


def _delete(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> None:
        async with ctx.store.transaction() as session:
            await groups.delete_group(session, args.group_id)

    run_with_context(args, action)
    emit(args, {"id": args.group_id, "deleted": True}, f"group {args.group_id} deleted")


def _list(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> list[groups.GroupView]:
        async with ctx.store.transaction() as session:
            return await groups.list_groups(session, company_id=args.company_id)

    items = [g.to_json() for g in run_with_context(args, action)]
    emit(args, {"items": items}, table(items, ["id", "companyId", "siteId", "name", "scopes"]))
