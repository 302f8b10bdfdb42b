"""Migration 0028 (security profiles) on both backends: stations keep the profile their key gave them, have no
refusal or serial number yet, companies no organisation name, and it rolls back."""

from __future__ import annotations

from sqlalchemy import text

from chargenet.store import schema
from chargenet.store.db import Store

AT = "'2026-01-01 00:00:00+00:00'"


async def test_stations_stored_before_security_profiles_are_at_1_with_a_key_and_0_without(
    empty_database_url: str,
) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0026")
        async with store.engine.begin() as connection:
            for statement in (
                f"INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', {AT})",
                f"INSERT INTO sites (id, company_id, name, created_at) VALUES ('site_1', 'co_1', 'Depot', {AT})",
                "INSERT INTO stations (id, site_id, charge_points, password_hash, created_at)"
                f" VALUES ('KEYED', 'site_1', 1, 'hs256$00', {AT})",
                f"INSERT INTO stations (id, site_id, charge_points, created_at) VALUES ('OPEN', 'site_1', 1, {AT})",
                "INSERT INTO charge_points (id, station_id, site_id, ordinal) VALUES ('OPEN', 'OPEN', 'site_1', 1)",
            ):
                await connection.execute(text(statement))
        await schema.upgrade(store, "0028")
        async with store.engine.connect() as connection:
            query = (
                "SELECT id, security_profile, last_refusal, last_refusal_at, serial_number FROM stations ORDER BY id"
            )
            rows = [tuple(row) for row in (await connection.execute(text(query))).all()]
            organisation = (await connection.execute(text("SELECT organisation_name FROM companies"))).scalar_one()
        assert rows == [("KEYED", 1, None, None, None), ("OPEN", 0, None, None, None)]
        assert organisation is None
        await schema.downgrade(store, "0026")
        async with store.engine.connect() as connection:
            assert (await connection.execute(text("SELECT count(*) FROM stations"))).scalar_one() == 2
    finally:
        await store.dispose()
