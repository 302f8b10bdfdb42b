"""`chargenet admin station import`: a file of stations, all created or none (that on both backends)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.cli.helpers import company_and_site

pytestmark = pytest.mark.sqlite_only(reason="the command line's arguments, output and exit codes")


async def station_ids(cli, site: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [s["id"] for s in (await cli("admin", "station", "list", "--site", site, "--json")).json()["items"]]


async def test_a_csv_file_creates_every_station_with_its_charge_points(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    path = tmp_path / "stations.csv"
    path.write_text("id,chargePoints,connectors,password\nST-1,2,2,0123456789abcdef\nST-2,,,\n")
    result = await cli("admin", "station", "import", "--site", site, str(path), "--json")
    assert result.code == 0, result.err
    assert result.json() == {"siteId": site, "created": 2}
    assert await station_ids(cli, site) == ["ST-1", "ST-2"]
    shown = (await cli("admin", "station", "show", "ST-1", "--json")).json()
    assert shown["chargePointIds"] == ["ST-1-1", "ST-1-2"] and shown["securityProfile"] == 1
    keyless = (await cli("admin", "station", "show", "ST-2", "--json")).json()
    assert keyless["securityProfile"] == 0  # as a station created without a key


async def test_a_json_lines_file_is_read_by_its_name(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    path = tmp_path / "stations.jsonl"
    path.write_text('{"id": "ST-1"}\n{"id": "ST-2", "chargePoints": 1, "connectors": 2}\n')
    assert (await cli("admin", "station", "import", "--site", site, str(path))).code == 0
    assert await station_ids(cli, site) == ["ST-1", "ST-2"]


@pytest.mark.both_stores(reason="all or none is one unit of work on each store")
async def test_one_bad_row_imports_nothing_and_every_bad_row_is_named(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    assert (await cli("admin", "station", "create", "--site", site, "ST-OLD")).code == 0
    path = tmp_path / "stations.csv"
    path.write_text("id,password\nST-1,\nST-OLD,\nST-3,short\n")
    result = await cli("admin", "station", "import", "--site", site, str(path))
    assert result.code == 2
    assert "line 4: password: must be 16 to 40 characters, got 5" in result.err
    path.write_text("id\nST-1\nST-OLD\n")
    result = await cli("admin", "station", "import", "--site", site, str(path))
    assert result.code == 5 and "line 3: id: station 'ST-OLD' already exists" in result.err
    assert await station_ids(cli, site) == ["ST-OLD"]


async def test_a_missing_or_binary_file_is_named(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    missing = await cli("admin", "station", "import", "--site", site, str(tmp_path / "nope.csv"))
    assert missing.code == 2 and "nope.csv" in missing.err
    binary = tmp_path / "stations.csv"
    binary.write_bytes(b"id\n\xff\xfe\n")
    result = await cli("admin", "station", "import", "--site", site, str(binary))
    assert result.code == 2 and "is not UTF-8 text" in result.err


async def test_another_site_unknown_is_not_found(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "stations.csv"
    path.write_text("id\nST-1\n")
    result = await cli("admin", "station", "import", "--site", "site_nope", str(path))
    assert result.code == 4 and "site_nope" in result.err
