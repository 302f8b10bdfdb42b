"""A command line's parser imports no store, view or server: `--help` and the completion script stay quick.

A test of the modules loaded, not of time (bench/bench_cli.py times commands). What running `admin company list`
loads is checked in tests/integration/cli/test_imports.py."""

from __future__ import annotations

from tests.support.modules import SERVING_LIBRARIES, imported_by

# What no parser needs: the libraries behind the store, the views and the server, and the parts of chargenet that
# use them. A noun's module imports its use cases in its verbs, when they run.
LIBRARIES = ("sqlalchemy", "pydantic", "asyncio", "aiosqlite", *SERVING_LIBRARIES)
PARTS = (
    "chargenet.services",
    "chargenet.store",
    "chargenet.context",
    "chargenet.app",
    "chargenet.api",
    "chargenet.console",
    "chargenet.edge",
    "chargenet.meters",
    "chargenet.auth",
    "chargenet.outbox",
    "chargenet.simulators",
    "chargenet.cli.server",
)


def test_a_verbs_help_imports_neither_the_store_nor_the_views() -> None:
    help_ = imported_by("admin", "company", "list", "--help")
    assert help_.code == 0 and "--data-dir" in help_.out
    assert help_.of(*LIBRARIES, *PARTS) == []


def test_the_whole_parser_for_the_completion_script_imports_none_of_them_either() -> None:
    completion = imported_by("completion", "bash")
    assert completion.code == 0 and "admin" in completion.out
    assert completion.of(*LIBRARIES, *PARTS) == []


def test_the_top_level_help_lists_every_command_without_importing_them() -> None:
    help_ = imported_by("--help")
    assert help_.code == 0 and all(command in help_.out for command in ("serve", "admin", "migrate", "completion"))
    assert help_.of(*LIBRARIES, *PARTS) == []
