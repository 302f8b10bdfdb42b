"""Every `chargenet admin NOUN list --json` prints one object, `{"items": [...]}` (decisions.md §4)."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import make_url

pytestmark = pytest.mark.sqlite_only(reason="the command line's output")


async def test_each_list_prints_one_items_object(cli) -> None:  # type: ignore[no-untyped-def]
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()["id"]
    site = (await cli("admin", "site", "create", "--company", company, "Depot", "--json")).json()["id"]
    await cli("admin", "station", "create", "--site", site, "ST-1", "--password", "0123456789abcdef", "--json")
    client_id = (await cli("admin", "app", "create", "--company", company, "p", "--json")).json()["client_id"]
    group = (
        await cli("admin", "group", "create", "--company", company, "g", "--scope", "sites:read", "--json")
    ).json()["id"]
    listings = {
        "company": ((), "id", company),
        "site": (("--company", company), "id", site),
        "station": (("--site", site), "id", "ST-1"),
        "app": (("--company", company), "client_id", client_id),
        "group": (("--company", company), "id", group),
    }
    for noun, (flags, key, expected) in listings.items():
        result = await cli("admin", noun, "list", *flags, "--json")
        assert result.code == 0, (noun, result.err)
        assert result.out.count("\n") == 1, noun
        body = result.json()
        assert set(body) == {"items"} and isinstance(body["items"], list), noun
        assert [item[key] for item in body["items"]] == [expected], noun


async def test_empty_lists_print_no_items(cli) -> None:  # type: ignore[no-untyped-def]
    for noun in ("company", "site", "station", "app", "group"):
        assert (await cli("admin", noun, "list", "--json")).json() == {"items": []}, noun


# SQLite alone: a PostgreSQL reader never waits for a writer, whatever the command's unit.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_list_and_a_show_do_not_wait_for_a_process_that_is_writing(cli, database_url: str) -> None:  # type: ignore[no-untyped-def]
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()["id"]
    # A serving process in the middle of a write holds SQLite's one writer lock until it commits.
    writer = sqlite3.connect(make_url(database_url).database or "", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        listed = await cli("admin", "company", "list", "--json")
        shown = await cli("admin", "company", "show", company, "--json")
    finally:
        writer.rollback()
        writer.close()
    assert listed.code == 0, listed.err
    assert [item["id"] for item in listed.json()["items"]] == [company]
    assert shown.code == 0, shown.err
    assert shown.json()["id"] == company
