from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.integration.cli.helpers import company_and_site

pytestmark = pytest.mark.sqlite_only(reason="the command line's arguments, output and exit codes")


@pytest.fixture(autouse=True)
def public_webhooks_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHARGENET_WEBHOOK_ALLOW_PRIVATE", "0")


async def test_webhook_create_show_disable_enable_delete(cli) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    created = await cli(
        "admin", "webhook", "create", "--site", site, "--url", "https://93.184.215.14/hook",
        "--events", "Authorize,StopTransaction", "--auth", "oauth2", "--token-url", "https://93.184.215.14/token",
        "--client-id", "cid", "--client-secret", "s3cret", "--json",
    )  # fmt: skip
    webhook_id = created.json()["id"]
    shown = (await cli("admin", "webhook", "show", webhook_id, "--json")).json()
    assert (shown["events"], shown["auth"], shown["alg"], shown["enabled"]) == (
        ["Authorize", "StopTransaction"],
        "oauth2",
        "ed25519",
        True,
    )
    assert [lane["eventType"] for lane in shown["lanes"]] == ["Authorize", "StopTransaction"]
    assert "s3cret" not in json.dumps(shown)
    assert (await cli("admin", "webhook", "disable", webhook_id, "--json")).json()["enabled"] is False
    assert (await cli("admin", "webhook", "enable", webhook_id, "--json")).json()["enabled"] is True
    assert (await cli("admin", "webhook", "delete", webhook_id)).code == 0
    assert (await cli("admin", "webhook", "list", "--json")).json() == {"items": []}


async def test_webhook_to_a_private_address_is_refused_with_a_reason(cli) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    result = await cli("admin", "webhook", "create", "--site", site, "--url", "http://127.0.0.1:8000/hook",
                       "--events", "Authorize", "--json")  # fmt: skip
    assert result.code == 2
    assert "127.0.0.1 is a loopback address" in result.err and "CHARGENET_WEBHOOK_ALLOW_PRIVATE" in result.err


async def test_rsa_pss_sha256_needs_the_legacy_format(cli) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    args = ["admin", "webhook", "create", "--site", site, "--url", "https://93.184.215.14/h", "--events", "Authorize"]
    refused = await cli(*args, "--alg", "rsa-pss-sha256")
    accepted = await cli(*args, "--alg", "rsa-pss-sha256", "--signature-format", "legacy", "--json")
    assert (refused.code, accepted.code) == (2, 0)


async def test_deadletter_list_and_replay_of_an_unknown_event(cli) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    webhook_id = (
        await cli("admin", "webhook", "create", "--site", site, "--url", "https://93.184.215.14/h",
                  "--events", "Authorize", "--json")
    ).json()["id"]  # fmt: skip
    assert (await cli("admin", "deadletter", "list", "--webhook", webhook_id, "--json")).json() == {"items": []}
    assert (await cli("admin", "deadletter", "replay", "--webhook", webhook_id, "--json")).json() == {"replayed": []}
    missing = await cli("admin", "deadletter", "replay", "--webhook", webhook_id, "no-such-event")
    assert missing.code == 4


async def test_webhook_headers_filter_recovery_and_rotation_from_the_command_line(cli) -> None:  # type: ignore[no-untyped-def]
    _, site = await company_and_site(cli)
    created = await cli(
        "admin", "webhook", "create", "--site", site, "--url", "https://93.184.215.14/h", "--events", "Authorize",
        "--auth", "token", "--token", "old", "--header", "X-Partner-Tenant: acme", "--station", "ST-1", "--json",
    )  # fmt: skip
    webhook_id = created.json()["id"]
    shown = (await cli("admin", "webhook", "show", webhook_id, "--json")).json()
    assert (shown["headers"], shown["stations"]) == ({"X-Partner-Tenant": "acme"}, ["ST-1"])
    forged = await cli("admin", "webhook", "update", webhook_id, "--header", "X-Request-ID: forged")
    assert forged.code == 2 and "X-Request-ID is set by chargenet" in forged.err
    cleared = await cli("admin", "webhook", "update", webhook_id, "--no-headers", "--no-filter", "--json")
    assert (cleared.json()["headers"], cleared.json()["stations"]) == ({}, [])
    future = await cli("admin", "webhook", "recover", webhook_id, "--since", "2026-01-01T00:00:00+00:00",
                       "--until", "2999-01-01T00:00:00+00:00")  # fmt: skip
    assert future.code == 2 and "until" in future.err
    rotated = await cli("admin", "webhook", "rotate-credentials", webhook_id, "--auth", "token", "--token", "new",
                        "--overlap-until", "2999-01-01T00:00:00+00:00")  # fmt: skip
    assert rotated.code == 2 and "overlapUntil" in rotated.err  # more than 30 days ahead
    now = datetime.now(UTC)
    until = (now + timedelta(days=1)).isoformat()
    rotated = await cli("admin", "webhook", "rotate-credentials", webhook_id, "--auth", "token", "--token", "new",
                        "--overlap-until", until, "--json")  # fmt: skip
    assert rotated.json()["authOverlapUntil"] == until
    recovered = await cli("admin", "webhook", "recover", webhook_id, "--since", (now - timedelta(hours=1)).isoformat(),
                          "--until", now.isoformat(), "--json")  # fmt: skip
    assert recovered.json()["events"] == 0
