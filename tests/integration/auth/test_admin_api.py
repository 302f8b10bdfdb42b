"""Applications and groups administered over the API by an application holding the admin scopes."""

from __future__ import annotations

import pytest

from tests.integration.auth.conftest import Served

pytestmark = pytest.mark.sqlite_only(
    reason="applications and groups administered over the API: scopes, reach and problems"
)


async def admin_token(served: Served, company_id: str, *extra: str) -> str:
    return await served.token(await served.app(company_id, "applications:write", "groups:write", *extra))


async def test_admin_creates_an_application_that_gets_a_token(served: Served) -> None:
    mine = await served.tenant("ST-A")
    token = await admin_token(served, mine.company_id)
    created = await served.http.post(
        f"{served.url}/api/v1/applications", json={"name": "fleet app"}, headers={"Authorization": f"Bearer {token}"}
    )
    assert created.status_code == 201
    body = created.json()
    assert set(body) == {"client_id", "client_secret"}
    response = await served.http.post(
        served.token_url, data={"grant_type": "client_credentials"}, auth=(body["client_id"], body["client_secret"])
    )
    assert response.status_code == 200


async def test_admin_builds_a_group_and_the_member_reads_charge_points(served: Served) -> None:
    mine = await served.tenant("ST-A")
    token = await admin_token(served, mine.company_id)
    auth = {"Authorization": f"Bearer {token}"}
    created = (await served.http.post(f"{served.url}/api/v1/applications", json={"name": "p"}, headers=auth)).json()
    group = await served.http.post(
        f"{served.url}/api/v1/groups",
        json={"name": "readers", "siteId": mine.site_id, "scopes": ["charge-points:read"]},
        headers=auth,
    )
    assert group.status_code == 201 and group.json()["siteId"] == mine.site_id
    added = await served.http.put(
        f"{served.url}/api/v1/groups/{group.json()['id']}/applications/{created['client_id']}", headers=auth
    )
    assert added.status_code == 204
    member = await served.http.post(
        served.token_url,
        data={"grant_type": "client_credentials"},
        auth=(created["client_id"], created["client_secret"]),
    )
    listing = await served.get("/charge-points", member.json()["access_token"])
    assert [p["id"] for p in listing.json()["items"]] == ["ST-A"]


async def test_admin_disables_an_application(served: Served) -> None:
    mine = await served.tenant("ST-A")
    token = await admin_token(served, mine.company_id)
    partner = await served.app(mine.company_id, "sites:read")
    partner_token = await served.token(partner)
    response = await served.http.post(
        f"{served.url}/api/v1/applications/{partner.client_id}/disable", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200 and response.json()["enabled"] is False
    served.clock.advance(5)
    assert (await served.get("/sites", partner_token)).status_code == 401


async def test_another_companys_application_is_404_to_the_admin(served: Served) -> None:
    mine = await served.tenant("ST-A")
    theirs = await served.tenant("ST-B")
    token = await admin_token(served, mine.company_id)
    foreign = await served.app(theirs.company_id)
    auth = {"Authorization": f"Bearer {token}"}
    for method, path in (
        ("GET", f"/applications/{foreign.client_id}"),
        ("POST", f"/applications/{foreign.client_id}/disable"),
        ("POST", f"/applications/{foreign.client_id}/rotate-secret"),
        ("DELETE", f"/applications/{foreign.client_id}"),
    ):
        response = await served.http.request(method, f"{served.url}/api/v1{path}", headers=auth)
        assert response.status_code == 404, (method, path)
    listing = (await served.http.get(f"{served.url}/api/v1/applications", headers=auth)).json()
    assert foreign.client_id not in {a["client_id"] for a in listing["items"]}


async def test_foreign_application_cannot_join_my_group(served: Served) -> None:
    mine = await served.tenant("ST-A")
    theirs = await served.tenant("ST-B")
    token = await admin_token(served, mine.company_id)
    auth = {"Authorization": f"Bearer {token}"}
    foreign = await served.app(theirs.company_id)
    group = (
        await served.http.post(
            f"{served.url}/api/v1/groups", json={"name": "g", "scopes": ["sites:read"]}, headers=auth
        )
    ).json()
    response = await served.http.put(
        f"{served.url}/api/v1/groups/{group['id']}/applications/{foreign.client_id}", headers=auth
    )
    assert response.status_code == 404


async def test_group_on_another_companys_site_is_refused(served: Served) -> None:
    mine = await served.tenant("ST-A")
    theirs = await served.tenant("ST-B")
    token = await admin_token(served, mine.company_id)
    response = await served.http.post(
        f"{served.url}/api/v1/groups",
        json={"name": "g", "siteId": theirs.site_id, "scopes": ["sites:read"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 404


async def test_unknown_scope_in_a_group_is_422(served: Served) -> None:
    mine = await served.tenant("ST-A")
    token = await admin_token(served, mine.company_id)
    response = await served.http.post(
        f"{served.url}/api/v1/groups",
        json={"name": "g", "scopes": ["root"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 422 and response.json()["field"] == "scopes.0"  # the document lists the scopes


async def test_site_level_admin_cannot_manage_applications(served: Served) -> None:
    mine = await served.tenant("ST-A")
    token = await served.token(await served.app(mine.company_id, "applications:write", site_id=mine.site_id))
    response = await served.http.get(f"{served.url}/api/v1/applications", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]


async def test_reader_cannot_administer(served: Served) -> None:
    mine = await served.tenant("ST-A")
    token = await served.token(await served.app(mine.company_id, "sites:read"))
    response = await served.http.post(
        f"{served.url}/api/v1/applications", json={"name": "x"}, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 403
