"""The command line's changes to sites, stations, local lists and meters leave audit records, written by the
service functions themselves in the change's transaction, naming the local operator and never a key."""

from __future__ import annotations

from pathlib import Path

import pytest

from chargenet.services import audit
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from chargenet.store.db import Store
from tests.integration.cli.conftest import cli  # noqa: F401  (the fixture)

pytestmark = pytest.mark.sqlite_only(
    reason="what the command line records as the local operator; the audit log's store has its own tests"
)

KEY = "0123456789abcdef-key"
UPSTREAM = "upstream-secret-1"


async def test_cli_changes_are_audited_as_the_local_operator(cli, database_url: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()["id"]
    site = (await cli("admin", "site", "create", "--company", company, "Depot", "--json")).json()["id"]
    commands = [
        ("admin", "site", "update", site, "--upstream-url", "wss://cpo.example/ocpp", "--upstream-password", UPSTREAM),
        ("admin", "site", "update", site, "--upstream-ocpp-versions", "ocpp1.6,ocpp2.0.1"),
        ("admin", "station", "create", "--site", site, "CS-1", "--password", KEY, "--connectors", "2"),
        ("admin", "station", "update", "CS-1", "--upstream-password", UPSTREAM),
        ("admin", "localauth", "add", "--site", site, "TAG-1", "--status", "Blocked"),
        ("admin", "localauth", "remove", "--site", site, "TAG-1"),
    ]
    for command in commands:
        result = await cli(*command)
        assert result.code == 0, (command, result.err)
    meter = (
        await cli(
            "admin",
            "meter",
            "create",
            "--site",
            site,
            "--station",
            "CS-1",
            "--profile",
            "sdm630",
            "--tcp",
            "192.0.2.3",
            "--unit",
            "1",
            "--json",
        )
    ).json()["id"]
    assert (await cli("admin", "meter", "update", meter, "--poll-interval", "7")).code == 0
    assert (await cli("admin", "meter", "disable", meter)).code == 0

    store = Store(database_url)
    try:
        async with store.transaction() as session:
            found = await audit.list_records(session, OPERATOR, PageRequest(50), company_id=company)
    finally:
        await store.dispose()
    trail = [(entry.action, entry.object_id) for entry in reversed(found.items)]
    assert trail == [
        ("company.create", company),
        ("site.create", site),
        ("site.update", site),
        ("site.update", site),
        ("station.create", "CS-1"),
        ("station.update", "CS-1"),
        ("localauth.add", f"{site}/TAG-1"),
        ("localauth.remove", f"{site}/TAG-1"),
        ("meter.create", meter),
        ("meter.update", meter),
        ("meter.disable", meter),
    ]
    assert {(entry.actor, entry.face) for entry in found.items} == {("local operator", "cli")}
    versions = next(entry for entry in found.items if entry.detail.get("changed") == "upstream OCPP versions")
    assert versions.detail["upstream OCPP versions"] == "ocpp1.6, ocpp2.0.1"
    assert KEY not in repr(found) and UPSTREAM not in repr(found)


async def test_site_delete_refuses_a_site_with_stations_and_deletes_an_empty_one(cli) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()["id"]
    site = (await cli("admin", "site", "create", "--company", company, "Depot", "--json")).json()["id"]
    assert (await cli("admin", "station", "create", "--site", site, "CS-1", "--password", KEY)).code == 0
    refused = await cli("admin", "site", "delete", site)
    assert refused.code != 0 and f"site {site} still has stations; delete them first" in refused.err
    empty = (await cli("admin", "site", "create", "--company", company, "Spare", "--json")).json()["id"]
    deleted = await cli("admin", "site", "delete", empty, "--json")
    assert deleted.code == 0 and deleted.json() == {"id": empty, "deleted": True}
    assert (await cli("admin", "site", "show", empty)).code != 0
