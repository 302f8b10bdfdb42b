"""The bearer check and the first endpoints over real HTTP: RFC 6750 challenges, RFC 9457 bodies,
RFC 8725 refusals, revocation within 5 s, and tenant isolation."""

from __future__ import annotations

import base64
import json

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from chargenet.auth.keyring import PUBLISH_AHEAD
from chargenet.auth.keys import SigningKeys
from chargenet.services import applications, groups
from chargenet.services.callers import OPERATOR
from tests.factories import add_station
from tests.integration.auth.conftest import Served

REVOCATION_WINDOW = 5


def assert_problem(response_status: int, response: object) -> None:
    import httpx

    assert isinstance(response, httpx.Response)
    assert response.status_code == response_status
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == response_status


@pytest.mark.sqlite_only(reason="a bearer token refused before the store is read")
async def test_missing_token_gets_a_challenge_without_error(served: Served) -> None:
    response = await served.get("/charge-points")
    assert_problem(401, response)
    assert response.headers["www-authenticate"] == 'Bearer realm="chargenet"'


@pytest.mark.sqlite_only(reason="a bearer token refused before the store is read")
async def test_other_scheme_gets_a_challenge_without_error(served: Served) -> None:
    response = await served.http.get(f"{served.url}/api/v1/sites", headers={"Authorization": "Basic YTpi"})
    assert_problem(401, response)
    assert "error=" not in response.headers["www-authenticate"]


@pytest.mark.sqlite_only(reason="a bearer token refused before the store is read")
async def test_garbage_token_is_invalid_token(served: Served) -> None:
    response = await served.get("/charge-points", "not-a-jwt")
    assert_problem(401, response)
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


@pytest.mark.sqlite_only(reason="a bearer token refused before the store is read")
async def test_token_signed_by_another_key_is_invalid_token(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "charge-points:read")
    genuine = await served.token(app)
    header = json.loads(base64.urlsafe_b64decode(genuine.split(".")[0] + "=="))
    claims = json.loads(base64.urlsafe_b64decode(genuine.split(".")[1] + "=="))
    forged = jwt.encode(header, claims, RSAKey.generate_key(2048), algorithms=["RS256"])
    response = await served.get("/charge-points", forged)
    assert_problem(401, response)
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


@pytest.mark.sqlite_only(reason="a bearer token refused before the store is read")
async def test_alg_none_token_is_invalid_token(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "charge-points:read")
    genuine = await served.token(app)
    head = base64.urlsafe_b64encode(json.dumps({"alg": "none", "typ": "at+jwt"}).encode()).rstrip(b"=").decode()
    response = await served.get("/charge-points", f"{head}.{genuine.split('.')[1]}.")
    assert_problem(401, response)


@pytest.mark.sqlite_only(reason="a bearer token refused before the store is read")
async def test_expired_token_is_invalid_token(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "charge-points:read")
    token = await served.token(app)
    assert (await served.get("/charge-points", token)).status_code == 200
    served.clock.advance(900 + 31)
    assert_problem(401, await served.get("/charge-points", token))


async def test_token_without_the_scope_gets_403_insufficient_scope(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "sites:read")
    response = await served.get("/charge-points", await served.token(app))
    assert_problem(403, response)
    assert response.headers["www-authenticate"] == (
        'Bearer realm="chargenet", error="insufficient_scope", scope="charge-points:read"'
    )


async def test_list_shows_only_what_the_groups_reach(served: Served) -> None:
    mine = await served.tenant("ST-A")
    theirs = await served.tenant("ST-B")
    app = await served.app(mine.company_id, "charge-points:read", "sites:read")
    token = await served.token(app)
    points = (await served.get("/charge-points", token)).json()
    assert [p["id"] for p in points["items"]] == ["ST-A"] and points["next"] is None
    assert [c["connectorId"] for c in points["items"][0]["connectors"]] == [1, 2]
    sites = (await served.get("/sites", token)).json()["items"]
    assert [s["id"] for s in sites] == [mine.site_id]
    assert theirs.site_id not in json.dumps(sites)


