from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url

from chargenet.domain.generations import parse_upstream_versions
from chargenet.errors import SchemaOutdated, SchemaTooNew, StoreCorrupt, StoreUnreachable
from chargenet.store import schema
from chargenet.store.db import Store
from chargenet.store.models import Base


async def table_names(store: Store) -> set[str]:
    async with store.engine.connect() as connection:
        return set(await connection.run_sync(lambda c: inspect(c).get_table_names()))


# A company and its application, as the schemas before client keys and rate limits stored them.
AN_APPLICATION = (
    "INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', '2026-01-01 00:00:00+00:00')",
    "INSERT INTO applications (client_id, company_id, name, secret_hash, secret_generation, enabled,"
    " version, created_at, updated_at) VALUES ('app_1', 'co_1', 'Partner', 'h', 1, true, 1,"
    " '2026-01-01 00:00:00+00:00', '2026-01-01 00:00:00+00:00')",
)


async def execute(store: Store, *statements: str) -> None:
    """Rows written as an older schema had them, in one transaction."""
    async with store.engine.begin() as connection:
        for statement in statements:
            await connection.execute(text(statement))


async def test_a_new_store_is_created_at_the_latest_schema(empty_database_url: str) -> None:
    store = Store(empty_database_url)
    try:
        assert await schema.prepare_schema(store) is schema.SchemaAction.CREATED
        assert await schema.current_revision(store) == schema.head_revision()
        assert set(Base.metadata.tables) <= await table_names(store)
        assert await schema.prepare_schema(store) is schema.SchemaAction.CURRENT
    finally:
        await store.dispose()


async def test_migrations_roll_back_to_empty_and_apply_again(empty_database_url: str) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store)
        await schema.downgrade(store, "base")
        assert await table_names(store) <= {"alembic_version"}
        assert await schema.current_revision(store) is None
        await schema.upgrade(store)
        assert await schema.current_revision(store) == schema.head_revision()
    finally:
        await store.dispose()


async def test_an_outdated_store_is_refused_until_migrated(
    empty_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store)
        # Pretend this chargenet knows one more revision than the store has.
        known = schema.known_revisions() | {"9999"}
        monkeypatch.setattr(schema, "head_revision", lambda: "9999")
        monkeypatch.setattr(schema, "known_revisions", lambda: known)
        monkeypatch.setattr(schema, "_upgrade", _fake_upgrade_to("9999"))
        with pytest.raises(SchemaOutdated, match="chargenet migrate"):
            await schema.prepare_schema(store)
        assert await schema.prepare_schema(store, migrate=True) is schema.SchemaAction.UPGRADED
        assert await schema.current_revision(store) == "9999"
    finally:
        await store.dispose()


def _fake_upgrade_to(revision: str):  # type: ignore[no-untyped-def]
    async def upgrade(store: Store, target: str) -> None:
        async with store.engine.begin() as connection:
            await connection.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})

    return upgrade


async def test_a_store_at_the_first_schema_is_upgraded_to_the_latest_with_its_data(empty_database_url: str) -> None:
    store = Store(empty_database_url)
    try:
        first = min(schema.known_revisions())
        await schema.upgrade(store, first)
        async with store.engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', '2026-01-01 00:00:00+00:00')"
                )
            )
        if first != schema.head_revision():
            with pytest.raises(SchemaOutdated):
                await schema.prepare_schema(store)
            assert await schema.prepare_schema(store, migrate=True) is schema.SchemaAction.UPGRADED
        assert await schema.current_revision(store) == schema.head_revision()
        async with store.engine.connect() as connection:
            assert (await connection.execute(text("SELECT name FROM companies"))).scalar_one() == "Acme"
    finally:
        await store.dispose()


async def test_local_list_entries_stored_before_their_versions_are_at_version_1(empty_database_url: str) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0018")
        await execute(
            store,
            "INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', '2026-01-01 00:00:00+00:00')",
            "INSERT INTO sites (id, company_id, name, created_at)"
            " VALUES ('site_1', 'co_1', 'Depot', '2026-01-01 00:00:00+00:00')",
            "INSERT INTO local_auth_entries (site_id, id_tag, status, created_at)"
            " VALUES ('site_1', 'TAG-1', 'Blocked', '2026-01-01 00:00:00+00:00')",
        )
        await schema.upgrade(store)
        async with store.engine.connect() as connection:
            rows = (await connection.execute(text("SELECT id_tag, status, version FROM local_auth_entries"))).all()
        assert [tuple(row) for row in rows] == [("TAG-1", "Blocked", 1)]
    finally:
        await store.dispose()


