"""The token endpoint over real HTTP: RFC 6749 §2.3, §3.2, §4.4, §5 and decisions.md §3-§4."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx
import pytest
from chargenet_partner import AsyncTokenClient, TokenClient, TokenRequestError

from chargenet.services.callers import OPERATOR
from tests.integration.auth.conftest import Served

pytestmark = pytest.mark.sqlite_only(reason="the token endpoint's input handling and answers")

GRANT = {"grant_type": "client_credentials"}


def assert_no_store(response: httpx.Response) -> None:
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["pragma"] == "no-cache"


def claims_of(token: str) -> tuple[dict[str, object], dict[str, object]]:
    head, body, _ = token.split(".")
    return (
        json.loads(base64.urlsafe_b64decode(head + "==")),
        json.loads(base64.urlsafe_b64decode(body + "==")),
    )


@pytest.mark.both_stores(reason="a client is read from the store by a path of each store's own")
async def test_basic_grant_issues_an_rfc9068_token(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "sites:read")
    response = await served.http.post(served.token_url, data=GRANT, auth=(app.client_id, app.client_secret))
    assert response.status_code == 200
    assert_no_store(response)
    body = response.json()
    assert (body["token_type"], body["expires_in"], body["scope"]) == ("Bearer", 900, "sites:read")
    header, claims = claims_of(body["access_token"])
    assert header["typ"] == "at+jwt" and header["alg"] == "RS256"
    assert claims["iss"] == f"{served.url}/auth" and claims["aud"] == f"{served.url}/api/v1"
    assert claims["sub"] == claims["client_id"] == app.client_id
    assert claims["exp"] == claims["iat"] + 900  # type: ignore[operator]


async def test_post_grant_is_accepted(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    response = await served.http.post(
        served.token_url, data={**GRANT, "client_id": app.client_id, "client_secret": app.client_secret}
    )
    assert response.status_code == 200 and "scope" not in response.json()


async def test_tokens_have_unique_jti(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    first, second = await served.token(app), await served.token(app)
    assert claims_of(first)[1]["jti"] != claims_of(second)[1]["jti"]


async def test_unknown_client_gets_the_same_answer_as_a_wrong_secret(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    wrong = await served.http.post(served.token_url, data=GRANT, auth=(app.client_id, "nope"))
    unknown = await served.http.post(served.token_url, data=GRANT, auth=("app_nobody", "nope"))
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json() and wrong.json()["error"] == "invalid_client"
    assert wrong.headers["www-authenticate"] == unknown.headers["www-authenticate"]
    assert wrong.headers["www-authenticate"].startswith("Basic ")
    assert_no_store(wrong)


async def test_disabled_application_cannot_get_a_token(served: Served) -> None:
    from chargenet.services import applications

    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    async with served.context.store.transaction() as session:
        await applications.set_enabled(session, OPERATOR, app.client_id, enabled=False, now=served.clock.now())
    response = await served.http.post(served.token_url, data=GRANT, auth=(app.client_id, app.client_secret))
    assert response.status_code == 401 and response.json()["error"] == "invalid_client"


@pytest.mark.both_stores(reason="a rotated secret is refused at once by either store's read of the client")
async def test_rotated_secret_stops_working_at_once(served: Served) -> None:
    from chargenet.services import applications

    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    # Granted once before: what the process kept of the application must not outlive the rotation.
    assert (await served.http.post(served.token_url, data=GRANT, auth=(app.client_id, app.client_secret))).is_success
    async with served.context.store.transaction() as session:
        new = await applications.rotate_secret(
            session, OPERATOR, served.context.keys.secret_hasher(), app.client_id, now=served.clock.now()
        )
    old = await served.http.post(served.token_url, data=GRANT, auth=(app.client_id, app.client_secret))
    assert old.status_code == 401
    assert (await served.http.post(served.token_url, data=GRANT, auth=(new.client_id, new.client_secret))).is_success


async def test_get_is_405_with_allow_and_no_store(served: Served) -> None:
    response = await served.http.get(served.token_url)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert_no_store(response)


async def test_json_body_is_invalid_request(served: Served) -> None:
    response = await served.http.post(served.token_url, json=GRANT, auth=("app_x", "s"))
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"
    assert_no_store(response)


async def test_credentials_in_the_query_are_invalid_request(served: Served) -> None:
    response = await served.http.post(served.token_url, params={"client_id": "app_x", "client_secret": "s"}, data=GRANT)
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


async def test_both_client_authentication_methods_are_invalid_request(served: Served) -> None:
    response = await served.http.post(
        served.token_url, data={**GRANT, "client_id": "app_x", "client_secret": "s"}, auth=("app_x", "s")
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


async def test_repeated_parameter_is_invalid_request(served: Served) -> None:
    response = await served.http.post(
        served.token_url,
        content=b"grant_type=client_credentials&grant_type=client_credentials",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        auth=("app_x", "s"),
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


async def test_missing_grant_type_is_invalid_request(served: Served) -> None:
    response = await served.http.post(served.token_url, data={"x": "1"}, auth=("app_x", "s"))
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


async def test_other_grant_type_is_unsupported(served: Served) -> None:
    response = await served.http.post(served.token_url, data={"grant_type": "password"}, auth=("app_x", "s"))
    assert response.status_code == 400 and response.json()["error"] == "unsupported_grant_type"


async def test_scope_parameter_is_invalid_scope(served: Served) -> None:
    response = await served.http.post(served.token_url, data={**GRANT, "scope": "sites:read"}, auth=("app_x", "s"))
    assert response.status_code == 400 and response.json()["error"] == "invalid_scope"


async def test_missing_client_authentication_is_401_with_challenge(served: Served) -> None:
    response = await served.http.post(served.token_url, data=GRANT)
    assert response.status_code == 401 and response.json()["error"] == "invalid_client"
    assert "www-authenticate" in response.headers


async def test_oversized_body_is_refused(served: Served) -> None:
    response = await served.http.post(served.token_url, data={**GRANT, "x": "a" * 5000}, auth=("app_x", "s"))
    assert response.status_code == 413
    assert_no_store(response)


@pytest.mark.both_stores(reason="PostgreSQL shares the rate limits' buckets between processes")
async def test_eleventh_failure_for_one_client_id_gets_429_even_with_the_right_secret(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    for _ in range(10):
        response = await served.http.post(served.token_url, data=GRANT, auth=(app.client_id, "wrong"))
        assert response.status_code == 401
    blocked = await served.http.post(served.token_url, data=GRANT, auth=(app.client_id, app.client_secret))
    assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) == 60
    assert_no_store(blocked)
    served.clock.advance(61)
    assert (await served.http.post(served.token_url, data=GRANT, auth=(app.client_id, app.client_secret))).is_success


@pytest.mark.both_stores(reason="PostgreSQL shares the rate limits' buckets between processes")
async def test_fifty_failures_from_one_address_block_it(served: Served) -> None:
    for i in range(50):
        await served.http.post(served.token_url, data=GRANT, auth=(f"app_guess{i}", "wrong"))
    blocked = await served.http.post(served.token_url, data=GRANT, auth=("app_other", "wrong"))
    assert blocked.status_code == 429 and "retry-after" in blocked.headers


async def test_metadata_is_served_at_the_three_places(served: Served) -> None:
    documents = [
        (await served.http.get(f"{served.url}{path}")).json()
        for path in (
            "/.well-known/oauth-authorization-server/auth",
            "/auth/.well-known/oauth-authorization-server",
            "/auth/.well-known/openid-configuration",
        )
    ]
    assert documents[0] == documents[1] == documents[2]
    assert documents[0]["issuer"] == f"{served.url}/auth"
    assert documents[0]["token_endpoint"] == served.token_url
    assert documents[0]["grant_types_supported"] == ["client_credentials"]
    methods = ["client_secret_basic", "client_secret_post", "private_key_jwt"]
    assert documents[0]["token_endpoint_auth_methods_supported"] == methods
    assert documents[0]["introspection_endpoint"] == f"{served.url}/auth/oauth2/introspect"
    assert documents[0]["revocation_endpoint"] == f"{served.url}/auth/oauth2/revoke"
    assert documents[0]["introspection_endpoint_auth_methods_supported"] == methods
    assert documents[0]["revocation_endpoint_auth_methods_supported"] == methods
    for endpoint in ("token", "introspection", "revocation"):
        algorithms = documents[0][f"{endpoint}_endpoint_auth_signing_alg_values_supported"]
        assert "RS256" in algorithms and "ES256" in algorithms
        assert not {"none", "HS256"} & set(algorithms)


async def test_jwks_publishes_public_halves_with_webhook_keys_under_sign(served: Served) -> None:
    response = await served.http.get(f"{served.url}/auth/.well-known/jwks.json")
    assert response.headers["cache-control"] == "public, max-age=300"
    keys = response.json()["keys"]
    assert not any(private in key for key in keys for private in ("d", "p", "q", "dp", "dq", "qi"))
    by_alg = {(k["kid"] if k["kid"] == "sign" else "token", k["alg"], k["kty"]) for k in keys}
    assert by_alg == {("token", "RS256", "RSA"), ("sign", "EdDSA", "OKP"), ("sign", "PS512", "RSA")}


async def test_sdk_clients_get_and_cache_a_token(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "charge-points:read")
    async with AsyncTokenClient(served.token_url, app.client_id, app.client_secret) as client:
        tokens = await asyncio.gather(*(client.token() for _ in range(10)))
    assert len(set(tokens)) == 1
    assert (await served.get("/charge-points", tokens[0])).status_code == 200

    def sync_token() -> str:
        with TokenClient(served.token_url, app.client_id, app.client_secret, auth_method="post") as sync:
            return sync.token()

    assert (await served.get("/charge-points", await asyncio.to_thread(sync_token))).status_code == 200


async def test_sdk_reports_refusal_with_the_rfc_code(served: Served) -> None:
    async with AsyncTokenClient(served.token_url, "app_nobody", "wrong") as client:
        with pytest.raises(TokenRequestError) as info:
            await client.token()
    assert (info.value.status, info.value.error) == (401, "invalid_client")