async def test_another_companys_objects_are_404(served: Served) -> None:
    mine = await served.tenant("ST-A")
    theirs = await served.tenant("ST-B")
    token = await served.token(await served.app(mine.company_id, "charge-points:read", "sites:read"))
    assert_problem(404, await served.get("/charge-points/ST-B", token))
    assert_problem(404, await served.get(f"/sites/{theirs.site_id}", token))
    missing = await served.get("/charge-points/NO-SUCH", token)
    foreign = await served.get("/charge-points/ST-B", token)
    assert missing.json()["title"] == foreign.json()["title"]
    assert (await served.get("/charge-points/ST-A", token)).json()["id"] == "ST-A"
    assert (await served.get(f"/sites/{mine.site_id}", token)).json()["id"] == mine.site_id


async def test_site_filter_of_another_company_lists_nothing(served: Served) -> None:
    mine = await served.tenant("ST-A")
    theirs = await served.tenant("ST-B")
    token = await served.token(await served.app(mine.company_id, "charge-points:read"))
    assert (await served.get("/charge-points", token, siteId=theirs.site_id)).json() == {"items": [], "next": None}
    assert len((await served.get("/charge-points", token, siteId=mine.site_id)).json()["items"]) == 1


async def test_site_group_reaches_its_site_only(served: Served) -> None:
    mine = await served.tenant("ST-A")
    async with served.context.store.transaction() as session:
        from chargenet.services import sites

        other = await sites.create_site(
            session,
            OPERATOR,
            served.context.keys.credential_cipher(),
            company_id=mine.company_id,
            name="B",
            now=served.clock.now(),
        )
        await add_station(session, served.context.keys, other.id, "ST-A2", served.clock.now())
    token = await served.token(await served.app(mine.company_id, "charge-points:read", site_id=other.id))
    assert [p["id"] for p in (await served.get("/charge-points", token)).json()["items"]] == ["ST-A2"]
    assert_problem(404, await served.get("/charge-points/ST-A", token))


async def test_pagination_follows_next(served: Served) -> None:
    mine = await served.tenant("ST-A")
    async with served.context.store.transaction() as session:
        for station in ("ST-C", "ST-B"):
            await add_station(session, served.context.keys, mine.site_id, station, served.clock.now())
    token = await served.token(await served.app(mine.company_id, "charge-points:read"))
    seen: list[str] = []
    params: dict[str, str] = {"limit": "2"}
    while True:
        page = (await served.get("/charge-points", token, **params)).json()
        seen += [p["id"] for p in page["items"]]
        if page["next"] is None:
            break
        params = {"limit": "2", "cursor": page["next"]}
    assert seen == ["ST-A", "ST-B", "ST-C"]


@pytest.mark.sqlite_only(reason="a request refused before the store is read")
async def test_limit_above_500_is_refused(served: Served) -> None:
    mine = await served.tenant("ST-A")
    token = await served.token(await served.app(mine.company_id, "charge-points:read"))
    assert_problem(422, await served.get("/charge-points", token, limit="501"))


async def test_disabling_an_application_revokes_its_tokens_within_5_seconds(served: Served) -> None:
    mine = await served.tenant("ST-A")
    app = await served.app(mine.company_id, "charge-points:read")
    token = await served.token(app)
    assert (await served.get("/charge-points", token)).status_code == 200
    async with served.context.store.transaction() as session:
        await applications.set_enabled(session, OPERATOR, app.client_id, enabled=False, now=served.clock.now())
    served.clock.advance(REVOCATION_WINDOW)
    response = await served.get("/charge-points", token)
    assert_problem(401, response)
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


async def test_deleting_an_application_revokes_its_tokens_within_5_seconds(served: Served) -> None:
    mine = await served.tenant("ST-A")
    app = await served.app(mine.company_id, "charge-points:read")
    token = await served.token(app)
    assert (await served.get("/charge-points", token)).status_code == 200
    async with served.context.store.transaction() as session:
        await applications.delete_application(session, OPERATOR, app.client_id, now=served.clock.now())
    served.clock.advance(REVOCATION_WINDOW)
    assert_problem(401, await served.get("/charge-points", token))


