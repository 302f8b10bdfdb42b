"""Migration 0034 (site upstream TLS) on both backends: sites stored before it are at profile 1 without a client
certificate, presence rows say no reason for a link down, and it rolls back."""

from __future__ import annotations

from sqlalchemy import inspect, text

from chargenet.domain.upstream_profiles import UpstreamProfile, parse_upstream_profile
from chargenet.store import schema
from chargenet.store.db import Store

AT = "'2026-01-01 00:00:00+00:00'"


async def test_sites_stored_before_upstream_tls_are_at_profile_1_without_a_client_certificate(
    empty_database_url: str,
) -> None:
    store = Store(empty_database_url)
    try:
        await schema.upgrade(store, "0033")
        async with store.engine.begin() as connection:
            for statement in (
                f"INSERT INTO companies (id, name, created_at, time_zone) VALUES ('co_1', 'Acme', {AT}, 'UTC')",
                "INSERT INTO sites (id, company_id, name, upstream_url, created_at, version)"
                f" VALUES ('site_1', 'co_1', 'D', 'wss://cpo.example/ocpp', {AT}, 1)",
            ):
                await connection.execute(text(statement))
        await schema.upgrade(store, "0034")
        async with store.engine.connect() as connection:
            query = "SELECT upstream_security_profile, upstream_client_subject, upstream_ca_certificates FROM sites"
            profile, subject, bundle = (await connection.execute(text(query))).one()
            presence = await connection.run_sync(
                lambda c: {column["name"] for column in inspect(c).get_columns("station_presence")}
            )
        assert parse_upstream_profile(profile) is UpstreamProfile.BASIC
        assert (subject, bundle) == (None, None)
        assert "upstream_failure" in presence
        await schema.downgrade(store, "0033")
        async with store.engine.connect() as connection:
            columns = await connection.run_sync(
                lambda c: {column["name"] for column in inspect(c).get_columns("sites")}
            )
            count = (await connection.execute(text("SELECT count(*) FROM sites"))).scalar_one()
        assert not {
            name for name in columns if name.startswith(("upstream_security", "upstream_client", "upstream_ca"))
        }
        assert count == 1
    finally:
        await store.dispose()
