"""`chargenet admin NOUN VERB ...`: one module per noun, each adding its subparsers.

A command line imports only the module of the noun it names (every noun's when it names none, for the help),
so `chargenet admin company list` loads what listing companies needs and nothing of the other nouns. A noun's
module imports its use cases in the verbs that run them, not at its top: building the parser (`--help`, the
completion script) loads neither the store nor the views (tests/unit/cli/test_imports.py).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

# noun -> (module that registers it, help); later parts add theirs here.
NOUNS: dict[str, tuple[str, str]] = {
    "company": ("companies", "companies, the top of the tenant tree"),
    "site": ("sites", "sites of a company"),
    "station": ("stations", "OCPP stations of a site"),
    "station-ca": ("station_ca", "a company's CA for its stations' client certificates (security profile 3)"),
    "app": ("applications", "client applications that get tokens and call the API"),
    "group": ("groups", "groups: scopes over a company or a site, for the applications in them"),
    "keys": ("keys", "token and webhook signing keys"),
    "webhook": ("webhooks", "webhooks of a site"),
    "deadletter": ("webhooks", "events a webhook could not deliver"),
    "localauth": ("localauth", "a site's local authorization list"),
    "meter": ("meters", "Modbus meters whose readings become sessions, and grid meters on circuits"),
    "circuit": ("circuits", "a site's circuits: the grid connection, feeders, their limits per phase"),
    "operator": ("operators", "people who sign in to the console, with a role in one company"),
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser], argv: Sequence[str] = ()) -> None:
    """Add `admin` to the parser; `argv` is the command line after `admin`."""
    admin = subparsers.add_parser("admin", help="administer the store (works while the server runs)")
    nouns = admin.add_subparsers(dest="noun", metavar="NOUN", required=True)
    named = next((arg for arg in argv if not arg.startswith("-")), None)
    modules = [NOUNS[named][0]] if named in NOUNS else list(dict.fromkeys(module for module, _ in NOUNS.values()))
    for module in modules:
        importlib.import_module(f"chargenet.cli.admin.{module}").register(nouns)