async def test_companies_stored_before_time_zones_are_in_brussels_and_operators_in_their_companys(
    empty_database_url: str,
) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0019")
        await execute(
            store,
            "INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', '2026-01-01 00:00:00+00:00')",
            "INSERT INTO operators (id, company_id, email, password_hash, role, enabled, version, created_at,"
            " updated_at) VALUES ('op_1', 'co_1', 'ana@example.org', 'x', 'owner', true, 1,"
            " '2026-01-01 00:00:00+00:00', '2026-01-01 00:00:00+00:00')",
        )
        await schema.upgrade(store, "0020")
        async with store.engine.connect() as connection:
            assert (await connection.execute(text("SELECT time_zone FROM companies"))).scalar_one() == "Europe/Brussels"
            assert (await connection.execute(text("SELECT time_zone FROM operators"))).scalar_one() is None
    finally:
        await store.dispose()


async def test_applications_stored_before_client_keys_have_none_and_revocations_start_empty(
    empty_database_url: str,
) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0021")
        await execute(
            store,
            *AN_APPLICATION,
        )
        await schema.upgrade(store, "0022")
        async with store.engine.connect() as connection:
            rows = (await connection.execute(text("SELECT client_id, jwks, jwks_url FROM applications"))).all()
            revoked = (await connection.execute(text("SELECT count(*) FROM revoked_tokens"))).scalar_one()
            used = (await connection.execute(text("SELECT count(*) FROM used_assertions"))).scalar_one()
        assert [tuple(row) for row in rows] == [("app_1", None, None)]
        assert (revoked, used) == (0, 0)
        await schema.downgrade(store, "0021")
        assert not {"revoked_tokens", "used_assertions"} & await table_names(store)
    finally:
        await store.dispose()


async def test_applications_stored_before_rate_limits_keep_the_default_and_share_no_bucket_yet(
    empty_database_url: str,
) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0022")
        await execute(
            store,
            *AN_APPLICATION,
        )
        await schema.upgrade(store, "0025")
        async with store.engine.connect() as connection:
            rows = (await connection.execute(text("SELECT client_id, rate_limit FROM applications"))).all()
            buckets = (await connection.execute(text("SELECT count(*) FROM rate_limit_buckets"))).scalar_one()
        assert [tuple(row) for row in rows] == [("app_1", None)]
        assert buckets == 0
        await schema.downgrade(store, "0022")
        assert "rate_limit_buckets" not in await table_names(store)
    finally:
        await store.dispose()


async def test_webhooks_stored_before_webhook_care_have_no_custom_headers_filter_or_previous_credentials(
    empty_database_url: str,
) -> None:
    store = Store(empty_database_url)
    at = "'2026-01-01 00:00:00+00:00'"
    try:
        await schema.upgrade(store, "0022")
        await execute(
            store,
            f"INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', {at})",
            "INSERT INTO sites (id, company_id, name, version, created_at)"
            f" VALUES ('site_1', 'co_1', 'Depot', 1, {at})",
            "INSERT INTO webhooks (id, site_id, url, event_types, auth_type, signature_algorithm, signature_format,"
            " enabled, version, created_at, updated_at) VALUES ('wh_1', 'site_1', 'https://partner.example/h',"
            f" 'Authorize', 'none', 'ed25519', 'rfc9421', true, 1, {at}, {at})",
        )
        await schema.upgrade(store, "0026")
        columns = (
            "custom_headers, station_filter, charge_point_filter, previous_credentials, previous_credentials_until"
        )
        async with store.engine.connect() as connection:
            row = (await connection.execute(text(f"SELECT id, {columns} FROM webhooks"))).one()
        assert tuple(row) == ("wh_1", None, None, None, None, None)
        await schema.downgrade(store, "0022")
        async with store.engine.connect() as connection:
            assert (await connection.execute(text("SELECT id FROM webhooks"))).scalar_one() == "wh_1"
    finally:
        await store.dispose()


