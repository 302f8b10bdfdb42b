from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from chargenet.cli.admin import NOUNS, station_certificates, station_commands, station_logs
from chargenet.cli.admin.circuits import PHASE_CHOICES
from chargenet.cli.common import (
    add_verb,
    emit,
    emit_views,
    in_transaction,
    read_every_item,
    read_input_file,
    show,
)
from chargenet.cli.secret_options import add_secret_option
from chargenet.errors import InvalidInput

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from chargenet.context import AppContext


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


VERSIONS_HELP = "the OCPP versions it may connect with: ocpp1.6, ocpp2.0.1 or both (the default)"


def _versions(text: str) -> list[str]:
    from chargenet.domain.generations import parse_versions

    try:
        return list(parse_versions(text))
    except InvalidInput as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("station", help=NOUNS["station"][1])
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = add_verb(verbs, "create", "register a station", _create)
    create.add_argument("--site", required=True, dest="site_id", metavar="ID")
    create.add_argument("station_id", metavar="STATION_ID")
    add_secret_option(create, "--password", metavar="P", help="AuthorizationKey (16-40 characters); none: profile 0")
    add_secret_option(create, "--upstream-password", metavar="P", help="the station's own key to the site's upstream")
    create.add_argument("--charge-points", dest="charge_points", type=_positive, default=1, metavar="N")
    create.add_argument("--connectors", type=_positive, metavar="N", help="connectors per charge point")
    create.add_argument("--ocpp-versions", dest="ocpp_versions", type=_versions, metavar="V[,V]", help=VERSIONS_HELP)

    update = add_verb(
        verbs, "update", "change a station's keys, security profile, OCPP versions or place in the circuits", _update
    )
    update.add_argument("station_id", metavar="STATION_ID")
    update.add_argument(
        "--security-profile",
        dest="security_profile",
        choices=("0", "1", "2", "3"),
        help="0 no password, 1 Basic over ws, 2 Basic over TLS, 3 TLS client certificate (lowering: owners only)",
    )
    update.add_argument(
        "--serial-number",
        dest="serial_number",
        metavar="SERIAL",
        help="the CN its profile 3 certificate names in place of the station id ('': the id again)",
    )
    add_secret_option(update, "--password", metavar="P", help="a new AuthorizationKey (16-40 characters)")
    add_secret_option(update, "--upstream-password", metavar="P", help="the station's own key to the site's upstream")
    update.add_argument("--ocpp-versions", dest="ocpp_versions", type=_versions, metavar="V[,V]", help=VERSIONS_HELP)
    power = update.add_argument_group("site power")
    power.add_argument("--circuit", dest="circuit_id", metavar="ID", help="the circuit of its site it hangs on")
    power.add_argument("--phases", choices=PHASE_CHOICES, help="the phases its connectors use")
    power.add_argument("--priority", type=int, metavar="N", help="higher is served first (0)")

    add_verb(verbs, "list", "list stations", _list).add_argument("--site", dest="site_id", metavar="ID")
    add_verb(verbs, "show", "show one station", _show).add_argument("station_id", metavar="STATION_ID")
    imported = add_verb(
        verbs, "import", "register a site's stations from a CSV or JSON-lines file, all or none", _import
    )
    imported.add_argument("--site", required=True, dest="site_id", metavar="ID")
    imported.add_argument("file", metavar="FILE", help="the file ('-': standard input); columns as the API's fields")
    imported.add_argument(
        "--format", choices=("csv", "jsonl"), help="csv or jsonl (JSON lines); default: from the file name, else csv"
    )
    station_commands.register_verbs(verbs)
    station_certificates.register_verbs(verbs)
    station_logs.register_verbs(verbs)


def _create(args: argparse.Namespace) -> None:
    from chargenet.services import stations
    from chargenet.services.callers import OPERATOR

    station = in_transaction(
        args,
        lambda ctx, session: stations.create_station(
            session,
            OPERATOR,
            ctx.keys.secret_hasher(),
            ctx.keys.credential_cipher(),
            site_id=args.site_id,
            station_id=args.station_id,
            now=ctx.clock.now(),
            password=args.password,
            upstream_password=args.upstream_password,
            charge_points=args.charge_points,
            connectors=args.connectors,
            ocpp_versions=args.ocpp_versions,
        ),
    )
    emit(args, {"id": station.id}, f"created station {station.id}")


def _import(args: argparse.Namespace) -> None:
    from chargenet.services import station_import
    from chargenet.services.callers import OPERATOR

    if args.file == "-" and args.database_url_stdin:
        raise InvalidInput(
            "standard input holds the stations; give the database URL another way", field="--database-url-stdin"
        )
    text = read_input_file(args.file)
    kind = args.format or ("jsonl" if args.file.endswith((".jsonl", ".ndjson", ".json")) else "csv")
    rows = station_import.read_json_lines(text) if kind == "jsonl" else station_import.read_csv(text)
    result = in_transaction(
        args,
        lambda ctx, session: station_import.import_stations(
            session,
            OPERATOR,
            ctx.keys.secret_hasher(),
            ctx.keys.credential_cipher(),
            site_id=args.site_id,
            rows=rows,
            now=ctx.clock.now(),
        ),
    )
    emit(
        args,
        {"siteId": result.site_id, "created": result.created},
        f"created {result.created} stations in site {result.site_id}",
    )


def _update(args: argparse.Namespace) -> None:
    from chargenet.services import circuits, stations
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    async def update(ctx: AppContext, session: AsyncSession) -> dict[str, Any]:
        placement = None
        if (args.circuit_id, args.phases, args.priority) != (None, None, None):
            placement = await circuits.place_station(
                session,
                OPERATOR,
                args.station_id,
                now=ctx.clock.now(),
                circuit_id=args.circuit_id,
                phases=args.phases,
                priority=args.priority,
            )
        station = await stations.update_station(
            session,
            OPERATOR,
            ctx.keys.secret_hasher(),
            ctx.keys.credential_cipher(),
            args.station_id,
            now=ctx.clock.now(),
            password=args.password,
            upstream_password=args.upstream_password,
            ocpp_versions=args.ocpp_versions,
            security_profile=args.security_profile,
            serial_number=args.serial_number,
        )
        shown = rendered(station)
        if placement is not None:
            shown["circuit"] = rendered(placement)
        return shown

    shown = in_transaction(args, update)
    emit(args, shown, f"updated station {shown['id']}")


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import stations
    from chargenet.services.callers import OPERATOR

    items = read_every_item(
        args,
        lambda s, page: stations.list_stations(s, OPERATOR, page, site_id=args.site_id),
    )
    emit_views(args, items, ["id", "siteId", "chargePointIds", "securityProfile"])


def _show(args: argparse.Namespace) -> None:
    from chargenet.services import stations
    from chargenet.services.callers import OPERATOR

    show(args, lambda s: stations.get_station(s, OPERATOR, args.station_id))
