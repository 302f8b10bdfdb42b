"""`chargenet admin group ...`: groups granting scopes over a company or a site (decisions.md §1)."""

from __future__ import annotations

import argparse

from chargenet.cli.admin import NOUNS
from chargenet.cli.common import add_verb, emit, emit_view, emit_views, in_transaction, read_every_item, show
from chargenet.domain.scopes import Scope


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("group", help=NOUNS["group"][1])
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)
    create = add_verb(verbs, "create", "create a group", _create)
    create.add_argument("--company", required=True, dest="company_id", metavar="ID")
    create.add_argument("--site", dest="site_id", metavar="ID", help="anchor at this site instead of the company")
    create.add_argument(
        "--scope", action="append", required=True, dest="scopes", metavar="S", help=", ".join(s.value for s in Scope)
    )
    create.add_argument("name")
    for name, text, run in (
        ("add-app", "put an application in the group", _add_app),
        ("remove-app", "take an application out of the group (effective within 5 s)", _remove_app),
    ):
        verb = add_verb(verbs, name, text, run)
        verb.add_argument("group_id", metavar="GROUP_ID")
        verb.add_argument("client_id", metavar="CLIENT_ID")
    update = add_verb(verbs, "update", "rename a group, change its scopes or move its anchor", _update)
    update.add_argument("group_id", metavar="GROUP_ID")
    update.add_argument("--name")
    update.add_argument("--scope", action="append", dest="scopes", metavar="S", help="the scopes (replaces them all)")
    anchor = update.add_mutually_exclusive_group()
    anchor.add_argument("--site", dest="site_id", metavar="ID", help="anchor at this site of the group's company")
    anchor.add_argument("--company-level", dest="company_level", action="store_true", help="anchor at the company")
    for name, text, run in (("show", "show one group", _show), ("delete", "delete a group", _delete)):
        add_verb(verbs, name, text, run).add_argument("group_id", metavar="GROUP_ID")
    listing = add_verb(verbs, "list", "list groups", _list)
    listing.add_argument("--company", dest="company_id", metavar="ID")


def _create(args: argparse.Namespace) -> None:
    from chargenet.services import groups
    from chargenet.services.callers import OPERATOR

    group = in_transaction(
        args,
        lambda ctx, s: groups.create_group(
            s,
            OPERATOR,
            company_id=args.company_id,
            site_id=args.site_id,
            name=args.name,
            scopes=args.scopes,
            now=ctx.clock.now(),
        ),
    )
    emit(args, {"id": group.id}, f"created group {group.id} ({group.name})")


def _update(args: argparse.Namespace) -> None:
    from chargenet.services import groups
    from chargenet.services.callers import OPERATOR

    anchor: str | groups.Keep | None = groups.KEEP
    if args.site_id:
        anchor = args.site_id
    elif args.company_level:
        anchor = None
    group = in_transaction(
        args,
        lambda ctx, s: groups.update_group(
            s, OPERATOR, args.group_id, now=ctx.clock.now(), name=args.name, scopes=args.scopes, site_id=anchor
        ),
    )
    emit_view(args, group)


def _add_app(args: argparse.Namespace) -> None:
    from chargenet.services import groups
    from chargenet.services.callers import OPERATOR

    in_transaction(args, lambda ctx, s: groups.add_app(s, OPERATOR, args.group_id, args.client_id, now=ctx.clock.now()))
    emit(args, {"groupId": args.group_id, "client_id": args.client_id}, f"{args.client_id} added to {args.group_id}")


def _remove_app(args: argparse.Namespace) -> None:
    from chargenet.services import groups
    from chargenet.services.callers import OPERATOR

    in_transaction(
        args, lambda ctx, s: groups.remove_app(s, OPERATOR, args.group_id, args.client_id, now=ctx.clock.now())
    )
    emit(
        args, {"groupId": args.group_id, "client_id": args.client_id}, f"{args.client_id} removed from {args.group_id}"
    )


def _show(args: argparse.Namespace) -> None:
    from chargenet.services import groups
    from chargenet.services.callers import OPERATOR

    show(args, lambda s: groups.get_group(s, OPERATOR, args.group_id))


def _delete(args: argparse.Namespace) -> None:
    from chargenet.services import groups
    from chargenet.services.callers import OPERATOR

    in_transaction(args, lambda ctx, s: groups.delete_group(s, OPERATOR, args.group_id, now=ctx.clock.now()))
    emit(args, {"id": args.group_id, "deleted": True}, f"group {args.group_id} deleted")


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import groups
    from chargenet.services.callers import OPERATOR

    items = read_every_item(args, lambda s, page: groups.list_groups(s, OPERATOR, page, company_id=args.company_id))
    emit_views(args, items, ["id", "companyId", "siteId", "name", "scopes"])
