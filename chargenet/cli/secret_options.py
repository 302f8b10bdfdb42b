"""Options that take a secret: `--X`, `--X-stdin` and `--X-file PATH`, at most one of them per command line.

A secret typed as an argument can be read by every user of the machine in the process list and stays in the
shell's history; `--X-stdin` and `--X-file` keep it out of both. The plain `--X` stays for scripts and tests that
can live with that, and its help says so. A command declares its secrets with `add_secret_option`; `main` runs
`resolve_secrets` before the command, which then finds each secret in `args.<dest>` (None: none given), the same
whichever way it came.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from chargenet.config import read_secret_file, without_final_newline
from chargenet.errors import InvalidInput

# Each secret option leaves its description in the namespace under this prefix (a default of its parser), so that
# resolving needs no list of the commands that take secrets. `settings_flags` skips names starting with "_".
_PREFIX = "_secret_"


@dataclass(frozen=True, slots=True)
class SecretOption:
    flag: str
    dest: str

    @property
    def stdin_flag(self) -> str:
        return f"{self.flag}-stdin"

    @property
    def file_flag(self) -> str:
        return f"{self.flag}-file"

    @property
    def stdin_dest(self) -> str:
        return f"{self.dest}_stdin"

    @property
    def file_dest(self) -> str:
        return f"{self.dest}_file"


def add_secret_option(
    container: argparse._ActionsContainer,
    flag: str,
    *,
    help: str,
    metavar: str = "SECRET",
    name: str | None = None,
    plain: bool = True,
    required: bool = False,
) -> None:
    """Add `flag`, `flag-stdin` and `flag-file`, mutually exclusive, to a parser or an argument group; `help`
    says what the secret is, `name` how the help of the other two calls it (default: from `flag`).

    `plain=False` leaves out `flag` itself, for a secret that must never be an argument (an operator's password);
    `required=True` makes one of the ways a usage error to leave out.
    """
    option = SecretOption(flag, flag.removeprefix("--").replace("-", "_"))
    name = name or flag.removeprefix("--").replace("-", " ")
    group = container.add_mutually_exclusive_group(required=required)
    if plain:
        group.add_argument(
            flag,
            dest=option.dest,
            metavar=metavar,
            help=f"{help}; other users of the machine can read an argument in the process list: prefer "
            f"{option.file_flag} or {option.stdin_flag}",
        )
    else:
        container.add_argument(flag, dest=argparse.SUPPRESS, action=_NeverAnArgument, help=argparse.SUPPRESS)
        container.set_defaults(**{option.dest: None})
    # Without the plain option, `help` has no line of its own: it goes with --X-stdin.
    more = "" if plain else f"; {help}"
    group.add_argument(
        option.stdin_flag,
        dest=option.stdin_dest,
        action="store_true",
        help=f"read the {name} from standard input{more}",
    )
    group.add_argument(
        option.file_flag,
        dest=option.file_dest,
        metavar="PATH",
        help=f"read the {name} from this file, without its final newline",
    )
    container.set_defaults(**{_PREFIX + option.dest: option})


class _NeverAnArgument(argparse.Action):
    """The plain option of a secret that has none: refused with the ways it can be given instead, rather than
    argparse's "ambiguous option" between them."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        flag = self.option_strings[0]
        raise argparse.ArgumentError(
            self, f"is never an argument, which other users can read: use {flag}-stdin or {flag}-file"
        )


def resolve_secrets(args: argparse.Namespace, stdin: TextIO | None = None) -> None:
    """Put the value of each secret option of the command in `args.<dest>`, read from where it was given.

    Raises InvalidInput naming the option when a secret is empty or when several would come from standard input,
    and ConfigurationError naming the option and the path when a file cannot be read.
    """
    options = [value for name, value in vars(args).items() if name.startswith(_PREFIX)]
    piped = [option.stdin_flag for option in options if getattr(args, option.stdin_dest)]
    if len(piped) > 1:
        raise InvalidInput("standard input holds one secret; read the others from files", field=", ".join(piped))
    for option in options:
        setattr(args, option.dest, _secret(args, option, sys.stdin if stdin is None else stdin))


def secret_from_stdin(source: str, stdin: TextIO | None = None) -> str:
    """The secret on standard input without its final newline; a terminal is asked for it without echo."""
    stream = sys.stdin if stdin is None else stdin
    if stream.isatty():
        name = source.removeprefix("--").removesuffix("-stdin").replace("-", " ")
        text = getpass.getpass(f"{name}: ")
    else:
        text = without_final_newline(stream.read())
    return _not_empty(source, text)


def _secret(args: argparse.Namespace, option: SecretOption, stdin: TextIO) -> str | None:
    path: str | None = getattr(args, option.file_dest)
    if path is not None:
        return read_secret_file(option.file_flag, path)
    if getattr(args, option.stdin_dest):
        return secret_from_stdin(option.stdin_flag, stdin)
    value: str | None = getattr(args, option.dest, None)
    return None if value is None else _not_empty(option.flag, value)


def _not_empty(source: str, secret: str) -> str:
    if not secret:
        raise InvalidInput("is empty", field=source)
    return secret
