"""Introspection (RFC 7662) and revocation (RFC 7009) over real HTTP, with decisions.md §5's rules: a client learns
and revokes only its own tokens, and a revoked token is refused by the API within the 5 s of a group change."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
from chargenet_partner import AsyncTokenClient, TokenRequestError
from sqlalchemy import func, select

from chargenet.auth.principals import PRINCIPAL_TTL
from chargenet.auth.tokens import ACCESS_TOKEN_LIFETIME
from chargenet.services import applications
from chargenet.store.models import RevokedToken
from tests.integration.auth.conftest import Served
from tests.integration.auth.test_token_endpoint import assert_no_store, claims_of

pytestmark = pytest.mark.sqlite_only(reason="introspection's and revocation's answers")


def introspect_url(served: Served) -> str:
    return f"{served.url}/auth/oauth2/introspect"


def revoke_url(served: Served) -> str:
    return f"{served.url}/auth/oauth2/revoke"


async def introspect(served: Served, app: applications.Credentials, token: str) -> httpx.Response:
    return await served.http.post(
        introspect_url(served), data={"token": token}, auth=(app.client_id, app.client_secret)
    )


async def revoke(served: Served, app: applications.Credentials, token: str) -> httpx.Response:
    return await served.http.post(revoke_url(served), data={"token": token}, auth=(app.client_id, app.client_secret))


async def revoked_rows(served: Served) -> int:
    async with served.context.store.read() as session:
        return int(await session.scalar(select(func.count()).select_from(RevokedToken)) or 0)


async def test_a_client_introspects_its_own_token(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "sites:read")
    token = await served.token(app)
    response = await introspect(served, app, token)
    assert response.status_code == 200
    assert_no_store(response)
    body = response.json()
    claims = claims_of(token)[1]
    assert body["active"] is True
    assert (body["client_id"], body["sub"], body["scope"], body["token_type"]) == (
        app.client_id,
        app.client_id,
        "sites:read",
        "Bearer",
    )
    assert (body["exp"], body["iat"], body["jti"]) == (claims["exp"], claims["iat"], claims["jti"])
    assert body["iss"] == f"{served.url}/auth" and body["aud"] == f"{served.url}/api/v1"


async def test_another_clients_token_introspects_as_inactive_and_nothing_more(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    owner, other = await served.app(tenant.company_id, "sites:read"), await served.app(tenant.company_id)
    response = await introspect(served, other, await served.token(owner))
    assert response.status_code == 200 and response.json() == {"active": False}


async def test_a_token_that_is_not_ours_introspects_as_inactive(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    for token in ("garbage", "a.b.c", "x" * 9000):
        response = await introspect(served, app, token)
        assert response.status_code == 200 and response.json() == {"active": False}


async def test_an_expired_token_introspects_as_inactive(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    token = await served.token(app)
    served.clock.advance(ACCESS_TOKEN_LIFETIME + 60)
    assert (await introspect(served, app, token)).json() == {"active": False}


async def test_introspection_needs_client_authentication(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    token = await served.token(app)
    anonymous = await served.http.post(introspect_url(served), data={"token": token})
    wrong = await served.http.post(introspect_url(served), data={"token": token}, auth=(app.client_id, "nope"))
    for response in (anonymous, wrong):
        assert response.status_code == 401 and response.json()["error"] == "invalid_client"
        assert response.headers["www-authenticate"].startswith("Basic ")


async def test_introspection_without_a_token_is_invalid_request(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    response = await served.http.post(introspect_url(served), data={}, auth=(app.client_id, app.client_secret))
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"
    get = await served.http.get(introspect_url(served), params={"token": "x"})
    assert get.status_code == 405 and get.headers["allow"] == "POST"


@pytest.mark.both_stores(reason="a revocation is read by each store's own path")
async def test_a_revoked_token_is_refused_by_the_api_at_once_and_introspects_as_inactive(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "sites:read")
    revoked, kept = await served.token(app), await served.token(app)
    assert (await served.get("/sites", revoked)).status_code == 200
    response = await revoke(served, app, revoked)
    assert response.status_code == 200
    assert_no_store(response)
    refused = await served.get("/sites", revoked)
    assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert (await introspect(served, app, revoked)).json() == {"active": False}
    assert (await served.get("/sites", kept)).status_code == 200


@pytest.mark.both_stores(reason="another process's revocation is read by each store's own path")
async def test_a_token_revoked_by_another_process_is_refused_within_the_time_of_a_group_change(
    served: Served,
) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "sites:read")
    token = await served.token(app)
    assert (await served.get("/sites", token)).status_code == 200
    claims = claims_of(token)[1]
    # What another process sharing the database writes when it revokes the token.
    async with served.context.store.transaction() as session:
        session.add(
            RevokedToken(
                jti=str(claims["jti"]),
                client_id=app.client_id,
                expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC),  # type: ignore[call-overload]
            )
        )
    served.clock.advance(PRINCIPAL_TTL)
    assert PRINCIPAL_TTL < 5
    assert (await served.get("/sites", token)).status_code == 401


async def test_revoking_an_unknown_token_answers_200_and_stores_nothing(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    for token in ("not-a-token", "a.b.c"):
        assert (await revoke(served, app, token)).status_code == 200
    assert await revoked_rows(served) == 0


async def test_revoking_another_clients_token_is_refused_and_revokes_nothing(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    owner, other = await served.app(tenant.company_id, "sites:read"), await served.app(tenant.company_id)
    token = await served.token(owner)
    response = await revoke(served, other, token)
    assert response.status_code == 400
    assert response.json()["error"] == "unauthorized_client"
    assert_no_store(response)
    assert await revoked_rows(served) == 0
    assert (await served.get("/sites", token)).status_code == 200


async def test_revocation_needs_client_authentication(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "sites:read")
    token = await served.token(app)
    response = await served.http.post(revoke_url(served), data={"token": token}, auth=(app.client_id, "nope"))
    assert response.status_code == 401 and response.json()["error"] == "invalid_client"
    assert await revoked_rows(served) == 0


@pytest.mark.both_stores(reason="the purge deletes in batches on each store")
async def test_revoked_tokens_are_purged_once_they_would_have_expired(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    await revoke(served, app, await served.token(app))
    assert await revoked_rows(served) == 1
    served.clock.advance(ACCESS_TOKEN_LIFETIME + 1)
    await revoke(served, app, await served.token(app))
    assert await revoked_rows(served) == 1  # the first row went, the second came


async def test_the_sdk_introspects_and_revokes_its_own_tokens(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "sites:read")
    other = await served.app(tenant.company_id)
    async with (
        AsyncTokenClient(served.token_url, app.client_id, app.client_secret) as client,
        AsyncTokenClient(served.token_url, other.client_id, other.client_secret) as stranger,
    ):
        token = await client.token()
        assert (await client.introspect(token))["active"] is True
        assert await stranger.introspect(token) == {"active": False}
        try:
            await stranger.revoke(token)
            raise AssertionError("revoking another client's token must be refused")
        except TokenRequestError as exc:
            assert (exc.status, exc.error) == (400, "unauthorized_client")
        await client.revoke(token)
        assert (await client.introspect(token)) == {"active": False}
        assert (await served.get("/sites", token)).status_code == 401
        # The revoked token is no longer handed out: the next call gets a new one.
        assert await client.token() != token
