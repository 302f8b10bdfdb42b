"""Every administrative operation of the command line is an API operation over the same use case (decisions.md
§3): sites, stations with their charge points, and local authorization lists, on the real app over ASGI, on
SQLite (the use cases have their own tests on both stores). Each is tested like the rest of the API: it works, it
needs its scope (403), another company's object is 404, and a malformed body is 422."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from chargenet.app import AppContext, create_app, open_context
from chargenet.clock import ManualClock
from chargenet.config import load_settings
from tests.factories import Tenant, make_tenant, partner_token

pytestmark = pytest.mark.sqlite_only(
    reason="each operation's scope, reach and body checks over the API; the use cases' stores have their own tests"
)


@dataclass
class Api:
    context: AppContext
    client: httpx.AsyncClient
    tenant: Tenant
    other: Tenant

    async def as_(self, *scopes: str) -> dict[str, str]:
        token = await partner_token(self.context, self.tenant.company_id, scopes)
        return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def api(database_url: str, tmp_path: Path, clock: ManualClock) -> AsyncIterator[Api]:
    settings = load_settings({"database_url": database_url, "data_dir": str(tmp_path / "data")}, environ={})
    context = await open_context(settings, clock=clock)
    try:
        tenant = await make_tenant(context.store, context.keys, clock.now(), station_id="ST-1")
        other = await make_tenant(context.store, context.keys, clock.now(), station_id="ST-OTHER")
        transport = httpx.ASGITransport(app=create_app(context))
        async with httpx.AsyncClient(transport=transport, base_url="http://test/api/v1") as client:
            yield Api(context, client, tenant, other)
    finally:
        await context.close()


Call = Callable[[Api, dict[str, str]], Awaitable[httpx.Response]]


@dataclass(frozen=True)
class Operation:
    """One administrative operation: how to call it on the caller's own objects, on another company's, and with
    a malformed body (None when it takes no body)."""

    scope: str
    own: Call
    foreign: Call
    malformed: Call | None
    status: int = 200


OPERATIONS: dict[str, Operation] = {
    "create site": Operation(
        "sites:write",
        lambda api, h: api.client.post("/sites", json={"name": "North"}, headers=h),
        lambda api, h: api.client.post("/sites", json={"name": "North", "companyId": api.other.company_id}, headers=h),
        lambda api, h: api.client.post("/sites", json={"name": 7, "colour": "red"}, headers=h),
        201,
    ),
    "change site": Operation(
        "sites:write",
        lambda api, h: api.client.patch(f"/sites/{api.tenant.site_id}", json={"name": "South"}, headers=h),
        lambda api, h: api.client.patch(f"/sites/{api.other.site_id}", json={"name": "South"}, headers=h),
        lambda api, h: api.client.patch(f"/sites/{api.tenant.site_id}", json={"name": ["South"]}, headers=h),
    ),
    "list stations": Operation(
        "sites:read",
        lambda api, h: api.client.get("/stations", headers=h),
        lambda api, h: api.client.get("/stations", params={"siteId": api.other.site_id}, headers=h),
        None,
    ),
    "show station": Operation(
        "sites:read",
        lambda api, h: api.client.get("/stations/ST-1", headers=h),
        lambda api, h: api.client.get("/stations/ST-OTHER", headers=h),
        None,
    ),
    "create station": Operation(
        "sites:write",
        lambda api, h: api.client.post(
            "/stations",
            json={"siteId": api.tenant.site_id, "id": "ST-NEW", "chargePoints": 2, "connectors": 1},
            headers=h,
        ),
        lambda api, h: api.client.post("/stations", json={"siteId": api.other.site_id, "id": "ST-NEW"}, headers=h),
        lambda api, h: api.client.post("/stations", json={"siteId": api.tenant.site_id}, headers=h),
        201,
    ),
    "change station": Operation(
        "sites:write",
        lambda api, h: api.client.patch("/stations/ST-1", json={"password": "0123456789abcdef"}, headers=h),
        lambda api, h: api.client.patch("/stations/ST-OTHER", json={"password": "0123456789abcdef"}, headers=h),
        lambda api, h: api.client.patch("/stations/ST-1", json={"password": 12}, headers=h),
    ),
    "list local authorization": Operation(
        "sites:read",
        lambda api, h: api.client.get(f"/sites/{api.tenant.site_id}/local-authorization-list", headers=h),
        lambda api, h: api.client.get(f"/sites/{api.other.site_id}/local-authorization-list", headers=h),
        None,
    ),
    "put local authorization": Operation(
        "sites:write",
        lambda api, h: api.client.put(
            f"/sites/{api.tenant.site_id}/local-authorization-list/TAG1", json={"status": "Blocked"}, headers=h
        ),
        lambda api, h: api.client.put(f"/sites/{api.other.site_id}/local-authorization-list/TAG1", json={}, headers=h),
        lambda api, h: api.client.put(
            f"/sites/{api.tenant.site_id}/local-authorization-list/TAG1", json={"status": "Maybe"}, headers=h
        ),
    ),
}


@pytest.mark.parametrize("name", OPERATIONS)
async def test_operation_works_with_its_scope(api: Api, name: str) -> None:
    operation = OPERATIONS[name]
    response = await operation.own(api, await api.as_(operation.scope))
    assert response.status_code == operation.status, response.text


@pytest.mark.parametrize("name", OPERATIONS)
async def test_operation_without_its_scope_is_403(api: Api, name: str) -> None:
    operation = OPERATIONS[name]
    other_scope = "meters:read" if operation.scope != "meters:read" else "sites:read"
    response = await operation.own(api, await api.as_(other_scope))
    assert response.status_code == 403
    assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize("name", OPERATIONS)
async def test_another_companys_object_is_404_or_not_listed(api: Api, name: str) -> None:
    operation = OPERATIONS[name]
    response = await operation.foreign(api, await api.as_(operation.scope))
    if name == "list stations":
        # A list filtered by a site the caller does not reach is empty, never 404 (decisions.md).
        assert response.status_code == 200 and response.json()["items"] == []
    else:
        assert response.status_code == 404, response.text


@pytest.mark.parametrize("name", [name for name, operation in OPERATIONS.items() if operation.malformed])
async def test_malformed_body_is_422(api: Api, name: str) -> None:
    operation = OPERATIONS[name]
    assert operation.malformed is not None
    response = await operation.malformed(api, await api.as_(operation.scope))
    assert response.status_code == 422, response.text


async def test_site_created_over_the_api_is_the_one_the_cli_shows(api: Api) -> None:
    headers = await api.as_("sites:write", "sites:read")
    body = {"name": "North", "upstreamUrl": "wss://cpo.example/ocpp", "upstreamPassword": "secret"}
    created = (await api.client.post("/sites", json=body, headers=headers)).json()
    assert created["companyId"] == api.tenant.company_id
    assert (created["upstreamUrl"], created["upstreamPasswordSet"]) == ("wss://cpo.example/ocpp", True)
    shown = (await api.client.get(f"/sites/{created['id']}", headers=headers)).json()
    assert shown == created


async def test_a_sites_security_profile_towards_its_upstream_is_changed_over_the_api_and_checked(api: Api) -> None:
    headers = await api.as_("sites:write", "sites:read")
    site = f"/sites/{api.tenant.site_id}"
    body = {"upstreamUrl": "wss://cpo.example/ocpp", "upstreamSecurityProfile": 2}
    changed = (await api.client.patch(site, json=body, headers=headers)).json()
    assert (changed["upstreamSecurityProfile"], changed["upstreamClientCertificate"]) == (2, None)
    over_ws = await api.client.patch(site, json={"upstreamUrl": "ws://cpo.example/ocpp"}, headers=headers)
    assert over_ws.status_code == 422 and "wss://" in over_ws.text
    no_certificate = await api.client.patch(site, json={"upstreamSecurityProfile": 3}, headers=headers)
    assert no_certificate.status_code == 422 and "client certificate" in no_certificate.text
    body = {"upstreamUrl": "ws://cpo.example/ocpp", "upstreamSecurityProfile": 1}
    assert (await api.client.patch(site, json=body, headers=headers)).json()["upstreamSecurityProfile"] == 1


async def test_station_created_over_the_api_has_its_charge_points(api: Api) -> None:
    headers = await api.as_("sites:write", "charge-points:read")
    body = {"siteId": api.tenant.site_id, "id": "ST-NEW", "chargePoints": 2, "connectors": 2}
    created = (await api.client.post("/stations", json=body, headers=headers)).json()
    assert created["chargePointIds"] == ["ST-NEW-1", "ST-NEW-2"] and created["securityProfile"] == 0
    points = (await api.client.get("/charge-points", params={"siteId": api.tenant.site_id}, headers=headers)).json()
    assert {"ST-NEW-1", "ST-NEW-2"} <= {p["id"] for p in points["items"]}


async def test_a_stations_ocpp_versions_are_pinned_and_changed_over_the_api(api: Api) -> None:
    headers = await api.as_("sites:write", "sites:read")
    body = {"siteId": api.tenant.site_id, "id": "ST-16", "ocppVersions": ["ocpp1.6"]}
    created = (await api.client.post("/stations", json=body, headers=headers)).json()
    assert (created["ocppVersions"], created["ocppVersion"]) == (["ocpp1.6"], None)
    changed = await api.client.patch(
        "/stations/ST-16", json={"ocppVersions": ["ocpp2.0.1", "ocpp1.6"]}, headers=headers
    )
    assert changed.json()["ocppVersions"] == ["ocpp2.0.1", "ocpp1.6"]
    refused = await api.client.patch("/stations/ST-16", json={"ocppVersions": ["ocpp2.0"]}, headers=headers)
    assert refused.status_code == 422


async def test_local_authorization_entry_is_put_listed_and_removed(api: Api) -> None:
    headers = await api.as_("sites:write", "sites:read")
    base = f"/sites/{api.tenant.site_id}/local-authorization-list"
    put = await api.client.put(f"{base}/TAG1", json={"expiresAt": "2030-01-01T00:00:00+00:00"}, headers=headers)
    assert put.json() == {
        "siteId": api.tenant.site_id,
        "idTag": "TAG1",
        "status": "Accepted",
        "expiresAt": "2030-01-01T00:00:00+00:00",
        "idTokenType": "ISO14443",
        "version": 1,
    }
    listed = (await api.client.get(base, headers=headers)).json()
    assert [e["idTag"] for e in listed["items"]] == ["TAG1"] and listed["next"] is None
    assert (await api.client.delete(f"{base}/TAG1", headers=headers)).status_code == 204
    assert (await api.client.delete(f"{base}/TAG1", headers=headers)).status_code == 404


async def test_a_local_authorization_entry_changed_at_its_version_answers_the_new_version(api: Api) -> None:
    headers = await api.as_("sites:write")
    tag = f"/sites/{api.tenant.site_id}/local-authorization-list/TAG1"
    assert (await api.client.put(tag, json={}, headers=headers)).json()["version"] == 1
    changed = await api.client.put(tag, json={"status": "Blocked", "version": 1}, headers=headers)
    assert changed.status_code == 200 and (changed.json()["status"], changed.json()["version"]) == ("Blocked", 2)


async def test_a_local_authorization_entry_changed_from_an_older_version_is_a_409_problem(api: Api) -> None:
    headers = await api.as_("sites:write", "sites:read")
    tag = f"/sites/{api.tenant.site_id}/local-authorization-list/TAG1"
    await api.client.put(tag, json={}, headers=headers)
    await api.client.put(tag, json={"status": "Blocked", "version": 1}, headers=headers)  # someone else's change
    stale = await api.client.put(tag, json={"status": "Expired", "version": 1}, headers=headers)
    assert stale.status_code == 409 and stale.headers["content-type"] == "application/problem+json"
    assert "changed by someone else meanwhile" in stale.json()["detail"]
    listed = (await api.client.get(f"/sites/{api.tenant.site_id}/local-authorization-list", headers=headers)).json()
    assert [(e["status"], e["version"]) for e in listed["items"]] == [("Blocked", 2)]


async def test_every_operation_names_its_success_schema(api: Api) -> None:
    document = (await api.client.get("/openapi.json")).json()
    unnamed = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            success = {code: answer for code, answer in operation["responses"].items() if code.startswith("2")}
            assert success, (method, path)
            for code, answer in success.items():
                content = answer.get("content", {})
                if code == "204" or _a_file(content):
                    continue
                schema = content.get("application/json", {}).get("schema", {})
                if "$ref" not in schema:
                    unnamed.append((method, path, code))
    assert unnamed == []


def _a_file(content: dict[str, Any]) -> bool:
    """A download (a station's log as it sent it): bytes, which no JSON schema names."""
    return (
        bool(content)
        and "application/json" not in content
        and all(media.get("schema", {}).get("format") == "binary" for media in content.values())
    )
