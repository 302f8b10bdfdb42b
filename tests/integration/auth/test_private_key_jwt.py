"""private_key_jwt client authentication (RFC 7523) over real HTTP: keys registered as a JWKS document or a JWKS
URL (fetched with the webhooks' address guard), and each assertion the server must refuse, refused with
`invalid_client` and nothing stored."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from chargenet_partner import AsyncTokenClient, PrivateKeyJwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from sqlalchemy import func, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from chargenet.clock import ManualClock
from chargenet.services import applications
from chargenet.services.callers import OPERATOR
from chargenet.store.models import Application, UsedAssertion
from tests.integration.auth.conftest import Served, serving
from tests.support.in_loop import start_serving
from tests.support.ports import free_port

pytestmark = pytest.mark.sqlite_only(reason="the assertions and key sets the server refuses")

GRANT = {"grant_type": "client_credentials"}
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def rsa_signer(served: Served, *, skew: float = 0, lifetime: int = 60) -> PrivateKeyJwt:
    """A signer on the server's clock (plus `skew` seconds)."""
    return PrivateKeyJwt(
        rsa.generate_private_key(public_exponent=65537, key_size=2048),
        clock=lambda: served.clock.now().timestamp() + skew,
        lifetime=lifetime,
    )


async def register(served: Served, client_id: str, **keys: Any) -> applications.ApplicationView:
    return await applications.set_public_keys(
        served.context.store.transaction,
        OPERATOR,
        client_id,
        now=served.clock.now(),
        allow_private=served.context.settings.webhook_allow_private,
        **keys,
    )


async def assertion_grant(served: Served, client_id: str, assertion: str) -> httpx.Response:
    return await served.http.post(
        served.token_url,
        data={**GRANT, "client_id": client_id, "client_assertion_type": JWT_BEARER, "client_assertion": assertion},
    )


