from __future__ import annotations

import argparse

from chargenet.app import AppContext
from chargenet.cli.common import add_store_flags, emit, run_with_context, table
from chargenet.services import companies


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("company", help="companies, the top of the tenant tree")
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = verbs.add_parser("create", help="create a company")
    create.add_argument("name")
    create.add_argument("--json", action="store_true")
    add_store_flags(create)
    create.set_defaults(_run=_create)

    listing = verbs.add_parser("list", help="list companies")
    listing.add_argument("--json", action="store_true")
    add_store_flags(listing)
    listing.set_defaults(_run=_list)

    show = verbs.add_parser("show", help="show one company")
    show.add_argument("company_id", metavar="COMPANY_ID")
    show.add_argument("--json", action="store_true")
    add_store_flags(show)
    show.set_defaults(_run=_show)


def _create(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> companies.CompanyView:
        async with ctx.store.transaction() as session:
            return await companies.create_company(session, name=args.name, now=ctx.clock.now())

    company = run_with_context(args, action)
    emit(args, {"id": company.id}, f"created company {company.id} ({company.name})")


def _list(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> list[companies.CompanyView]:
        async with ctx.store.transaction() as session:
            return await companies.list_companies(session)

    items = [c.to_json() for c in run_with_context(args, action)]
    emit(args, {"items": items}, table(items, ["id", "name", "createdAt"]))


def _show(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> companies.CompanyView:
        async with ctx.store.transaction() as session:
            return await companies.get_company(session, args.company_id)

    company = run_with_context(args, action).to_json()
    emit(args, company, "\n".join(f"{k}: {v}" for k, v in company.items()))
