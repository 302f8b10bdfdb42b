"""`chargenet admin meter create|list|show|update|enable|disable|delete` (decisions.md §1 and §4)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from chargenet.cli.admin import NOUNS
from chargenet.cli.common import add_store_flags, emit, read_every_item, run_with_context, table

if TYPE_CHECKING:
    from chargenet.context import AppContext
    from chargenet.services.grid_meters import GridMeterView
    from chargenet.services.meters import MeterView

# The profiles' names (`meters.profiles.PROFILES`, which the use case checks), written out so that building the
# parser imports no use case; a test holds the two equal.
PROFILE_NAMES = ["sdm630", "sdm72v2", "sdm72v1", "sdm120", "abb-b23", "abb-b24", "em24", "em340"]
ROLES = ["connector", "grid"]


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _add_thresholds(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("detection (decisions.md §4 defaults)")
    group.add_argument("--id-tag", dest="id_tag", metavar="TAG", help="idTag of the sessions (default METER-{id})")
    group.add_argument("--poll-interval", dest="poll_interval", type=_number, metavar="S", help="seconds (5)")
    group.add_argument("--start-current", dest="start_current", type=_number, metavar="A", help="amperes (3)")
    group.add_argument("--stop-current", dest="stop_current", type=_number, metavar="A", help="amperes (1)")
    group.add_argument("--start-power", dest="start_power", type=_number, metavar="W", help="watts, no currents (500)")
    group.add_argument("--stop-power", dest="stop_power", type=_number, metavar="W", help="watts (200)")
    group.add_argument("--stop-grace", dest="stop_grace", type=_number, metavar="S", help="seconds (180)")
    group.add_argument("--outage-close", dest="outage_close", type=_number, metavar="S", help="seconds (900)")


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("meter", help=NOUNS["meter"][1])
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = verbs.add_parser(
        "create", help="add a meter in front of a charge point's connector, or (--role grid) on a circuit"
    )
    create.add_argument(
        "--role", choices=ROLES, default="connector", help="connector (the default) or grid: no station, no sessions"
    )
    create.add_argument("--site", required=True, dest="site_id", metavar="ID")
    create.add_argument("--station", dest="station_id", metavar="STATION_ID", help="needed for a connector's meter")
    create.add_argument("--charge-point", dest="charge_point_id", metavar="CP", help="default: the station's first")
    create.add_argument("--connector", dest="connector_id", type=_whole, metavar="N", help="default 1")
    create.add_argument("--profile", required=True, choices=PROFILE_NAMES)
    create.add_argument("--tcp", metavar="HOST:PORT", help="Modbus TCP endpoint (port 502 when omitted)")
    create.add_argument("--rtu", metavar="DEVICE", help="RS-485 serial device, e.g. /dev/ttyUSB0")
    create.add_argument("--baud", type=_whole, metavar="N", help="RTU baud rate (9600)")
    create.add_argument("--parity", metavar="N|E|O", help="RTU parity (N)")
    create.add_argument("--stopbits", type=_whole, metavar="1|2", help="RTU stop bits (1)")
    create.add_argument("--unit", required=True, dest="unit_id", type=_whole, metavar="N", help="unit id 1-247")
    _add_thresholds(create)
    create.add_argument("--json", action="store_true")
    add_store_flags(create)
    create.set_defaults(_run=_create)

    update = verbs.add_parser("update", help="change a meter's idTag, poll interval or thresholds")
    update.add_argument("meter_id", metavar="METER_ID")
    _add_thresholds(update)
    update.add_argument("--json", action="store_true")
    add_store_flags(update)
    update.set_defaults(_run=_update)

    for verb, enabled in (("enable", True), ("disable", False)):
        toggle = verbs.add_parser(verb, help=f"{verb} polling of a meter")
        toggle.add_argument("meter_id", metavar="METER_ID")
        toggle.add_argument("--json", action="store_true")
        add_store_flags(toggle)
        toggle.set_defaults(_run=_update, enabled=enabled)

    delete = verbs.add_parser("delete", help="remove a meter (its open session, if any, is closed)")
    delete.add_argument("meter_id", metavar="METER_ID")
    delete.add_argument("--role", choices=ROLES, default="connector", help="grid: a grid meter")
    delete.add_argument("--json", action="store_true")
    add_store_flags(delete)
    delete.set_defaults(_run=_delete)

    listing = verbs.add_parser("list", help="list meters")
    listing.add_argument("--site", dest="site_id", metavar="ID")
    listing.add_argument("--role", choices=ROLES, default="connector", help="list connectors' or grid meters")
    listing.add_argument("--json", action="store_true")
    add_store_flags(listing)
    listing.set_defaults(_run=_list)

    show = verbs.add_parser("show", help="show one meter, with its charging state and last reading")
    show.add_argument("meter_id", metavar="METER_ID")
    show.add_argument("--role", choices=ROLES, default="connector", help="grid: a grid meter")
    show.add_argument("--json", action="store_true")
    add_store_flags(show)
    show.set_defaults(_run=_show)


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The idTag, poll interval and thresholds given: None for each one not given, or that the verb has not."""
    from dataclasses import fields

    from chargenet.meters.spec import ThresholdSettings

    thresholds = ThresholdSettings(
        **{field.name: getattr(args, field.name, None) for field in fields(ThresholdSettings)}
    )
    return {
        "id_tag": getattr(args, "id_tag", None),
        "poll_interval": getattr(args, "poll_interval", None),
        "thresholds": thresholds,
    }


