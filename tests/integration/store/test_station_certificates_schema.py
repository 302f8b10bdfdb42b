"""Migration 0031 (station certificates) on both backends: sites stored before it sign their stations' CSRs, a
signing is kept per station, and it rolls back."""

from __future__ import annotations

from sqlalchemy import text

from chargenet.store import schema
from chargenet.store.db import Store

AT = "'2026-01-01 00:00:00+00:00'"


async def test_sites_stored_before_station_certificates_sign_their_stations_csrs(empty_database_url: str) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0029")
        async with store.engine.begin() as connection:
            for statement in (
                f"INSERT INTO companies (id, name, created_at) VALUES ('co_1', 'Acme', {AT})",
                f"INSERT INTO sites (id, company_id, name, created_at) VALUES ('site_1', 'co_1', 'Depot', {AT})",
                f"INSERT INTO stations (id, site_id, charge_points, created_at) VALUES ('CS-1', 'site_1', 1, {AT})",
            ):
                await connection.execute(text(statement))
        await schema.upgrade(store, "0031")
        async with store.engine.begin() as connection:
            assert (await connection.execute(text("SELECT station_csrs FROM sites"))).scalar_one() == "sign"
            await connection.execute(
                text(
                    "INSERT INTO station_certificates (station_id, serial, subject, fingerprint, not_after, issued_at)"
                    f" VALUES ('CS-1', '0A1B', 'CN=CS-1', 'AB:CD', {AT}, {AT})"
                )
            )
        await schema.downgrade(store, "0029")
        async with store.engine.connect() as connection:
            assert (await connection.execute(text("SELECT count(*) FROM stations"))).scalar_one() == 1
            assert (await connection.execute(text("SELECT count(*) FROM sites"))).scalar_one() == 1
    finally:
        await store.dispose()