def assert_invalid_client(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.json()["error"] == "invalid_client"
    assert response.headers["cache-control"] == "no-store"


async def used_assertions(served: Served) -> int:
    async with served.context.store.read() as session:
        return int(await session.scalar(select(func.count()).select_from(UsedAssertion)) or 0)


def forged(header: dict[str, Any], claims: dict[str, Any], key: bytes = b"") -> str:
    """A JWT with any header: signed with HMAC-SHA256 under `key`, or unsigned."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = hmac.new(key, signing_input.encode(), hashlib.sha256).digest() if key else b""
    return f"{signing_input}.{b64(signature)}"


@pytest.mark.parametrize(
    "key",
    [
        rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec.generate_private_key(ec.SECP256R1()),
        ed25519.Ed25519PrivateKey.generate(),
    ],
    ids=["RS256", "ES256", "EdDSA"],
)
async def test_a_client_with_registered_keys_gets_a_token_without_a_secret(served: Served, key: Any) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "sites:read")
    signer = PrivateKeyJwt(key, clock=lambda: served.clock.now().timestamp())
    view = await register(served, app.client_id, jwks=signer.jwks())
    assert view.jwks == json.loads(json.dumps(signer.jwks()))
    async with AsyncTokenClient(served.token_url, app.client_id, private_key_jwt=signer) as client:
        token = await client.token()
        assert (await served.get("/sites", token)).status_code == 200
        assert (await client.introspect(token))["active"] is True
        await client.revoke(token)
        assert (await served.get("/sites", token)).status_code == 401


async def test_an_assertion_may_name_the_issuer_as_its_audience(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    signer = rsa_signer(served)
    await register(served, app.client_id, jwks=signer.jwks())
    response = await assertion_grant(served, app.client_id, signer.assertion(app.client_id, f"{served.url}/auth"))
    assert response.status_code == 200, response.text


async def test_an_assertion_for_another_audience_is_refused(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    signer = rsa_signer(served)
    await register(served, app.client_id, jwks=signer.jwks())
    for audience in (f"{served.url}/api/v1", "https://other.example/auth/oauth2/token"):
        assert_invalid_client(await assertion_grant(served, app.client_id, signer.assertion(app.client_id, audience)))
    assert await used_assertions(served) == 0


async def test_an_expired_assertion_is_refused(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    signer = rsa_signer(served, skew=-600)
    await register(served, app.client_id, jwks=signer.jwks())
    assert_invalid_client(
        await assertion_grant(served, app.client_id, signer.assertion(app.client_id, served.token_url))
    )
    assert await used_assertions(served) == 0


async def test_an_assertion_valid_for_too_long_is_refused(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    signer = rsa_signer(served, lifetime=3600)
    await register(served, app.client_id, jwks=signer.jwks())
    assert_invalid_client(
        await assertion_grant(served, app.client_id, signer.assertion(app.client_id, served.token_url))
    )


@pytest.mark.both_stores(reason="a jti is refused again by what each store keeps of it")
async def test_a_reused_jti_is_refused(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    signer = rsa_signer(served)
    await register(served, app.client_id, jwks=signer.jwks())
    assertion = signer.assertion(app.client_id, served.token_url)
    assert (await assertion_grant(served, app.client_id, assertion)).status_code == 200
    assert_invalid_client(await assertion_grant(served, app.client_id, assertion))
    assert await used_assertions(served) == 1


async def test_none_and_hmac_assertions_are_refused(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    signer = rsa_signer(served)
    await register(served, app.client_id, jwks=signer.jwks())
    now = int(served.clock.now().timestamp())
    claims = {
        "iss": app.client_id,
        "sub": app.client_id,
        "aud": served.token_url,
        "iat": now,
        "exp": now + 60,
        "jti": "j-1",
    }
    public_n = signer.public_jwk()["n"].encode()  # an HMAC key an attacker could take from the public key set
    for assertion in (
        forged({"alg": "none", "typ": "JWT"}, claims),
        forged({"alg": "HS256", "typ": "JWT", "kid": signer.kid}, claims, public_n),
        forged({"alg": "HS256", "typ": "JWT"}, claims, app.client_secret.encode()),
    ):
        assert_invalid_client(await assertion_grant(served, app.client_id, assertion))
    assert await used_assertions(served) == 0


async def test_an_assertion_signed_with_a_key_not_registered_is_refused(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    await register(served, app.client_id, jwks=rsa_signer(served).jwks())
    stranger = rsa_signer(served)
    assertion = stranger.assertion(app.client_id, served.token_url)
    assert_invalid_client(await assertion_grant(served, app.client_id, assertion))


async def test_a_client_without_registered_keys_cannot_use_private_key_jwt(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    assertion = rsa_signer(served).assertion(app.client_id, served.token_url)
    assert_invalid_client(await assertion_grant(served, app.client_id, assertion))


async def test_an_assertion_of_another_client_is_refused(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app, other = await served.app(tenant.company_id), await served.app(tenant.company_id)
    signer = rsa_signer(served)
    await register(served, app.client_id, jwks=signer.jwks())
    assertion = signer.assertion(app.client_id, served.token_url)
    assert_invalid_client(await assertion_grant(served, other.client_id, assertion))


async def test_a_secret_and_an_assertion_together_are_refused(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    signer = rsa_signer(served)
    await register(served, app.client_id, jwks=signer.jwks())
    response = await served.http.post(
        served.token_url,
        data={**GRANT, **signer.form(app.client_id, served.token_url)},
        auth=(app.client_id, app.client_secret),
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


@pytest.mark.parametrize(
    "document",
    [
        {"keys": [{"kty": "oct", "k": "c2VjcmV0"}]},
        {"keys": []},
        {"not": "a key set"},
    ],
    ids=["symmetric", "empty", "not-a-key-set"],
)
async def test_a_key_set_that_cannot_authenticate_is_refused_and_nothing_stored(
    served: Served, document: dict[str, Any]
) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "applications:write")
    token = await served.token(app)
    response = await served.http.put(
        f"{served.url}/api/v1/applications/{app.client_id}/keys",
        json={"jwks": document},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 422 and response.headers["content-type"] == "application/problem+json"
    async with served.context.store.read() as session:
        assert (await session.get(Application, app.client_id)).jwks is None  # type: ignore[union-attr]


async def test_a_key_set_holding_a_private_key_is_refused(served: Served) -> None:
    from joserfc.jwk import RSAKey

    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    private = RSAKey.generate_key(2048, private=True).as_dict(private=True)
    with pytest.raises(Exception, match="private key"):
        await register(served, app.client_id, jwks={"keys": [private]})


async def test_a_jwks_url_at_a_private_address_is_refused_and_nothing_stored(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "applications:write")
    token = await served.token(app)
    for url in ("http://127.0.0.1:9/jwks.json", "http://10.0.0.1/jwks.json", "http://localhost/jwks.json"):
        response = await served.http.put(
            f"{served.url}/api/v1/applications/{app.client_id}/keys",
            json={"jwksUrl": url},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 422, response.text
        assert response.json()["field"] == "jwksUrl" and "private" in response.json()["detail"]
    async with served.context.store.read() as session:
        assert (await session.get(Application, app.client_id)).jwks_url is None  # type: ignore[union-attr]


async def test_keys_are_registered_over_the_api_by_a_partner_with_applications_write(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    admin = await served.app(tenant.company_id, "applications:write")
    app = await served.app(tenant.company_id)
    signer = rsa_signer(served)
    response = await served.http.put(
        f"{served.url}/api/v1/applications/{app.client_id}/keys",
        json={"jwks": signer.jwks()},
        headers={"Authorization": f"Bearer {await served.token(admin)}"},
    )
    assert response.status_code == 200 and response.json()["jwks"] == signer.jwks()
    granted = await assertion_grant(served, app.client_id, signer.assertion(app.client_id, served.token_url))
    assert granted.status_code == 200


@pytest.fixture
async def served_with_private_targets(database_url: str, tmp_path: Path, clock: ManualClock) -> AsyncIterator[Served]:
    async with serving(database_url, tmp_path, clock, webhook_allow_private=True) as served:
        yield served


async def serve_jwks(document: dict[str, Any]) -> tuple[str, uvicorn.Server, Any]:
    async def jwks(_: Request) -> JSONResponse:
        return JSONResponse(document)

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(Starlette(routes=[Route("/jwks.json", jwks)]), host="127.0.0.1", port=port, log_level="warning")
    )
    return f"http://127.0.0.1:{port}/jwks.json", server, await start_serving(server)


async def test_keys_at_a_jwks_url_are_fetched_and_refetched_after_rotation(
    served_with_private_targets: Served,
) -> None:
    served = served_with_private_targets
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    first, second = rsa_signer(served), rsa_signer(served)
    document = first.jwks()
    url, server, task = await serve_jwks(document)
    try:
        await register(served, app.client_id, jwks_url=url)
        response = await assertion_grant(served, app.client_id, first.assertion(app.client_id, served.token_url))
        assert response.status_code == 200, response.text
        document["keys"] = second.jwks()["keys"]  # the partner rotates its key
        served.clock.advance(11)
        response = await assertion_grant(served, app.client_id, second.assertion(app.client_id, served.token_url))
        assert response.status_code == 200, response.text
    finally:
        server.should_exit = True
        await task


async def test_a_jwks_url_is_checked_again_at_every_fetch(served: Served) -> None:
    # Registered while the name resolved to a public address (another resolver), fetched once it is private.
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)

    async def public(_host: str, _port: int) -> list[str]:
        return ["93.184.215.14"]

    signer = rsa_signer(served)
    await applications.set_public_keys(
        served.context.store.transaction,
        OPERATOR,
        app.client_id,
        jwks_url="http://localhost:9/jwks.json",
        now=served.clock.now(),
        allow_private=False,
        resolver=public,
    )
    assert_invalid_client(
        await assertion_grant(served, app.client_id, signer.assertion(app.client_id, served.token_url))
    )


async def test_a_key_set_and_a_url_together_are_refused(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "applications:write")
    response = await served.http.put(
        f"{served.url}/api/v1/applications/{app.client_id}/keys",
        json={"jwks": rsa_signer(served).jwks(), "jwksUrl": "https://partner.example/jwks.json"},
        headers={"Authorization": f"Bearer {await served.token(app)}"},
    )
    assert response.status_code == 422 and response.headers["content-type"] == "application/problem+json"


@pytest.mark.both_stores(reason="a jti is refused again by what each store keeps of it")
async def test_a_disabled_applications_assertion_is_refused_and_its_jti_not_stored(served: Served) -> None:
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id)
    signer = rsa_signer(served)
    await register(served, app.client_id, jwks=signer.jwks())
    async with served.context.store.transaction() as session:
        await applications.set_enabled(session, OPERATOR, app.client_id, enabled=False, now=served.clock.now())
    assert_invalid_client(
        await assertion_grant(served, app.client_id, signer.assertion(app.client_id, served.token_url))
    )
    assert await used_assertions(served) == 0
