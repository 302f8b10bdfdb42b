"""`chargenet admin NOUN VERB ...`: one module per noun, each adding its subparsers."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from chargenet.cli.admin import (
    applications,
    companies,
    groups,
    keys,
    localauth,
    meters,
    operators,
    sites,
    stations,
    webhooks,
)

# Each entry adds `admin <noun> ...` to the parser; later parts append theirs here.
NOUNS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [
    companies.register,
    sites.register,
    stations.register,
    applications.register,
    groups.register,
    keys.register,
    webhooks.register,
    localauth.register,
    meters.register,
    operators.register,
]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    admin = subparsers.add_parser("admin", help="administer the store (works while the server runs)")
    nouns = admin.add_subparsers(dest="noun", metavar="NOUN", required=True)
    for add in NOUNS:
        add(nouns)