async def test_rotating_the_secret_revokes_its_tokens_within_5_seconds(served: Served) -> None:
    mine = await served.tenant("ST-A")
    app = await served.app(mine.company_id, "charge-points:read")
    token = await served.token(app)
    assert (await served.get("/charge-points", token)).status_code == 200
    async with served.context.store.transaction() as session:
        new = await applications.rotate_secret(
            session, OPERATOR, served.context.keys.secret_hasher(), app.client_id, now=served.clock.now()
        )
    served.clock.advance(REVOCATION_WINDOW)
    assert_problem(401, await served.get("/charge-points", token))
    assert (await served.get("/charge-points", await served.token(new))).status_code == 200


async def test_leaving_the_group_revokes_the_permission_within_5_seconds(served: Served) -> None:
    mine = await served.tenant("ST-A")
    app = await served.app(mine.company_id, "charge-points:read")
    token = await served.token(app)
    assert (await served.get("/charge-points", token)).status_code == 200
    async with served.context.store.transaction() as session:
        (group_id,) = (await applications.get_application(session, OPERATOR, app.client_id)).group_ids
        await groups.remove_app(session, OPERATOR, group_id, app.client_id, now=served.clock.now())
    served.clock.advance(REVOCATION_WINDOW)
    assert_problem(403, await served.get("/charge-points", token))


async def test_joining_a_group_grants_at_once_to_issued_tokens(served: Served) -> None:
    mine = await served.tenant("ST-A")
    app = await served.app(mine.company_id)
    token = await served.token(app)
    assert_problem(403, await served.get("/sites", token))
    async with served.context.store.transaction() as session:
        group = await groups.create_group(
            session, OPERATOR, company_id=mine.company_id, name="late", scopes=["sites:read"], now=served.clock.now()
        )
        await groups.add_app(session, OPERATOR, group.id, app.client_id, now=served.clock.now())
    served.clock.advance(REVOCATION_WINDOW)
    assert (await served.get("/sites", token)).status_code == 200


async def test_token_key_rotation_keeps_old_tokens_valid_and_signs_with_the_new_key(served: Served) -> None:
    mine = await served.tenant("ST-A")
    app = await served.app(mine.company_id, "charge-points:read")
    old_token = await served.token(app)
    ring = SigningKeys(served.context.keys).rotate_token_key(served.clock.now())
    new_kid = ring.entries[-1].kid
    served.clock.advance(3)
    jwks = (await served.http.get(f"{served.url}/auth/.well-known/jwks.json")).json()
    assert new_kid in {k["kid"] for k in jwks["keys"]}
    assert json.loads(base64.urlsafe_b64decode(old_token.split(".")[0] + "=="))["kid"] != new_kid
    served.clock.advance(PUBLISH_AHEAD.total_seconds())
    new_token = await served.token(app)
    assert json.loads(base64.urlsafe_b64decode(new_token.split(".")[0] + "=="))["kid"] == new_kid
    assert (await served.get("/charge-points", new_token)).status_code == 200
    assert (await served.get("/charge-points", old_token)).status_code == 200


@pytest.mark.sqlite_only(reason="the OpenAPI document is made from the app's routes")
async def test_openapi_declares_the_client_credentials_scheme_on_protected_paths(served: Served) -> None:
    document = (await served.http.get(f"{served.url}/api/v1/openapi.json")).json()
    schemes = document["components"]["securitySchemes"]
    # The bearer token is the client-credentials grant's, so the scheme is that flow (issue 13).
    assert [s["type"] for s in schemes.values()] == ["oauth2"]
    assert [list(s["flows"]) for s in schemes.values()] == [["clientCredentials"]]
    for path in ("/sites", "/sites/{site_id}", "/charge-points", "/charge-points/{charge_point_id}"):
        assert document["paths"][path]["get"]["security"], path


@pytest.mark.sqlite_only(reason="a request refused before the store is read")
async def test_malformed_cursor_is_422(served: Served) -> None:
    mine = await served.tenant("ST-A")
    token = await served.token(await served.app(mine.company_id, "charge-points:read"))
    response = await served.get("/charge-points", token, cursor="!!!")
    assert_problem(422, response)
    assert response.json()["field"] == "cursor"
