from __future__ import annotations

import pytest

from tests.integration.cli.helpers import company_and_site

pytestmark = pytest.mark.sqlite_only(reason="the command line's arguments, output and exit codes")


async def test_localauth_add_prints_site_tag_and_status(cli) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    added = (await cli("admin", "localauth", "add", "--site", site, "TAG1", "--status", "Blocked", "--json")).json()
    assert added == {"siteId": site, "idTag": "TAG1", "status": "Blocked", "idTokenType": "ISO14443", "version": 1}


async def test_localauth_list_and_remove(cli) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    await cli("admin", "localauth", "add", "--site", site, "B", "--expires", "2030-01-01T00:00:00+00:00")
    await cli("admin", "localauth", "add", "--site", site, "A")
    listing = (await cli("admin", "localauth", "list", "--site", site, "--json")).json()
    assert [(e["idTag"], e.get("expiresAt")) for e in listing["items"]] == [
        ("A", None),
        ("B", "2030-01-01T00:00:00+00:00"),
    ]
    assert (await cli("admin", "localauth", "remove", "--site", site, "A")).code == 0
    listing = (await cli("admin", "localauth", "list", "--site", site, "--json")).json()
    assert [e["idTag"] for e in listing["items"]] == ["B"]


async def test_localauth_takes_a_2_0_1_token_of_36_characters_with_its_type_and_no_longer(cli) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    token = "NL-TNM-C12345678-X-EXTRA-LONG-TOKEN1"  # 36 characters
    added = (await cli("admin", "localauth", "add", "--site", site, token, "--type", "eMAID", "--json")).json()
    assert (added["idTag"], added["idTokenType"]) == (token, "eMAID")
    result = await cli("admin", "localauth", "add", "--site", site, "x" * 37)
    assert result.code != 0 and "idTag" in result.err


async def test_localauth_removing_an_absent_tag_is_not_found(cli) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    assert (await cli("admin", "localauth", "remove", "--site", site, "NOPE")).code != 0
