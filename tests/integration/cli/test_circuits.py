"""`chargenet admin circuit ...`, `meter create --role grid` and `station update --circuit` as decisions.md names
them ("Names for scripts"); a refused value is named and nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.cli.helpers import Cli, company_and_site

pytestmark = pytest.mark.sqlite_only(reason="the command line's arguments, output and exit codes")


async def site_with_station(cli: Cli) -> tuple[str, str]:
    company, site = await company_and_site(cli)
    await cli("admin", "station", "create", "--site", site, "ST-1", "--json")
    return company, site


async def test_a_sites_circuit_tree_with_a_grid_meter_and_a_station_on_it(cli: Any) -> None:
    _, site = await site_with_station(cli)
    meter = await cli(
        "admin", "meter", "create", "--role", "grid", "--site", site, "--profile", "sdm630", "--tcp", "192.0.2.9:502",
        "--unit", "1", "--json",
    )  # fmt: skip
    assert meter.code == 0, meter.err
    meter_id = meter.json()["id"]
    grid = await cli(
        "admin", "circuit", "create", "--site", site, "--name", "Grid", "--limit-amps", "250", "--meter", meter_id,
        "--margin-amps", "10", "--json",
    )  # fmt: skip
    assert grid.code == 0, grid.err
    assert set(grid.json()) == {"id"}
    grid_id = grid.json()["id"]
    feeder = await cli(
        "admin", "circuit", "create", "--site", site, "--name", "Row A", "--limit-amps", "63", "--parent", grid_id,
        "--json",
    )  # fmt: skip
    feeder_id = feeder.json()["id"]
    placed = await cli(
        "admin", "station", "update", "ST-1", "--circuit", feeder_id, "--phases", "L2", "--priority", "1", "--json"
    )
    assert placed.code == 0, placed.err
    assert placed.json()["circuit"] == {"stationId": "ST-1", "circuitId": feeder_id, "phases": "L2", "priority": 1}
    listed = (await cli("admin", "circuit", "list", "--site", site, "--json")).json()["items"]
    assert {(c["name"], c["parentId"], c["meterId"]) for c in listed} == {
        ("Grid", None, meter_id),
        ("Row A", grid_id, None),
    }
    grids = (await cli("admin", "meter", "list", "--role", "grid", "--json")).json()["items"]
    assert [(m["id"], m["role"], m["circuitId"]) for m in grids] == [(meter_id, "grid", grid_id)]
    updated = (await cli("admin", "circuit", "update", feeder_id, "--limit-amps", "80", "--json")).json()
    assert (updated["limitAmps"], updated["version"]) == (80.0, 2)
    assert (await cli("admin", "circuit", "show", grid_id, "--json")).json()["marginAmps"] == 10.0
    power = (await cli("admin", "circuit", "power", "--site", site, "--json")).json()
    assert [c["meterSilent"] for c in power["circuits"] if c["id"] == grid_id] == [True]
    assert (await cli("admin", "circuit", "delete", grid_id)).code != 0
    refused = await cli("admin", "site", "delete", site)
    assert refused.code != 0 and "grid meters and circuits" in refused.err
    shown = (await cli("admin", "meter", "show", "--role", "grid", meter_id, "--json")).json()
    assert (shown["profile"], shown["transport"], shown["pollInterval"]) == (
        "sdm630",
        {"type": "tcp", "host": "192.0.2.9", "port": 502},
        1.0,
    )
    assert (await cli("admin", "meter", "delete", "--role", "grid", meter_id)).code != 0  # its circuit uses it
    assert (await cli("admin", "circuit", "update", grid_id, "--no-meter")).code == 0
    assert (await cli("admin", "meter", "delete", "--role", "grid", meter_id)).code == 0


async def test_refused_circuits_and_placements_name_the_value_and_store_nothing(cli: Any) -> None:
    _, site = await site_with_station(cli)
    grid_id = (
        await cli("admin", "circuit", "create", "--site", site, "--name", "Grid", "--limit-amps", "32", "--json")
    ).json()["id"]
    single_feeder = await cli(
        "admin", "circuit", "create", "--site", site, "--name", "L1 feeder", "--limit-amps", "16", "--parent", grid_id,
        "--phases", "L1", "--json",
    )  # fmt: skip
    single = single_feeder.json()["id"]
    _, far_site = await company_and_site(cli)
    far = (
        await cli("admin", "circuit", "create", "--site", far_site, "--name", "Far", "--limit-amps", "32", "--json")
    ).json()["id"]
    refusals = {
        "low limit": await cli("admin", "circuit", "create", "--site", site, "--name", "X", "--limit-amps", "4"),
        "cycle": await cli("admin", "circuit", "update", grid_id, "--parent", single),
        "other site": await cli("admin", "station", "update", "ST-1", "--circuit", far, "--phases", "L1"),
        "phases": await cli("admin", "station", "update", "ST-1", "--circuit", single, "--phases", "L1L2L3"),
    }
    assert {name: result.code for name, result in refusals.items()} == dict.fromkeys(refusals, 2)
    assert "limitAmps: 4 A is below one session's minimum of 6 A" in refusals["low limit"].err
    assert f"parentId: {single!r} would make a cycle" in refusals["cycle"].err
    assert f"circuit: {far!r} is not a circuit of the station's site" in refusals["other site"].err
    assert f"phases: circuit {single!r} has no L2, L3 (it has L1)" in refusals["phases"].err
    listed = (await cli("admin", "circuit", "list", "--site", site, "--json")).json()["items"]
    assert {(c["name"], c["parentId"]) for c in listed} == {("Grid", None), ("L1 feeder", grid_id)}
    shown = (await cli("admin", "station", "show", "ST-1", "--json")).json()
    assert "circuit" not in shown
