from __future__ import annotations

import argparse

from chargenet.app import AppContext
from chargenet.cli.common import add_store_flags, emit, run_with_context, table
from chargenet.services import stations


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("station", help="OCPP stations of a site")
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = verbs.add_parser("create", help="register a station")
    create.add_argument("--site", required=True, dest="site_id", metavar="ID")
    create.add_argument("station_id", metavar="STATION_ID")
    create.add_argument("--password", metavar="P", help="AuthorizationKey (16-40 characters); none: profile 0")
    create.add_argument("--upstream-password", dest="upstream_password", metavar="P")
    create.add_argument("--charge-points", dest="charge_points", type=_positive, default=1, metavar="N")
    create.add_argument("--connectors", type=_positive, metavar="N", help="connectors per charge point")
    create.add_argument("--json", action="store_true")
    add_store_flags(create)
    create.set_defaults(_run=_create)

    update = verbs.add_parser("update", help="change a station's keys")
    update.add_argument("station_id", metavar="STATION_ID")
    update.add_argument("--password", metavar="P")
    update.add_argument("--upstream-password", dest="upstream_password", metavar="P")
    update.add_argument("--json", action="store_true")
    add_store_flags(update)
    update.set_defaults(_run=_update)

    listing = verbs.add_parser("list", help="list stations")
    listing.add_argument("--site", dest="site_id", metavar="ID")
    listing.add_argument("--json", action="store_true")
    add_store_flags(listing)
    listing.set_defaults(_run=_list)

    show = verbs.add_parser("show", help="show one station")
    show.add_argument("station_id", metavar="STATION_ID")
    show.add_argument("--json", action="store_true")
    add_store_flags(show)
    show.set_defaults(_run=_show)


def _create(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> stations.StationView:
        async with ctx.store.transaction() as session:
            return await stations.create_station(
                session,
                ctx.keys.secret_hasher(),
                ctx.keys.credential_cipher(),
                site_id=args.site_id,
                station_id=args.station_id,
                now=ctx.clock.now(),
                password=args.password,
                upstream_password=args.upstream_password,
                charge_points=args.charge_points,
                connectors=args.connectors,
            )

    station = run_with_context(args, action)
    emit(args, {"id": station.id}, f"created station {station.id}")


def _update(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> stations.StationView:
        async with ctx.store.transaction() as session:
            return await stations.update_station(
                session,
                ctx.keys.secret_hasher(),
                ctx.keys.credential_cipher(),
                args.station_id,
                password=args.password,
                upstream_password=args.upstream_password,
            )

    station = run_with_context(args, action)
    emit(args, station.to_json(), f"updated station {station.id}")


def _list(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> list[stations.StationView]:
        async with ctx.store.transaction() as session:
            return await stations.list_stations(session, site_id=args.site_id)

    items = [s.to_json() for s in run_with_context(args, action)]
    emit(args, {"items": items}, table(items, ["id", "siteId", "chargePointIds", "securityProfile"]))


def _show(args: argparse.Namespace) -> None:
    async def action(ctx: AppContext) -> stations.StationView:
        async with ctx.store.transaction() as session:
            return await stations.get_station(session, args.station_id)

    station = run_with_context(args, action).to_json()
    emit(args, station, "\n".join(f"{k}: {v}" for k, v in station.items()))
