from __future__ import annotations

import argparse

from chargenet.cli.admin import NOUNS, station_certificates, upstream_tls
from chargenet.cli.common import add_verb, emit, emit_views, in_transaction, read_every_item, show
from chargenet.cli.secret_options import add_secret_option
from chargenet.errors import InvalidInput

UPSTREAM_VERSIONS_HELP = (
    "the OCPP versions the upstream takes: ocpp1.6 (the default), ocpp2.0.1 or both; a station speaking another"
    " is answered by chargenet as its central system"
)


def _upstream_versions(text: str) -> list[str]:
    from chargenet.domain.generations import parse_upstream_versions

    try:
        return list(parse_upstream_versions(text))
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("site", help=NOUNS["site"][1])
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = add_verb(verbs, "create", "create a site", _create)
    create.add_argument("--company", required=True, dest="company_id", metavar="ID")
    create.add_argument("name")
    create.add_argument("--upstream-url", dest="upstream_url", metavar="URL", help="ws(s):// of the operator's CSMS")
    add_secret_option(create, "--upstream-password", metavar="P", help="the stations' key to the upstream")
    create.add_argument(
        "--upstream-ocpp-versions",
        dest="upstream_ocpp_versions",
        type=_upstream_versions,
        metavar="V[,V]",
        help=UPSTREAM_VERSIONS_HELP,
    )

    station_certificates.register_site_verbs(verbs)
    update = add_verb(verbs, "update", "change a site", _update)
    update.add_argument("site_id", metavar="SITE_ID")
    update.add_argument("--name")
    upstream = update.add_mutually_exclusive_group()
    upstream.add_argument("--upstream-url", dest="upstream_url", metavar="URL")
    upstream.add_argument("--no-upstream", dest="no_upstream", action="store_true")
    add_secret_option(update, "--upstream-password", metavar="P", help="the stations' key to the upstream")
    update.add_argument(
        "--upstream-ocpp-versions",
        dest="upstream_ocpp_versions",
        type=_upstream_versions,
        metavar="V[,V]",
        help=UPSTREAM_VERSIONS_HELP,
    )

    add_verb(verbs, "list", "list sites", _list).add_argument("--company", dest="company_id", metavar="ID")
    add_verb(verbs, "show", "show one site", _show).add_argument("site_id", metavar="SITE_ID")
    add_verb(verbs, "delete", "delete a site that holds nothing", _delete).add_argument("site_id", metavar="SITE_ID")
    upstream_tls.register(verbs)


def _create(args: argparse.Namespace) -> None:
    from chargenet.services import sites
    from chargenet.services.callers import OPERATOR

    site = in_transaction(
        args,
        lambda ctx, session: sites.create_site(
            session,
            OPERATOR,
            ctx.keys.credential_cipher(),
            company_id=args.company_id,
            name=args.name,
            now=ctx.clock.now(),
            upstream_url=args.upstream_url,
            upstream_password=args.upstream_password,
            upstream_ocpp_versions=args.upstream_ocpp_versions,
        ),
    )
    emit(args, {"id": site.id}, f"created site {site.id} ({site.name})")


def _update(args: argparse.Namespace) -> None:
    from chargenet.services import sites
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    site = in_transaction(
        args,
        lambda ctx, session: sites.update_site(
            session,
            OPERATOR,
            ctx.keys.credential_cipher(),
            args.site_id,
            now=ctx.clock.now(),
            name=args.name,
            upstream_url=args.upstream_url,
            remove_upstream=args.no_upstream,
            upstream_password=args.upstream_password,
            upstream_ocpp_versions=args.upstream_ocpp_versions,
        ),
    )
    emit(args, rendered(site), f"updated site {site.id}")


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import sites
    from chargenet.services.callers import OPERATOR

    items = read_every_item(
        args,
        lambda s, page: sites.list_sites(s, OPERATOR, page, company_id=args.company_id),
    )
    emit_views(args, items, ["id", "companyId", "name", "upstreamUrl"])


def _show(args: argparse.Namespace) -> None:
    from chargenet.services import sites
    from chargenet.services.callers import OPERATOR

    show(args, lambda s: sites.get_site(s, OPERATOR, args.site_id))


def _delete(args: argparse.Namespace) -> None:
    from chargenet.services import sites
    from chargenet.services.callers import OPERATOR

    in_transaction(args, lambda ctx, session: sites.delete_site(session, OPERATOR, args.site_id, now=ctx.clock.now()))
    emit(args, {"id": args.site_id, "deleted": True}, f"deleted site {args.site_id}")
