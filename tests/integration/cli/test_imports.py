"""Listing companies on a SQLite store loads the store, the use case and its views, and none of the server's parts:
no web framework, HTTP client, Modbus, migrations, PostgreSQL, metrics or key cryptography, and no mapped class of
the areas it does not read. A test of the modules loaded, not of time (bench/bench_cli.py times the command)."""

from __future__ import annotations

from pathlib import Path

from tests.support.modules import SERVING_LIBRARIES, imported_by

NOT_NEEDED = (
    *SERVING_LIBRARIES,
    "sqlalchemy.dialects.postgresql",
    "chargenet.app",
    "chargenet.api",
    "chargenet.console",
    "chargenet.edge",
    "chargenet.meters",
    "chargenet.webhooks",
    "chargenet.outbox",
    "chargenet.auth.server",
    "chargenet.observability.metrics",
    "chargenet.cli.server",
    "chargenet.store.models.edge",
    "chargenet.store.models.webhooks",
    "chargenet.store.models.meters",
    "chargenet.store.models.events",
    "chargenet.store.models.operators",
)


def test_listing_companies_loads_what_the_listing_needs_and_nothing_of_the_server(tmp_path: Path) -> None:
    store = ("--data-dir", str(tmp_path / "data"))
    # The first command creates the store (with Alembic, once); the listing then finds it at the code's schema.
    assert imported_by("admin", "company", "create", "Acme", *store).code == 0
    listing = imported_by("admin", "company", "list", "--json", *store)
    assert listing.code == 0 and '"name": "Acme"' in listing.out
    assert all(listing.of(needed) for needed in ("sqlalchemy.ext.asyncio", "aiosqlite", "chargenet.services.companies"))
    assert listing.of(*NOT_NEEDED) == []
