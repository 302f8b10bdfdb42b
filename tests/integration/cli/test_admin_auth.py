"""`chargenet admin app|group|keys` on SQLite, through the real command entry point."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from chargenet_partner import PrivateKeyJwt
from cryptography.hazmat.primitives.asymmetric import ec
from joserfc.jwk import ECKey

from chargenet.services import audit
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from chargenet.store.db import Store
from tests.integration.cli.helpers import Result, company_and_site

pytestmark = pytest.mark.sqlite_only(reason="the command line's arguments, output and exit codes")


async def test_app_create_prints_client_id_and_secret_once(cli) -> None:  # type: ignore[no-untyped-def]
    company, _ = await company_and_site(cli)
    created = (await cli("admin", "app", "create", "--company", company, "partner", "--json")).json()
    assert set(created) == {"client_id", "client_secret"} and len(created["client_secret"]) == 43
    shown = await cli("admin", "app", "show", created["client_id"], "--json")
    assert created["client_secret"] not in shown.out and shown.json()["enabled"] is True
    listing = (await cli("admin", "app", "list", "--company", company, "--json")).json()
    assert [a["client_id"] for a in listing["items"]] == [created["client_id"]]


async def test_app_disable_enable_rotate_delete(cli) -> None:  # type: ignore[no-untyped-def]
    company, _ = await company_and_site(cli)
    client_id = (await cli("admin", "app", "create", "--company", company, "p", "--json")).json()["client_id"]
    assert (await cli("admin", "app", "disable", client_id, "--json")).json()["enabled"] is False
    assert (await cli("admin", "app", "enable", client_id, "--json")).json()["enabled"] is True
    rotated = (await cli("admin", "app", "rotate-secret", client_id, "--json")).json()
    assert rotated["client_id"] == client_id and len(rotated["client_secret"]) == 43
    assert (await cli("admin", "app", "delete", client_id)).code == 0
    missing: Result = await cli("admin", "app", "show", client_id)
    assert missing.code == 4 and "not found" in missing.err


async def test_app_changes_from_the_command_line_are_audited_as_the_local_operator(  # type: ignore[no-untyped-def]
    cli, database_url: str
) -> None:
    company, _ = await company_and_site(cli)
    client_id = (await cli("admin", "app", "create", "--company", company, "p", "--json")).json()["client_id"]
    secret = (await cli("admin", "app", "rotate-secret", client_id, "--json")).json()["client_secret"]
    store = Store(database_url)
    try:
        async with store.transaction() as session:
            page = await audit.list_records(
                session, OPERATOR, PageRequest(), company_id=company, where=audit.AuditFilter(object_type="application")
            )
    finally:
        await store.dispose()
    assert [(e.action, e.face, e.actor) for e in page.items] == [
        ("application.rotate-secret", "cli", "local operator"),
        ("application.create", "cli", "local operator"),
    ]
    assert secret not in repr(page)


async def test_group_create_add_and_remove_app(cli) -> None:  # type: ignore[no-untyped-def]
    company, site = await company_and_site(cli)
    client_id = (await cli("admin", "app", "create", "--company", company, "p", "--json")).json()["client_id"]
    group = (
        await cli(
            "admin",
            "group",
            "create",
            "--company",
            company,
            "--site",
            site,
            "readers",
            "--scope",
            "sites:read",
            "--scope",
            "charge-points:read",
            "--json",
        )
    ).json()
    assert set(group) == {"id"}
    assert (await cli("admin", "group", "add-app", group["id"], client_id)).code == 0
    shown = (await cli("admin", "group", "show", group["id"], "--json")).json()
    assert shown["clientIds"] == [client_id] and shown["scopes"] == ["charge-points:read", "sites:read"]
    assert (await cli("admin", "group", "remove-app", group["id"], client_id)).code == 0
    assert (await cli("admin", "group", "show", group["id"], "--json")).json()["clientIds"] == []


async def test_group_with_unknown_scope_is_a_usage_error(cli) -> None:  # type: ignore[no-untyped-def]
    company, _ = await company_and_site(cli)
    result = await cli("admin", "group", "create", "--company", company, "g", "--scope", "everything", "--json")
    assert result.code == 2 and "sites:read" in result.err


async def test_token_key_rotation_publishes_a_second_key(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    before = (await cli("admin", "keys", "show", "--json")).json()["items"]
    await cli("admin", "keys", "rotate-token-key", "--json")
    after = (await cli("admin", "keys", "show", "--json")).json()["items"]
    assert len([k for k in after if k["alg"] == "RS256"]) == len([k for k in before if k["alg"] == "RS256"]) + 1
    keys_dir = tmp_path / "data" / "keys"
    for pem in keys_dir.glob("*.pem"):
        assert stat.S_IMODE(os.stat(pem).st_mode) == 0o600, pem


async def test_webhook_key_rotation_waits_24_hours_before_promoting(cli) -> None:  # type: ignore[no-untyped-def]
    assert (await cli("admin", "keys", "rotate-webhook-key", "--json")).json() == {"step": "published-next"}
    kids = {k["kid"] for k in (await cli("admin", "keys", "show", "--json")).json()["items"]}
    assert {"sign", "sign-next"} <= kids
    too_early = await cli("admin", "keys", "rotate-webhook-key", "--json")
    assert too_early.code == 5 and "24 hours" in too_early.err


async def test_app_set_rate_limit_gives_a_limit_of_its_own_and_back_the_default(cli) -> None:  # type: ignore[no-untyped-def]
    company, _ = await company_and_site(cli)
    client_id = (await cli("admin", "app", "create", "--company", company, "p", "--json")).json()["client_id"]
    assert (await cli("admin", "app", "show", client_id, "--json")).json()["rateLimit"] is None
    limited = await cli("admin", "app", "set-rate-limit", client_id, "--rate-limit", "1200")
    assert limited.code == 0 and "may make 1200 API requests a minute" in limited.out
    assert (await cli("admin", "app", "show", client_id, "--json")).json()["rateLimit"] == 1200
    refused = await cli("admin", "app", "set-rate-limit", client_id, "--rate-limit", "0")
    assert refused.code != 0 and "1 to 1000000" in refused.err
    back = (await cli("admin", "app", "set-rate-limit", client_id, "--default", "--json")).json()
    assert back["rateLimit"] is None


async def test_app_set_keys_registers_a_key_set_or_its_url_and_removes_them(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path
) -> None:
    company, _ = await company_and_site(cli)
    client_id = (await cli("admin", "app", "create", "--company", company, "p", "--json")).json()["client_id"]
    document = PrivateKeyJwt(ec.generate_private_key(ec.SECP256R1())).jwks()
    (tmp_path / "jwks.json").write_text(json.dumps(document))
    shown = (
        await cli("admin", "app", "set-keys", client_id, "--jwks-file", str(tmp_path / "jwks.json"), "--json")
    ).json()
    assert shown["jwks"] == document and shown["jwksUrl"] is None
    url = "https://93.184.215.14/jwks.json"
    shown = (await cli("admin", "app", "set-keys", client_id, "--jwks-url", url, "--json")).json()
    assert shown["jwks"] is None and shown["jwksUrl"] == url
    shown = (await cli("admin", "app", "set-keys", client_id, "--none", "--json")).json()
    assert shown["jwks"] is None and shown["jwksUrl"] is None


async def test_app_set_keys_refuses_a_private_key_and_a_private_address(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path
) -> None:
    company, _ = await company_and_site(cli)
    client_id = (await cli("admin", "app", "create", "--company", company, "p", "--json")).json()["client_id"]
    document = {"keys": [ECKey.generate_key("P-256", private=True).as_dict(private=True)]}
    (tmp_path / "jwks.json").write_text(json.dumps(document))
    refused = await cli("admin", "app", "set-keys", client_id, "--jwks-file", str(tmp_path / "jwks.json"))
    assert refused.code != 0 and "private key" in refused.err
    refused = await cli("admin", "app", "set-keys", client_id, "--jwks-url", "http://127.0.0.1:8080/jwks.json")
    assert refused.code != 0 and "private" in refused.err
    assert (await cli("admin", "app", "show", client_id, "--json")).json()["jwks"] is None
