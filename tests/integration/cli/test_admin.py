from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.sqlite_only(reason="the command line's arguments, output and exit codes")


async def test_company_site_station_create_list_show_with_json(cli) -> None:  # type: ignore[no-untyped-def]
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    assert set(company) == {"id"}
    site = (await cli("admin", "site", "create", "--company", company["id"], "Depot", "--json")).json()
    station = (
        await cli(
            "admin", "station", "create", "--site", site["id"], "ST-1", "--password", "0123456789abcdef", "--json"
        )
    ).json()
    assert station == {"id": "ST-1"}
    listing = (await cli("admin", "station", "list", "--site", site["id"], "--json")).json()
    assert [s["id"] for s in listing["items"]] == ["ST-1"]
    shown = (await cli("admin", "station", "show", "ST-1", "--json")).json()
    assert shown["securityProfile"] == 1 and shown["chargePointIds"] == ["ST-1"]
    assert "password" not in json.dumps(shown).lower().replace("upstreampasswordset", "")
    sites = (await cli("admin", "site", "list", "--company", company["id"], "--json")).json()
    assert [s["name"] for s in sites["items"]] == ["Depot"]


async def test_a_stations_ocpp_versions_are_pinned_from_the_command_line(cli) -> None:  # type: ignore[no-untyped-def]
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    site = (await cli("admin", "site", "create", "--company", company["id"], "Depot", "--json")).json()
    await cli("admin", "station", "create", "--site", site["id"], "ST-1", "--ocpp-versions", "ocpp2.0.1", "--json")
    assert (await cli("admin", "station", "show", "ST-1", "--json")).json()["ocppVersions"] == ["ocpp2.0.1"]
    updated = await cli("admin", "station", "update", "ST-1", "--ocpp-versions", "ocpp1.6,ocpp2.0.1", "--json")
    assert updated.json()["ocppVersions"] == ["ocpp2.0.1", "ocpp1.6"]  # both: the default, in the edge's order


async def test_site_update_sets_and_removes_the_upstream(cli) -> None:  # type: ignore[no-untyped-def]
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    site = (await cli("admin", "site", "create", "--company", company["id"], "Depot", "--json")).json()
    updated = (
        await cli("admin", "site", "update", site["id"], "--upstream-url", "wss://csms.example/ocpp", "--json")
    ).json()
    assert updated["upstreamUrl"] == "wss://csms.example/ocpp"
    cleared = (await cli("admin", "site", "update", site["id"], "--no-upstream", "--json")).json()
    assert cleared["upstreamUrl"] is None


async def test_station_with_several_charge_points_lists_their_ids(cli) -> None:  # type: ignore[no-untyped-def]
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    site = (await cli("admin", "site", "create", "--company", company["id"], "Depot", "--json")).json()
    await cli("admin", "station", "create", "--site", site["id"], "DUO", "--charge-points", "2", "--connectors", "1")
    shown = (await cli("admin", "station", "show", "DUO", "--json")).json()
    assert shown["chargePointIds"] == ["DUO-1", "DUO-2"]


async def test_unknown_parent_is_a_clear_error_with_exit_code_4(cli) -> None:  # type: ignore[no-untyped-def]
    result = await cli("admin", "site", "create", "--company", "co_missing", "Depot")
    assert result.code == 4
    assert "company 'co_missing' not found" in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--password", "short"], "password"),
        (["--charge-points", "2"], "connectors"),
    ],
)
async def test_bad_station_values_are_named(cli, args: list[str], named: str) -> None:  # type: ignore[no-untyped-def]
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    site = (await cli("admin", "site", "create", "--company", company["id"], "Depot", "--json")).json()
    result = await cli("admin", "station", "create", "--site", site["id"], "ST-1", *args)
    assert result.code == 2
    assert named in result.err


async def test_duplicate_station_is_a_conflict(cli) -> None:  # type: ignore[no-untyped-def]
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    site = (await cli("admin", "site", "create", "--company", company["id"], "Depot", "--json")).json()
    await cli("admin", "station", "create", "--site", site["id"], "ST-1")
    result = await cli("admin", "station", "create", "--site", site["id"], "ST-1")
    assert result.code == 5
    assert "already exists" in result.err


async def test_bad_upstream_url_is_named(cli) -> None:  # type: ignore[no-untyped-def]
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    result = await cli("admin", "site", "create", "--company", company["id"], "Depot", "--upstream-url", "http://x")
    assert result.code == 2
    assert "upstream-url" in result.err and "'http://x'" in result.err


@pytest.mark.both_stores(reason="migrating reads each store's schema its own way")
async def test_migrate_reports_the_schema(cli) -> None:  # type: ignore[no-untyped-def]
    result = (await cli("migrate", "--json")).json()
    assert result["action"] in ("created", "current")
    assert (await cli("migrate", "--json")).json()["action"] == "current"


async def test_a_company_reads_in_brussels_unless_created_or_updated_with_another_zone(cli) -> None:  # type: ignore[no-untyped-def]
    plain = (await cli("admin", "company", "create", "Acme", "--json")).json()
    assert (await cli("admin", "company", "show", plain["id"], "--json")).json()["timeZone"] == "Europe/Brussels"
    tokyo = (await cli("admin", "company", "create", "Nihon", "--time-zone", "Asia/Tokyo", "--json")).json()
    assert (await cli("admin", "company", "show", tokyo["id"], "--json")).json()["timeZone"] == "Asia/Tokyo"
    await cli("admin", "company", "update", plain["id"], "--time-zone", "America/New_York")
    assert (await cli("admin", "company", "show", plain["id"], "--json")).json()["timeZone"] == "America/New_York"


@pytest.mark.parametrize("verb", ["create", "update"])
async def test_an_unknown_time_zone_is_a_clear_error_naming_it(cli, verb: str) -> None:  # type: ignore[no-untyped-def]
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    target = ["Other"] if verb == "create" else [company["id"]]
    result = await cli("admin", "company", verb, *target, "--time-zone", "Europe/Atlantis")
    assert result.code == 2
    assert "'Europe/Atlantis' is not a time zone of the tz database" in result.err
    assert "Traceback" not in result.err