async def test_stations_stored_before_ocpp_versions_may_use_both_and_take_2_0_1_transactions(
    empty_database_url: str,
) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0022")
        await execute(
            store,
            "INSERT INTO companies (id, name, created_at, time_zone)"
            " VALUES ('co_1', 'Acme', '2026-01-01 00:00:00+00:00', 'Europe/Brussels')",
            "INSERT INTO sites (id, company_id, name, created_at, version)"
            " VALUES ('site_1', 'co_1', 'Depot', '2026-01-01 00:00:00+00:00', 1)",
            "INSERT INTO stations (id, site_id, charge_points, version, created_at)"
            " VALUES ('CS-1', 'site_1', 1, 1, '2026-01-01 00:00:00+00:00')",
        )
        await schema.upgrade(store, "0023")
        async with store.engine.begin() as connection:
            versions = (await connection.execute(text("SELECT ocpp_versions FROM stations"))).scalar_one()
            await connection.execute(
                text(
                    "INSERT INTO edge_transactions (id, station_id, site_id, charge_point_id, connector_id,"
                    " ocpp_connector_id, id_tag, started_at, meter_start, upstream_refused, created_at,"
                    " station_transaction_id, seq_no) VALUES (1, 'CS-1', 'site_1', 'CS-1', 1, 1, :tag,"
                    " '2026-01-01 00:00:00+00:00', 0, false, '2026-01-01 00:00:00+00:00', 'TX-1', 0)"
                ),
                {"tag": "E" * 36},  # a 2.0.1 idToken: longer than 1.6's 20
            )
        assert versions is None
        await schema.downgrade(store, "0022")
        assert "station_notices" not in await table_names(store)
    finally:
        await store.dispose()


async def test_unstarted_2_0_1_transactions_are_kept_and_2_0_1_ones_may_begin_alike(
    empty_database_url: str,
) -> None:
    store = Store(empty_database_url)
    at = "'2026-01-01 00:00:00+00:00'"
    try:
        await schema.upgrade(store, "0028")
        await execute(
            store,
            f"INSERT INTO companies (id, name, created_at, time_zone) VALUES ('co_1', 'Acme', {at}, 'UTC')",
            f"INSERT INTO sites (id, company_id, name, created_at, version) VALUES ('site_1', 'co_1', 'D', {at}, 1)",
            f"INSERT INTO stations (id, site_id, charge_points, version, created_at) VALUES ('CS-1', 'site_1', 1,"
            f" 1, {at})",
        )
        await schema.upgrade(store, "0029")
        async with store.engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO edge_unstarted_transactions (station_id, station_transaction_id, began_at,"
                    f" charge_point_id, connector_id, ocpp_connector_id, meter_begin, updated_at) VALUES ('CS-1',"
                    f" 'TX-1', {at}, 'CS-1', 1, 1, 2000, {at})"
                )
            )
            for number, station_transaction_id in ((1, "'TX-1'"), (2, "'TX-2'"), (3, "NULL")):
                # 2.0.1 transactions that began alike, and a 1.6 one that began like them
                await connection.execute(
                    text(
                        "INSERT INTO edge_transactions (id, station_id, site_id, charge_point_id, connector_id,"
                        " ocpp_connector_id, id_tag, started_at, meter_start, upstream_refused, created_at,"
                        f" station_transaction_id) VALUES ({number}, 'CS-1', 'site_1', 'CS-1', 1, 1, 'TAG', {at}, 0,"
                        f" false, {at}, {station_transaction_id})"
                    )
                )
            await connection.execute(text("DELETE FROM edge_transactions"))
            await connection.execute(text("DELETE FROM stations"))  # its unstarted transactions go with it
            left = (await connection.execute(text("SELECT count(*) FROM edge_unstarted_transactions"))).scalar_one()
        assert left == 0
        await schema.downgrade(store, "0028")
        assert "edge_unstarted_transactions" not in await table_names(store)
    finally:
        await store.dispose()


async def test_a_store_from_a_newer_chargenet_is_refused(empty_database_url: str) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store)
        async with store.engine.begin() as connection:
            await connection.execute(text("UPDATE alembic_version SET version_num = 'zz99_future'"))
        with pytest.raises(SchemaTooNew, match="zz99_future"):
            await schema.prepare_schema(store)
    finally:
        await store.dispose()


