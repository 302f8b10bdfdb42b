from __future__ import annotations

from typing import Any

import pytest

from tests.integration.cli.helpers import Cli, company_and_site

pytestmark = pytest.mark.sqlite_only(reason="the command line's arguments, output and exit codes")


async def tenant(cli: Cli) -> str:
    """A site with station ST-1: the site's id."""
    _, site = await company_and_site(cli)
    await cli("admin", "station", "create", "--site", site, "ST-1", "--json")
    return site


async def test_meter_create_list_show_update_disable_delete(cli: Any) -> None:
    site_id = await tenant(cli)
    created = await cli(
        "admin", "meter", "create", "--site", site_id, "--station", "ST-1", "--profile", "em340",
        "--rtu", "/dev/ttyUSB0", "--baud", "19200", "--parity", "E", "--unit", "7", "--stop-grace", "240", "--json",
    )  # fmt: skip
    assert created.code == 0, created.err
    meter_id = created.json()["id"]
    assert set(created.json()) == {"id"}
    listing = (await cli("admin", "meter", "list", "--site", site_id, "--json")).json()
    assert [m["id"] for m in listing["items"]] == [meter_id]
    shown = (await cli("admin", "meter", "show", meter_id, "--json")).json()
    assert shown["transport"] == {"type": "rtu", "device": "/dev/ttyUSB0", "baud": 19200, "parity": "E", "stopbits": 1}
    assert (shown["unitId"], shown["stopGrace"], shown["status"]["charging"]) == (7, 240, False)
    updated = (await cli("admin", "meter", "update", meter_id, "--id-tag", "FLEET", "--json")).json()
    assert updated["idTag"] == "FLEET"
    disabled = (await cli("admin", "meter", "disable", meter_id, "--json")).json()
    assert disabled["enabled"] is False
    assert (await cli("admin", "meter", "delete", meter_id)).code == 0
    assert (await cli("admin", "meter", "list", "--json")).json() == {"items": []}


async def test_malformed_meter_configuration_is_a_clear_error_naming_it(cli: Any) -> None:
    site_id = await tenant(cli)
    result = await cli(
        "admin", "meter", "create", "--site", site_id, "--station", "ST-1", "--profile", "sdm630",
        "--tcp", "10.0.0.5:99999", "--unit", "1",
    )  # fmt: skip
    assert result.code == 2
    assert "tcp: port must be 1-65535" in result.err
    result = await cli(
        "admin", "meter", "create", "--site", site_id, "--station", "ST-1", "--profile", "sdm630",
        "--tcp", "10.0.0.5", "--unit", "300",
    )  # fmt: skip
    assert (result.code, result.err.strip()) == (2, "chargenet: error: unit: must be 1-247, got 300")


async def test_meter_needs_exactly_one_of_tcp_and_rtu(cli: Any) -> None:
    site_id = await tenant(cli)
    result = await cli(
        "admin", "meter", "create", "--site", site_id, "--station", "ST-1", "--profile", "sdm630", "--unit", "1"
    )
    assert result.code == 2 and "transport: give exactly one of --tcp" in result.err
