"""`chargenet admin operator ...`: the console's operators (decisions.md, "Console").

The first operator of a company can only be made here: the console has no default account and no sign-up.
Passwords come on standard input (`--password-stdin`) or from a file (`--password-file`), never as an argument,
which other users of the machine could read in the process list; without either, a terminal is asked twice,
without echo, and a pipe is read as with `--password-stdin`.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import TYPE_CHECKING

from chargenet.cli.common import add_verb, emit, emit_views, in_transaction, read_every_item, run_with_context
from chargenet.cli.secret_options import add_secret_option, secret_from_stdin
from chargenet.domain.operators import Role
from chargenet.errors import InvalidInput

if TYPE_CHECKING:
    from chargenet.services.operators import Passwords


def passwords() -> Passwords:
    """How passwords are hashed; tests put a cheap argon2 profile here instead of the deliberately slow default."""
    from chargenet.services.operators import Passwords

    return Passwords()


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("operator", help="people who sign in to the console, with a role in one company")
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)
    create = add_verb(verbs, "create", "create an operator (the first owner of a company is made this way)", _create)
    create.add_argument("--company", required=True, dest="company_id", metavar="ID")
    create.add_argument("--email", required=True)
    create.add_argument("--role", required=True, choices=[r.value for r in Role])
    _password_flag(create)
    listing = add_verb(verbs, "list", "list a company's operators", _list)
    listing.add_argument("--company", required=True, dest="company_id", metavar="ID")
    for name, text, run in (
        ("disable", "disable an operator; their console sessions end at once", _disable),
        ("enable", "allow a disabled operator to sign in again", _enable),
    ):
        add_verb(verbs, name, text, run).add_argument("operator_id", metavar="ID")
    set_role = add_verb(verbs, "set-role", "change an operator's role", _set_role)
    set_role.add_argument("operator_id", metavar="ID")
    set_role.add_argument("role", choices=[r.value for r in Role])
    password = add_verb(verbs, "password", "set an operator's password; their sessions end", _password)
    password.add_argument("operator_id", metavar="ID")
    _password_flag(password)


def _password_flag(parser: argparse.ArgumentParser) -> None:
    add_secret_option(
        parser, "--password", plain=False, help="without it or --password-file, a terminal is asked twice"
    )


def read_password(args: argparse.Namespace) -> str:
    if args.password is not None:
        return str(args.password)
    if not sys.stdin.isatty():
        return secret_from_stdin("--password-stdin")
    password = getpass.getpass("password: ")
    if getpass.getpass("again: ") != password:
        raise InvalidInput("the two passwords differ", field="password")
    if not password:
        raise InvalidInput("is empty", field="password")
    return password


def _create(args: argparse.Namespace) -> None:
    from chargenet.services import operators
    from chargenet.services.callers import OPERATOR

    password = read_password(args)
    created = run_with_context(
        args,
        lambda ctx: operators.create_operator(
            ctx.store.transaction,
            passwords(),
            OPERATOR,
            company_id=args.company_id,
            email=args.email,
            role=args.role,
            password=password,
            now=ctx.clock.now(),
        ),
    )
    emit(args, {"id": created.id}, f"created operator {created.id} ({created.email}, {created.role})")


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import operators
    from chargenet.services.callers import OPERATOR

    items = read_every_item(
        args,
        lambda s, page: operators.list_operators(s, OPERATOR, page, company_id=args.company_id),
    )
    emit_views(args, items, ["id", "email", "role", "enabled"])


def _set_enabled(args: argparse.Namespace, enabled: bool) -> None:
    from chargenet.services import operators
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    view = in_transaction(
        args,
        lambda ctx, s: operators.set_enabled(s, OPERATOR, args.operator_id, enabled=enabled, now=ctx.clock.now()),
    )
    emit(args, rendered(view), f"operator {view.id} ({view.email}) {'enabled' if enabled else 'disabled'}")


def _disable(args: argparse.Namespace) -> None:
    _set_enabled(args, False)


def _enable(args: argparse.Namespace) -> None:
    _set_enabled(args, True)


def _set_role(args: argparse.Namespace) -> None:
    from chargenet.services import operators
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    view = in_transaction(
        args,
        lambda ctx, s: operators.set_role(s, OPERATOR, args.operator_id, role=args.role, now=ctx.clock.now()),
    )
    emit(args, rendered(view), f"operator {view.id} ({view.email}) is now {view.role}")


def _password(args: argparse.Namespace) -> None:
    from chargenet.services import operators
    from chargenet.services.callers import OPERATOR

    password = read_password(args)
    run_with_context(
        args,
        lambda ctx: operators.set_password(
            ctx.store.transaction,
            passwords(),
            OPERATOR,
            args.operator_id,
            password=password,
            now=ctx.clock.now(),
        ),
    )
    emit(args, {"id": args.operator_id}, f"password of operator {args.operator_id} set; their sessions ended")
