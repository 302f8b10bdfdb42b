"""What every subcommand shares: the settings flags, opening the store, printing results, and the one
mapping from errors to a message on stderr and an exit code.

Every command line imports this module, `--help` and the completion script's generation included, so it imports
nothing heavy itself: the store, the context and the views are imported by the functions that use them, when a
command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from chargenet.cli.secret_options import add_secret_option
from chargenet.errors import (
    ChargenetError,
    ConfigurationError,
    Conflict,
    Forbidden,
    ImportClash,
    ImportRefused,
    InvalidInput,
    NotFound,
    StoreError,
)

if TYPE_CHECKING:
    from pydantic import BaseModel
    from sqlalchemy.ext.asyncio import AsyncSession

    from chargenet.context import AppContext
    from chargenet.services.pages import Page, PageRequest

T = TypeVar("T")

EXIT_USAGE = 2
EXIT_STORE = 3
EXIT_NOT_FOUND = 4
EXIT_CONFLICT = 5

# Most specific first, as everywhere errors meet a wire.
_EXIT_CODES: list[tuple[type[ChargenetError], int]] = [
    (ConfigurationError, EXIT_USAGE),
    (InvalidInput, EXIT_USAGE),
    (StoreError, EXIT_STORE),
    (NotFound, EXIT_NOT_FOUND),
    (Conflict, EXIT_CONFLICT),
    (Forbidden, EXIT_CONFLICT),
]


def exit_code_for(error: ChargenetError) -> int:
    for cls, code in _EXIT_CODES:
        if isinstance(error, cls):
            return code
    return 1


def instant(text: str) -> datetime:
    """An argument type: an ISO 8601 date-time with its UTC offset."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 date-time") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} needs a UTC offset, e.g. 2027-01-01T00:00:00+00:00")
    return value


def add_store_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("store")
    group.add_argument("--data-dir", dest="data_dir", help="data folder (env CHARGENET_DATA_DIR)")
    group.add_argument("--keys-dir", dest="keys_dir", help="keys folder (env CHARGENET_KEYS_DIR)")
    add_secret_option(
        group,
        "--database-url",
        metavar="URL",
        name="database URL",
        help="database URL, with its password (env CHARGENET_DATABASE_URL or CHARGENET_DATABASE_URL_FILE)",
    )


def settings_flags(args: argparse.Namespace) -> dict[str, Any]:
    return {key: value for key, value in vars(args).items() if not key.startswith("_")}


def run_with_context(
    args: argparse.Namespace, action: Callable[[AppContext], Awaitable[T]], *, migrate: bool = False
) -> T:
    import asyncio

    from chargenet.config import load_settings
    from chargenet.context import open_store

    async def runner() -> T:
        # Only the store, keys and clock: an admin command needs no auth server, edge or meter poller.
        context = await open_store(load_settings(settings_flags(args)), migrate=migrate)
        try:
            return await action(context)
        finally:
            await context.close()

    return asyncio.run(runner())


def add_verb(
    verbs: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help: str,
    run: Callable[[argparse.Namespace], None],
) -> argparse.ArgumentParser:
    """A subcommand with `--json` and the store flags, dispatching to `run`."""
    parser = verbs.add_parser(name, help=help)
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    add_store_flags(parser)
    parser.set_defaults(_run=run)
    return parser


def in_transaction(args: argparse.Namespace, action: Callable[[AppContext, AsyncSession], Awaitable[T]]) -> T:
    """Open the store, run `action` in one transaction, close the store."""

    async def run(context: AppContext) -> T:
        async with context.store.transaction() as session:
            return await action(context, session)

    return run_with_context(args, run)


def in_read(args: argparse.Namespace, action: Callable[[AppContext, AsyncSession], Awaitable[T]]) -> T:
    """Open the store, run `action` in one unit that only reads, close the store. A list or a show never takes the
    writer's lock, so it does not wait behind a serving process's writes (on SQLite, a `BEGIN IMMEDIATE`)."""

    async def run(context: AppContext) -> T:
        async with context.store.read() as session:
            return await action(context, session)

    return run_with_context(args, run)


def read_every_item(
    args: argparse.Namespace, fetch: Callable[[AsyncSession, PageRequest], Awaitable[Page[T]]]
) -> list[T]:
    """Every item of a list, read page after page in one unit that only reads (the command line prints whole
    lists)."""
    from chargenet.services import pages

    return in_read(args, lambda ctx, session: pages.every_page(lambda page: fetch(session, page)))


def show(args: argparse.Namespace, fetch: Callable[[AsyncSession], Awaitable[BaseModel]]) -> None:
    """Print the view `fetch` reads, in one unit that only reads (a show verb)."""
    emit_view(args, in_read(args, lambda ctx, session: fetch(session)))


def emit_view(args: argparse.Namespace, view: BaseModel) -> None:
    """A view of the use cases, as the API renders it."""
    from chargenet.services.views import rendered

    emit_object(args, rendered(view))


def emit_views(args: argparse.Namespace, views: Sequence[BaseModel], columns: list[str]) -> None:
    from chargenet.services.views import rendered

    emit_list(args, [rendered(view) for view in views], columns)


def emit_object(args: argparse.Namespace, data: dict[str, Any]) -> None:
    emit(args, data, "\n".join(f"{key}: {value}" for key, value in data.items()))


def emit_list(args: argparse.Namespace, items: list[dict[str, Any]], columns: list[str]) -> None:
    emit(args, {"items": items}, table(items, columns))


def emit(args: argparse.Namespace, data: dict[str, Any], human: str) -> None:
    """With --json, one JSON object on stdout; otherwise a line for people."""
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(human + "\n")


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    if not rows:
        return "(none)"
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    lines = ["  ".join(c.ljust(widths[c]) for c in columns)]
    lines += [
        "  ".join(str(r.get(c, "") if r.get(c) is not None else "-").ljust(widths[c]) for c in columns) for r in rows
    ]
    return "\n".join(lines)


def fail(error: ChargenetError) -> int:
    sys.stderr.write(f"chargenet: error: {error.message}\n")
    if isinstance(error, ImportRefused | ImportClash):
        sys.stderr.writelines(f"  {fault}\n" for fault in error.faults)
    return exit_code_for(error)


def read_input_file(path: str) -> str:
    """A text file the command reads (`-`: standard input), as UTF-8; a file that is missing or not UTF-8 is an
    error naming it."""
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path!r}: {exc.strerror}", field="FILE") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path!r} is not UTF-8 text (byte {exc.start})", field="FILE") from None
