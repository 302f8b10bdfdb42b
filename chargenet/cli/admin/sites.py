from __future__ import annotations

import argparse

from chargenet.app import AppContext
from chargenet.cli.common import add_store_flags, emit, run_with_context, table
from chargenet.services import sites


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("site", help="sites of a company")
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = verbs.add_parser("create", help="create a site")
    create.add_argument("--company", required=True, dest="company_id", metavar="ID")
    create.add_argument("name")
    create.add_argument("--upstream-url", dest="upstream_url", metavar="URL", help="ws(s):// of the operator's CSMS")
    create.add_argument("--upstream-password", dest="upstream_password", metavar="P")
    create.add_argument("--json", action="store_true")
    add_store_flags(create)
    create.set_defaults(_run=_create)

    update = verbs.add_parser("update", help="change a site")
    update.add_argument("site_id", metavar="SITE_ID")
    update.add_argument("--name")
    upstream = update.add_mutually_exclusive_group()
    upstream.add_argument("--upstream-url", dest="upstream_url", metavar="URL")
    upstream.add_argument("--no-upstream", dest="no_upstream", action="store_true")
    update.add_argument("--upstream-password", dest="upstream_password", metavar="P")
    update.add_argument("--json", action="store_true")
    add_store_flags(update)
    update.set_defaults(_run=_update)

    listing = verbs.add_parser("list", help="list sites")
    listing.add_argument("--company", dest="company_id", metavar="ID")
    listing.add_argument("--json", action="store_true")
    add_store_flags(listing)
    listing.set_defaults(_run=_list)

    show = verbs.add_parser("show", help="show one site")
    show.add_argument("site_id", metavar="SITE_ID")
    show.add_argument("--json", action="store_true")
    add_store_flags(show)
    show.set_defaults(_run=_show)


def _create(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> sites.SiteView:
        async with ctx.store.transaction() as session:
            return await sites.create_site(
                session,
                ctx.keys.credential_cipher(),
                company_id=args.company_id,
                name=args.name,
                now=ctx.clock.now(),
                upstream_url=args.upstream_url,
                upstream_password=args.upstream_password,
            )

    site = run_with_context(args, action)
    emit(args, {"id": site.id}, f"created site {site.id} ({site.name})")


def _update(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> sites.SiteView:
        async with ctx.store.transaction() as session:
            return await sites.update_site(
                session,
                ctx.keys.credential_cipher(),
                args.site_id,
                name=args.name,
                upstream_url=args.upstream_url,
                remove_upstream=args.no_upstream,
                upstream_password=args.upstream_password,
            )

    site = run_with_context(args, action)
    emit(args, site.to_json(), f"updated site {site.id}")


def _list(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> list[sites.SiteView]:
        async with ctx.store.transaction() as session:
            return await sites.list_sites(session, company_id=args.company_id)

    items = [s.to_json() for s in run_with_context(args, action)]
    emit(args, {"items": items}, table(items, ["id", "companyId", "name", "upstreamUrl"]))


def _show(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> sites.SiteView:
        async with ctx.store.transaction() as session:
            return await sites.get_site(session, args.site_id)

    site = run_with_context(args, action).to_json()
    emit(args, site, "\n".join(f"{k}: {v}" for k, v in site.items()))