async def test_a_database_of_something_else_is_refused(empty_database_url: str) -> None:
    store = Store(empty_database_url)
    try:
        async with store.engine.begin() as connection:
            await connection.execute(text("CREATE TABLE invoices (id INTEGER PRIMARY KEY)"))
        with pytest.raises(StoreCorrupt, match="not a chargenet store"):
            await schema.prepare_schema(store)
        assert await table_names(store) == {"invoices"}
    finally:
        await store.dispose()


async def test_a_corrupt_sqlite_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "chargenet.db"
    path.write_bytes(b"this is not an SQLite database, just bytes" * 100)
    before = path.read_bytes()
    store = Store(f"sqlite+aiosqlite:///{path}")
    try:
        with pytest.raises(StoreCorrupt, match="not readable"):
            await schema.prepare_schema(store)
    finally:
        await store.dispose()
    assert path.read_bytes() == before


async def test_an_unreachable_postgres_is_reported_with_its_address_but_not_its_password() -> None:
    store = Store("postgresql+asyncpg://chargenet:hunter2@127.0.0.1:1/chargenet")
    try:
        with pytest.raises(StoreUnreachable) as caught:
            await schema.prepare_schema(store)
    finally:
        await store.dispose()
    assert "127.0.0.1:1" in caught.value.message
    assert "hunter2" not in caught.value.message


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+asyncpg://chargenet:wrong-password@127.0.0.1:5432/chargenet_test",
        "postgresql+asyncpg://chargenet:chargenet@127.0.0.1:5432/no_such_database_here",
    ],
)
async def test_a_refused_login_or_missing_database_is_unreachable_not_a_traceback(url: str) -> None:
    store = Store(url)
    try:
        with pytest.raises(StoreUnreachable) as caught:
            await schema.prepare_schema(store)
    finally:
        await store.dispose()
    assert "cannot reach the database" in caught.value.message
    assert "wrong-password" not in caught.value.message


