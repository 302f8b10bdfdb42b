"""`chargenet admin company ...`: companies, the top of the tenant tree."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from chargenet.cli.admin import NOUNS
from chargenet.cli.common import add_verb, emit, emit_views, in_transaction, read_every_item, show
from chargenet.domain.local_time import DEFAULT_ZONE
from chargenet.errors import InvalidInput

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from chargenet.context import AppContext
    from chargenet.services.companies import CompanyView


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("company", help=NOUNS["company"][1])
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)
    create = add_verb(verbs, "create", "create a company", _create)
    create.add_argument("name")
    create.add_argument(
        "--time-zone",
        metavar="ZONE",
        default=DEFAULT_ZONE,
        help=f"the IANA zone its console shows times and days in (default: {DEFAULT_ZONE})",
    )
    add_verb(verbs, "list", "list companies", _list)
    add_verb(verbs, "show", "show one company", _show).add_argument("company_id", metavar="COMPANY_ID")
    update = add_verb(verbs, "update", "change a company's time zone or organisation name", _update)
    update.add_argument("company_id", metavar="COMPANY_ID")
    update.add_argument("--time-zone", metavar="ZONE", help="an IANA zone name, e.g. Europe/Brussels")
    update.add_argument(
        "--organisation-name",
        dest="organisation_name",
        metavar="O",
        help="the O its profile 3 stations' certificates must name ('': not checked)",
    )


def _create(args: argparse.Namespace) -> None:
    from chargenet.services import companies
    from chargenet.services.callers import OPERATOR

    company = in_transaction(
        args,
        lambda ctx, s: companies.create_company(
            s, OPERATOR, name=args.name, now=ctx.clock.now(), time_zone=args.time_zone
        ),
    )
    emit(args, {"id": company.id}, f"created company {company.id} ({company.name}, {company.time_zone})")


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import companies
    from chargenet.services.callers import OPERATOR

    items = read_every_item(args, lambda s, page: companies.list_companies(s, OPERATOR, page))
    emit_views(args, items, ["id", "name", "timeZone", "createdAt"])


def _show(args: argparse.Namespace) -> None:
    from chargenet.services import companies
    from chargenet.services.callers import OPERATOR

    show(args, lambda s: companies.get_company(s, OPERATOR, args.company_id))


def _update(args: argparse.Namespace) -> None:
    from chargenet.services import companies
    from chargenet.services.callers import OPERATOR

    if args.time_zone is None and args.organisation_name is None:
        raise InvalidInput("give --time-zone or --organisation-name", field="--time-zone")

    async def change(ctx: AppContext, session: AsyncSession) -> CompanyView:
        company = None
        if args.time_zone is not None:
            company = await companies.set_time_zone(
                session, OPERATOR, args.company_id, time_zone=args.time_zone, now=ctx.clock.now()
            )
        if args.organisation_name is not None:
            company = await companies.set_organisation_name(
                session, OPERATOR, args.company_id, organisation_name=args.organisation_name, now=ctx.clock.now()
            )
        assert company is not None
        return company

    company = in_transaction(args, change)
    data = {"id": company.id, "timeZone": company.time_zone, "organisationName": company.organisation_name}
    emit(args, data, f"company {company.id} reads in {company.time_zone}, organisation {company.organisation_name}")
