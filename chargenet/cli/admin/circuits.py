"""`chargenet admin circuit create|list|show|update|delete`: a site's circuits (decisions.md "Site power")."""

from __future__ import annotations

import argparse
from typing import Any

from chargenet.cli.admin import NOUNS
from chargenet.cli.common import add_verb, emit, emit_views, in_transaction, read_every_item, show

# The phases a circuit or a station may name (`domain.circuits.PHASE_CHOICES`, which the use cases check), written
# out so that building the parser imports no use case; a test holds the two equal.
PHASE_CHOICES = ["L1", "L2", "L3", "L1L2L3"]


def amps(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of amperes") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of amperes")
    return value


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("circuit", help=NOUNS["circuit"][1])
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = add_verb(verbs, "create", "add a circuit: the grid connection, or a feeder below --parent", _create)
    create.add_argument("--site", required=True, dest="site_id", metavar="ID")
    create.add_argument("--name", required=True)
    create.add_argument("--limit-amps", required=True, dest="limit_amps", type=amps, metavar="A", help="per phase")
    create.add_argument("--parent", dest="parent_id", metavar="ID", help="the circuit above (none: the top)")
    create.add_argument("--meter", dest="meter_id", metavar="ID", help="a grid meter of the site measuring it")
    create.add_argument("--margin-amps", dest="margin_amps", type=amps, default=0.0, metavar="A")
    create.add_argument("--phases", choices=PHASE_CHOICES, default="L1L2L3", help="the phases it carries")

    update = add_verb(verbs, "update", "change a circuit", _update)
    update.add_argument("circuit_id", metavar="CIRCUIT_ID")
    update.add_argument("--name")
    update.add_argument("--limit-amps", dest="limit_amps", type=amps, metavar="A")
    update.add_argument("--margin-amps", dest="margin_amps", type=amps, metavar="A")
    parent = update.add_mutually_exclusive_group()
    parent.add_argument("--parent", dest="parent_id", metavar="ID")
    parent.add_argument("--no-parent", dest="no_parent", action="store_true", help="make it the site's top circuit")
    meter = update.add_mutually_exclusive_group()
    meter.add_argument("--meter", dest="meter_id", metavar="ID")
    meter.add_argument("--no-meter", dest="no_meter", action="store_true")
    update.add_argument("--phases", choices=PHASE_CHOICES)

    add_verb(verbs, "list", "list circuits", _list).add_argument("--site", dest="site_id", metavar="ID")
    add_verb(verbs, "show", "show one circuit", _show).add_argument("circuit_id", metavar="CIRCUIT_ID")
    add_verb(verbs, "delete", "delete a circuit with nothing below it", _delete).add_argument(
        "circuit_id", metavar="CIRCUIT_ID"
    )
    power = add_verb(verbs, "power", "a site's circuits and sessions as the allocator shares them now", _power)
    power.add_argument("--site", required=True, dest="site_id", metavar="ID")


def _create(args: argparse.Namespace) -> None:
    from chargenet.services import circuits
    from chargenet.services.callers import OPERATOR

    circuit = in_transaction(
        args,
        lambda ctx, session: circuits.create_circuit(
            session,
            OPERATOR,
            site_id=args.site_id,
            name=args.name,
            limit_amps=args.limit_amps,
            now=ctx.clock.now(),
            parent_id=args.parent_id,
            meter_id=args.meter_id,
            margin_amps=args.margin_amps,
            phases=args.phases,
        ),
    )
    emit(args, {"id": circuit.id}, f"created circuit {circuit.id} ({circuit.name}, {circuit.limit_amps:g} A)")


def _update(args: argparse.Namespace) -> None:
    from chargenet.services import circuits
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    circuit = in_transaction(
        args,
        lambda ctx, session: circuits.update_circuit(
            session,
            OPERATOR,
            args.circuit_id,
            now=ctx.clock.now(),
            name=args.name,
            limit_amps=args.limit_amps,
            margin_amps=args.margin_amps,
            parent_id=args.parent_id,
            to_root=args.no_parent,
            meter_id=args.meter_id,
            no_meter=args.no_meter,
            phases=args.phases,
        ),
    )
    emit(args, rendered(circuit), f"updated circuit {circuit.id}")


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import circuits
    from chargenet.services.callers import OPERATOR

    items = read_every_item(args, lambda s, page: circuits.list_circuits(s, OPERATOR, page, site_id=args.site_id))
    emit_views(args, items, ["id", "siteId", "name", "parentId", "limitAmps", "marginAmps", "phases", "meterId"])


def _show(args: argparse.Namespace) -> None:
    from chargenet.services import circuits
    from chargenet.services.callers import OPERATOR

    show(args, lambda s: circuits.get_circuit(s, OPERATOR, args.circuit_id))


def _delete(args: argparse.Namespace) -> None:
    from chargenet.services import circuits
    from chargenet.services.callers import OPERATOR

    in_transaction(
        args, lambda ctx, session: circuits.delete_circuit(session, OPERATOR, args.circuit_id, now=ctx.clock.now())
    )
    emit(args, {"id": args.circuit_id, "deleted": True}, f"deleted circuit {args.circuit_id}")


def _measured(circuit: dict[str, Any]) -> str:
    if circuit["meterId"] is None:
        return ""
    if circuit["meterFault"] is not None:
        return f"; its meter tells nothing ({circuit['meterFault']}): falls back to its limit"
    return "; measured " + ", ".join(f"{phase} {value:g} A" for phase, value in circuit["measured"].items())


def _power(args: argparse.Namespace) -> None:
    from chargenet.cli.common import in_read
    from chargenet.services import site_power
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    view = in_read(
        args, lambda ctx, session: site_power.site_power(session, OPERATOR, args.site_id, now=ctx.clock.now())
    )
    data = rendered(view)
    lines = [
        f"circuit {c['id']} ({c['name']}): limit {c['limitAmps']:g} A, allocated "
        + ", ".join(f"{phase} {value:g} A" for phase, value in c["allocated"].items())
        + _measured(c)
        for c in data["circuits"]
    ]
    lines += [
        f"session {s['transactionId']} at {s['stationId']}: "
        + (f"paused ({s['pausedReason']})" if s["paused"] else f"{s['allowanceAmps']:g} A on {s['phases']}")
        for s in data["sessions"]
    ]
    emit(args, data, "\n".join(lines) or "(no circuits)")