async def test_a_failing_migration_leaves_the_store_as_it_was(
    empty_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A copy of the real migrations plus one that creates a table and then fails halfway.
    migrations = tmp_path / "migrations"
    shutil.copytree(schema.MIGRATIONS, migrations, ignore=shutil.ignore_patterns("__pycache__"))
    (migrations / "versions" / "9999_broken.py").write_text(
        "from alembic import op\nimport sqlalchemy as sa\n"
        f"revision = '9999'\ndown_revision = {schema.head_revision()!r}\nbranch_labels = None\ndepends_on = None\n"
        "def upgrade():\n"
        "    op.create_table('half_done', sa.Column('id', sa.Integer, primary_key=True))\n"
        "    op.execute('UPDATE companies SET name = 1')\n"
        "    raise RuntimeError('boom')\n"
        "def downgrade():\n    pass\n"
    )
    store = Store(empty_database_url)
    try:
        await schema.prepare_schema(store)
        head = schema.head_revision()
        before = await table_names(store)
        monkeypatch.setattr(schema, "MIGRATIONS", migrations)
        with pytest.raises(RuntimeError, match="boom"):
            await schema.prepare_schema(store, migrate=True)
        assert await table_names(store) == before
        assert await schema.current_revision(store) == head
    finally:
        await store.dispose()


async def test_processes_starting_together_on_an_empty_store_all_come_up(
    empty_database_url: str, tmp_path: Path
) -> None:
    # Three contexts (as three `chargenet serve` processes would) open one new store at the same moment, with
    # one shared keys folder: one creates the schema and records the keys, the others find it done.
    from chargenet.app import open_context
    from chargenet.config import load_settings
    from chargenet.keys import KeyStore

    KeyStore(tmp_path / "keys").ensure()
    flags = {"database_url": empty_database_url, "data_dir": str(tmp_path / "data"), "keys_dir": str(tmp_path / "keys")}
    contexts = await asyncio.gather(*(open_context(load_settings(flags, environ={})) for _ in range(3)))
    try:
        assert await schema.current_revision(contexts[0].store) == schema.head_revision()
    finally:
        for context in contexts:
            await context.close()


def test_the_head_read_from_file_names_is_alembics_head() -> None:
    from alembic.script import ScriptDirectory

    assert schema.head_revision() == schema.alembic_head_revision()
    for script in ScriptDirectory.from_config(schema.alembic_config()).walk_revisions():
        assert script.path is not None and Path(script.path).name.startswith(f"{script.revision}_")


@pytest.mark.parametrize("empty_database_url", ["sqlite"], indirect=True)
async def test_a_process_starting_while_the_sqlite_file_is_locked_past_one_busy_timeout_waits_for_it(
    empty_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chargenet.store import db

    monkeypatch.setattr(db, "SQLITE_BUSY_TIMEOUT_MS", 200)
    path = make_url(empty_database_url).database
    assert path
    # Another process creating the schema holds the write lock for longer than one busy timeout.
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("BEGIN IMMEDIATE")
    asyncio.get_running_loop().call_later(0.3, holder.rollback)
    store = Store(empty_database_url)
    try:
        assert await schema.prepare_schema(store) == schema.SchemaAction.CREATED
    finally:
        await store.dispose()
        holder.close()


async def test_sites_stored_before_circuits_have_none_and_their_stations_hang_on_none(empty_database_url: str) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0022")
        await execute(
            store,
            "INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', '2026-01-01 00:00:00+00:00')",
            "INSERT INTO sites (id, company_id, name, created_at) VALUES ('site_1', 'co_1', 'Depot',"
            " '2026-01-01 00:00:00+00:00')",
        )
        await schema.upgrade(store, "0027")
        async with store.engine.connect() as connection:
            counts = [
                (await connection.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one()
                for table in ("circuits", "grid_meters", "station_circuits")
            ]
        assert counts == [0, 0, 0]
        await schema.downgrade(store, "0022")
        assert not {"circuits", "grid_meters", "station_circuits"} & await table_names(store)
    finally:
        await store.dispose()


async def test_sites_stored_before_upstream_versions_have_an_upstream_of_1_6_only(empty_database_url: str) -> None:
    store = Store(empty_database_url)
    at = "'2026-01-01 00:00:00+00:00'"
    try:
        await schema.upgrade(store, "0029")
        await execute(
            store,
            f"INSERT INTO companies (id, name, created_at, time_zone) VALUES ('co_1', 'Acme', {at}, 'UTC')",
            "INSERT INTO sites (id, company_id, name, upstream_url, created_at, version)"
            f" VALUES ('site_1', 'co_1', 'D', 'ws://cpo.example/ocpp', {at}, 1)",
        )
        await schema.upgrade(store, "0030")
        async with store.engine.connect() as connection:
            versions = (await connection.execute(text("SELECT upstream_ocpp_versions FROM sites"))).scalar_one()
        assert parse_upstream_versions(versions) == ("ocpp1.6",)
        await schema.downgrade(store, "0029")
        async with store.engine.connect() as connection:
            columns = await connection.run_sync(
                lambda c: {column["name"] for column in inspect(c).get_columns("sites")}
            )
        assert "upstream_ocpp_versions" not in columns
    finally:
        await store.dispose()


async def test_stores_before_power_allowances_start_with_none_and_roll_back_cleanly(empty_database_url: str) -> None:
    tables = {"power_allowances", "station_profile_answers", "upstream_charging_profiles", "power_leases"}
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0030")
        await execute(store, *AN_APPLICATION[:1])
        await schema.upgrade(store, "0032")
        async with store.engine.connect() as connection:
            counts = [
                (await connection.execute(text(f"SELECT count(*) FROM {t}"))).scalar_one() for t in sorted(tables)
            ]
        assert counts == [0, 0, 0, 0]
        await schema.downgrade(store, "0030")
        assert not tables & await table_names(store)
    finally:
        await store.dispose()


async def test_stores_before_grid_meter_readings_start_with_none_and_roll_back_cleanly(
    empty_database_url: str,
) -> None:
    tables = {"grid_meter_readings", "site_power_samples"}
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0035")
        await schema.upgrade(store, "0036")
        async with store.engine.connect() as connection:
            counts = [
                (await connection.execute(text(f"SELECT count(*) FROM {t}"))).scalar_one() for t in sorted(tables)
            ]
        assert counts == [0, 0]
        await schema.downgrade(store, "0035")
        assert not tables & await table_names(store)
    finally:
        await store.dispose()
