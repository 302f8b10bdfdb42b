"""`GET /applications` and `GET /groups` page with `?limit=` and `?cursor=` (decisions.md §1), within the
caller's company, on both backends."""

from __future__ import annotations

from typing import Any

import pytest

from chargenet.api.pagination import encode_cursor
from chargenet.services import groups
from chargenet.services.callers import OPERATOR
from tests.integration.auth.conftest import Served
from tests.integration.auth.test_protected_api import assert_problem

ADMIN_SCOPES = ("applications:write", "groups:write")


async def add_groups(served: Served, company_id: str, count: int, site_id: str | None = None) -> list[str]:
    async with served.context.store.transaction() as session:
        created = [
            await groups.create_group(
                session,
                OPERATOR,
                company_id=company_id,
                site_id=site_id,
                name=f"g{i}",
                scopes=["sites:read"],
                now=served.clock.now(),
            )
            for i in range(count)
        ]
    return [g.id for g in created]


async def walk(served: Served, path: str, token: str, limit: int) -> list[dict[str, Any]]:
    """Every page of `path`, following `next` until null; each page but the last is full."""
    pages: list[list[dict[str, Any]]] = []
    params = {"limit": str(limit)}
    while True:
        response = await served.get(path, token, **params)
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) == {"items", "next"}
        pages.append(body["items"])
        if body["next"] is None:
            break
        assert len(pages) < 20, "the cursor does not advance"
        params = {"limit": str(limit), "cursor": body["next"]}
    assert all(len(page) == limit for page in pages[:-1]) and 0 < len(pages[-1]) <= limit
    return [item for page in pages for item in page]


@pytest.fixture
async def two_companies(served: Served) -> tuple[str, str, str]:
    """My company with 5 applications and 5 groups (the admin's own among them), and another company
    with applications and groups of its own. Answers (my company, their company, admin token)."""
    mine = await served.tenant("ST-A")
    theirs = await served.tenant("ST-B")
    admin = await served.app(mine.company_id, *ADMIN_SCOPES)
    for _ in range(4):
        await served.app(mine.company_id)
    await add_groups(served, mine.company_id, 4)
    for _ in range(3):
        await served.app(theirs.company_id, *ADMIN_SCOPES)
    await add_groups(served, theirs.company_id, 2, site_id=theirs.site_id)
    return mine.company_id, theirs.company_id, await served.token(admin)


async def test_applications_page_by_two_over_five(served: Served, two_companies: tuple[str, str, str]) -> None:
    mine, _, token = two_companies
    items = await walk(served, "/applications", token, 2)
    ids = [a["client_id"] for a in items]
    assert len(ids) == 5 and len(set(ids)) == 5
    assert ids == sorted(ids)
    assert {a["companyId"] for a in items} == {mine}


async def test_applications_pages_are_the_whole_list(served: Served, two_companies: tuple[str, str, str]) -> None:
    _, _, token = two_companies
    whole = (await served.get("/applications", token)).json()
    assert whole["next"] is None
    assert [a["client_id"] for a in await walk(served, "/applications", token, 2)] == [
        a["client_id"] for a in whole["items"]
    ]


async def test_groups_page_by_two_over_five(served: Served, two_companies: tuple[str, str, str]) -> None:
    mine, _, token = two_companies
    items = await walk(served, "/groups", token, 2)
    ids = [g["id"] for g in items]
    assert len(ids) == 5 and len(set(ids)) == 5
    assert ids == sorted(ids)
    assert {g["companyId"] for g in items} == {mine}


async def test_group_members_are_listed_on_their_page(served: Served, two_companies: tuple[str, str, str]) -> None:
    _, _, token = two_companies
    items = await walk(served, "/groups", token, 2)
    assert sorted(len(g["clientIds"]) for g in items) == [0, 0, 0, 0, 1]


async def test_exactly_full_last_page_answers_next_null(served: Served, two_companies: tuple[str, str, str]) -> None:
    _, _, token = two_companies
    for path in ("/applications", "/groups"):
        body = (await served.get(path, token, limit="5")).json()
        assert (len(body["items"]), body["next"]) == (5, None), path


async def test_site_level_group_admin_pages_only_its_sites_groups(served: Served) -> None:
    mine = await served.tenant("ST-A")
    await add_groups(served, mine.company_id, 3)
    at_site = await add_groups(served, mine.company_id, 4, site_id=mine.site_id)
    admin = await served.app(mine.company_id, "groups:write", site_id=mine.site_id)
    items = await walk(served, "/groups", await served.token(admin), 2)
    # Its own group is anchored at the site too.
    assert len(items) == 5 and set(at_site) < {g["id"] for g in items}
    assert {g["siteId"] for g in items} == {mine.site_id}


@pytest.mark.sqlite_only(reason="a cursor or a limit refused before the store is read")
@pytest.mark.parametrize("path", ["/applications", "/groups"])
@pytest.mark.parametrize("cursor", ["!!!", "not a cursor", "="])
async def test_bad_cursor_is_422_naming_cursor(
    served: Served, two_companies: tuple[str, str, str], path: str, cursor: str
) -> None:
    _, _, token = two_companies
    response = await served.get(path, token, cursor=cursor)
    assert_problem(422, response)
    assert response.json()["field"] == "cursor"


@pytest.mark.parametrize("path", ["/applications", "/groups"])
@pytest.mark.parametrize("cursor", ["gICA", "0000", "A"])  # "A": base64url's alphabet, but no length decodes
async def test_cursor_no_page_gave_is_404(
    served: Served, two_companies: tuple[str, str, str], path: str, cursor: str
) -> None:
    # Base64url as the document says a cursor is, but of no key a page showed: it names no page.
    _, _, token = two_companies
    assert_problem(404, await served.get(path, token, cursor=cursor))


@pytest.mark.sqlite_only(reason="a cursor or a limit refused before the store is read")
@pytest.mark.parametrize("path", ["/applications", "/groups"])
@pytest.mark.parametrize("limit", ["0", "501", "-1", "two"])
async def test_limit_outside_1_to_500_is_422(
    served: Served, two_companies: tuple[str, str, str], path: str, limit: str
) -> None:
    _, _, token = two_companies
    assert_problem(422, await served.get(path, token, limit=limit))


@pytest.mark.parametrize("path", ["/applications", "/groups"])
async def test_limit_500_is_accepted(served: Served, two_companies: tuple[str, str, str], path: str) -> None:
    _, _, token = two_companies
    body = (await served.get(path, token, limit="500")).json()
    assert (len(body["items"]), body["next"]) == (5, None)


async def test_any_cursor_stays_within_my_company(served: Served, two_companies: tuple[str, str, str]) -> None:
    """A cursor is only a position in the caller's own list: one made up before every id reveals nothing else."""
    mine, theirs, token = two_companies
    for path in ("/applications", "/groups"):
        response = await served.get(path, token, cursor=encode_cursor("0"))
        assert len(response.json()["items"]) == 5
        assert {item["companyId"] for item in response.json()["items"]} == {mine}
        assert theirs not in response.text