def _create(args: argparse.Namespace) -> None:
    from chargenet.errors import InvalidInput
    from chargenet.services import meters
    from chargenet.services.callers import OPERATOR

    if args.role == "grid":
        _create_grid(args)
        return
    if args.station_id is None:
        raise InvalidInput("a connector's meter needs --station (a grid meter: --role grid)", field="--station")

    async def action(ctx: AppContext) -> MeterView:
        async with ctx.store.transaction() as session:
            return await meters.create_meter(
                session,
                OPERATOR,
                site_id=args.site_id,
                station_id=args.station_id,
                charge_point_id=args.charge_point_id,
                connector_id=args.connector_id,
                profile=args.profile,
                tcp=args.tcp,
                rtu=args.rtu,
                baud=args.baud,
                parity=args.parity,
                stopbits=args.stopbits,
                unit_id=args.unit_id,
                now=ctx.clock.now(),
                **_settings(args),
            )

    meter = run_with_context(args, action)
    emit(args, {"id": meter.id}, f"created meter {meter.id} ({meter.profile} on {meters.bus_label(meter)})")


def _create_grid(args: argparse.Namespace) -> None:
    from chargenet.errors import InvalidInput
    from chargenet.services import grid_meters
    from chargenet.services.callers import OPERATOR

    detection = [name for name in ("station_id", "charge_point_id", "connector_id", "id_tag") if getattr(args, name)]
    detection += [
        name for name in ("start_current", "stop_current", "start_power", "stop_power") if getattr(args, name)
    ]
    detection += [name for name in ("stop_grace", "outage_close") if getattr(args, name) is not None]
    if detection:
        flag = "--" + detection[0].replace("_id", "").replace("_", "-")
        raise InvalidInput("a grid meter has no station and detects no sessions", field=flag)

    async def action(ctx: AppContext) -> grid_meters.GridMeterView:
        async with ctx.store.transaction() as session:
            return await grid_meters.create_grid_meter(
                session,
                OPERATOR,
                site_id=args.site_id,
                profile=args.profile,
                tcp=args.tcp,
                rtu=args.rtu,
                baud=args.baud,
                parity=args.parity,
                stopbits=args.stopbits,
                unit_id=args.unit_id,
                now=ctx.clock.now(),
                poll_interval=args.poll_interval,
            )

    meter = run_with_context(args, action)
    emit(args, {"id": meter.id}, f"created grid meter {meter.id} ({meter.profile})")


def _update(args: argparse.Namespace) -> None:
    from chargenet.services import meters
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    async def action(ctx: AppContext) -> MeterView:
        async with ctx.store.transaction() as session:
            return await meters.update_meter(
                session,
                OPERATOR,
                args.meter_id,
                now=ctx.clock.now(),
                enabled=getattr(args, "enabled", None),
                **_settings(args),
            )

    meter = run_with_context(args, action)
    emit(args, rendered(meter), f"updated meter {meter.id} ({'enabled' if meter.enabled else 'disabled'})")


def _delete(args: argparse.Namespace) -> None:
    from chargenet.services import grid_meters, meters
    from chargenet.services.callers import OPERATOR

    async def action(ctx: AppContext) -> None:
        async with ctx.store.transaction() as session:
            if args.role == "grid":
                await grid_meters.delete_grid_meter(session, OPERATOR, args.meter_id, now=ctx.clock.now())
            else:
                await meters.delete_meter(session, OPERATOR, ctx.outbox, args.meter_id, now=ctx.clock.now())

    run_with_context(args, action)
    emit(args, {"id": args.meter_id, "deleted": True}, f"deleted meter {args.meter_id}")


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import grid_meters, meters
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    if args.role == "grid":
        grid = read_every_item(
            args, lambda s, page: grid_meters.list_grid_meters(s, OPERATOR, page, site_id=args.site_id)
        )
        shown = [rendered(view) for view in grid]
        emit(args, {"items": shown}, table(shown, ["id", "siteId", "profile", "unitId", "circuitId"]))
        return

    views = read_every_item(args, lambda s, page: meters.list_meters(s, OPERATOR, page, site_id=args.site_id))
    items = [rendered(view) for view in views]
    rows = [
        {**item, "bus": meters.bus_label(view), "charging": item["status"]["charging"]}
        for view, item in zip(views, items, strict=True)
    ]
    emit(
        args, {"items": items}, table(rows, ["id", "stationId", "connectorId", "profile", "bus", "unitId", "charging"])
    )


def _show(args: argparse.Namespace) -> None:
    from chargenet.services import grid_meters, meters
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    async def action(ctx: AppContext) -> MeterView | GridMeterView:
        async with ctx.store.transaction() as session:
            if args.role == "grid":
                return await grid_meters.get_grid_meter(session, OPERATOR, args.meter_id)
            return await meters.get_meter(session, OPERATOR, args.meter_id)

    meter = rendered(run_with_context(args, action))
    emit(args, meter, "\n".join(f"{k}: {v}" for k, v in meter.items()))
