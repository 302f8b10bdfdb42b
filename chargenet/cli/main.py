from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from chargenet import __version__
from chargenet.cli import admin, partner, serve
from chargenet.cli.common import fail
from chargenet.errors import ChargenetError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chargenet", description="EV charging network service: OCPP edge, meters, API and webhooks."
    )
    parser.add_argument("--version", action="version", version=f"chargenet {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve.register(commands)
    admin.register(commands)
    partner.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args._run(args)
    except ChargenetError as error:
        return fail(error)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
