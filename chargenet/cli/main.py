from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from chargenet import __version__, collector
from chargenet.cli.common import fail
from chargenet.cli.secret_options import resolve_secrets
from chargenet.errors import ChargenetError

# command -> the module that registers it. Only the module of the command a command line names is imported
# (all of them for the help): `chargenet admin ...` never loads the server, the API or the edge.
COMMANDS = {
    "serve": "chargenet.cli.serve",
    "migrate": "chargenet.cli.serve",
    "demo": "chargenet.cli.serve",
    "admin": "chargenet.cli.admin",
    "partner": "chargenet.cli.partner",
    "completion": "chargenet.cli.completion",
}


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chargenet", description="EV charging network service: OCPP edge, meters, API and webhooks."
    )
    parser.add_argument("--version", action="version", version=f"chargenet {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    named = argv[0] if argv and argv[0] in COMMANDS else None
    for module in [COMMANDS[named]] if named else list(dict.fromkeys(COMMANDS.values())):
        if module == "chargenet.cli.admin":
            importlib.import_module(module).register(commands, argv[1:] if named else ())
        else:
            importlib.import_module(module).register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    try:
        resolve_secrets(args)
        args._run(args)
    except ChargenetError as error:
        return fail(error)
    except KeyboardInterrupt:
        return 130
    return 0


def run() -> NoReturn:
    """The `chargenet` executable and `python -m chargenet`: `main` in a process of its own, the collector set for one
    (`chargenet.collector`). Tests call `main`, in theirs."""
    collector.tune_for_command()
    code = main()
    collector.freeze_at_exit()
    sys.exit(code)


if __name__ == "__main__":
    run()
