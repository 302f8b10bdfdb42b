"""Which backends a store test runs on. The `database_url` fixture (tests/conftest.py) is parametrized over SQLite
and PostgreSQL, and so is every test that takes it, or `store`, or a fixture made on them. A test marked
`sqlite_only` (on itself, its class or its module's `pytestmark`) keeps its SQLite variant alone: its PostgreSQL one
is deselected, so that every id stays what it is on both. A test of such a module marked `both_stores` keeps both.
A test marked `postgresql_only` keeps its PostgreSQL variant alone: what it shows cannot happen on SQLite (two
reads overlapping where SQLite's are one synchronous call). Each mark says why (`reason=`); which tests are which:
docs/testing.md."""

from __future__ import annotations

import pytest

SQLITE_ONLY = "sqlite_only"
BOTH_STORES = "both_stores"
POSTGRESQL_ONLY = "postgresql_only"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{SQLITE_ONLY}(reason): the store plays no part in what is tested: database_url on SQLite alone"
    )
    config.addinivalue_line(
        "markers", f"{BOTH_STORES}(reason): in a {SQLITE_ONLY} module, a test that depends on the store: both backends"
    )
    config.addinivalue_line(
        "markers",
        f"{POSTGRESQL_ONLY}(reason): what is tested cannot happen on SQLite: database_url on PostgreSQL alone",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept: list[pytest.Item] = []
    needless: list[pytest.Item] = []
    for item in items:
        (needless if _deselected(item) else kept).append(item)
    if needless:
        config.hook.pytest_deselected(items=needless)
        items[:] = kept


def _deselected(item: pytest.Item) -> bool:
    # The closest mark decides: the test's own over its class's over its module's.
    choice = next(
        (mark for mark in item.iter_markers() if mark.name in (SQLITE_ONLY, BOTH_STORES, POSTGRESQL_ONLY)), None
    )
    if choice is None:
        return False
    if not choice.kwargs.get("reason"):
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{choice.name} takes a reason=")
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("database_url") if callspec is not None else None
    if choice.name == POSTGRESQL_ONLY:
        if backend is None:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{POSTGRESQL_ONLY} on a test that takes no store")
        return backend != "postgresql"
    return choice.name == SQLITE_ONLY and backend == "postgresql"
