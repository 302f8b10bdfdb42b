"""The Webhooks pages: create and edit with write-only credentials (never shown back, kept when left blank),
enable, disable, delete, the lanes' health with its thresholds, the test event, the delivery log, and dead letters
(count, list, replay one or all). Admins change, viewers read; forms refuse bad input naming the field; an edit
made over someone else's is refused (409); another company's webhook is not found; partner-supplied text is
escaped; every change is audited, from the console, the API and the command line alike."""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import AsyncIterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from chargenet_partner.webhooks import verify_request
from sqlalchemy import select

from chargenet.app import create_app, open_context
from chargenet.cli.main import main
from chargenet.clock import ManualClock
from chargenet.config import load_settings
from chargenet.domain.events import AuthorizePayload
from chargenet.keys import KeyStore
from chargenet.outbox import Outbox
from chargenet.services import audit, sites
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from chargenet.store.db import Store
from chargenet.store.models import Webhook, WebhookDelivery
from chargenet.webhooks.engine import DeliveryEngine
from chargenet.webhooks.oneshot import OneShotSender
from chargenet.webhooks.outbound_auth import BasicAuth, NoAuth, from_document
from chargenet.webhooks.retry import RetryPolicy
from chargenet.webhooks.sender import WebhookSender
from tests.factories import make_tenant, partner_token
from tests.integration.console.conftest import ORIGIN, ConsoleHarness, csrf_of, token_of
from tests.integration.webhooks.harness import drain
from tests.support.keys import public_keys, signing_keys
from tests.support.receiver import Reply, run_receiver
from tests.support.templates import copy_sqlite_template

HOSTILE = "<script>alert(1)</script>"
SECRET = "pw-never-shown-9f3"


@dataclass
class Hooks:
    harness: ConsoleHarness
    keys: KeyStore
    site_id: str
    other_site_id: str
    sender: WebhookSender

    @property
    def store(self) -> Store:
        return self.harness.store

    async def webhook(self, url: str, *, site_id: str | None = None, events: str = "Authorize", auth=None) -> str:  # type: ignore[no-untyped-def]
        view = await webhook_service.create_webhook(
            self.store.transaction,
            OPERATOR,
            self.keys.credential_cipher(),
            site_id=site_id or self.site_id,
            url=url,
            event_types=[events],
            auth=auth or NoAuth(),
            now=self.harness.clock.now(),
            allow_private=True,
        )
        return view.id

    async def publish(self, *tags: str, site_id: str | None = None) -> None:
        async with self.store.transaction() as session:
            for tag in tags:
                payload = AuthorizePayload.model_validate({"stationId": "ST-1", "idTag": tag, "status": "Accepted"})
                await Outbox(self.harness.clock).publish(session, site_id=site_id or self.site_id, payload=payload)

    def engine(self, policy: RetryPolicy | None = None) -> DeliveryEngine:
        engine = DeliveryEngine(
            store=self.store,
            clock=self.harness.clock,
            sender=self.sender,
            cipher=self.keys.credential_cipher(),
            owner="test",
            policy=policy,
        )
        engine.spawn_lane_tasks = False
        return engine

    async def lane_id(self, webhook_id: str) -> int:
        detail = await self.detail(webhook_id)
        assert detail.lanes
        from chargenet.store.models import WebhookLane

        async with self.store.transaction() as session:
            found = await session.scalar(select(WebhookLane.id).where(WebhookLane.webhook_id == webhook_id))
        assert found is not None
        return int(found)

    async def detail(self, webhook_id: str) -> webhook_service.WebhookDetail:
        async with self.store.transaction() as session:
            return await webhook_service.get_webhook(session, OPERATOR, webhook_id)

    async def audit(self, action: str) -> list[audit.AuditEntry]:
        async with self.store.transaction() as session:
            found = await audit.list_records(
                session,
                OPERATOR,
                PageRequest(),
                company_id=self.harness.team.company_id,
                where=audit.AuditFilter(action=action),
            )
        return found.items


@pytest.fixture
async def hooks(harness: ConsoleHarness, tmp_path: Path) -> AsyncIterator[Hooks]:
    keys = KeyStore(tmp_path / "keys")
    sender = WebhookSender(clock=harness.clock, keys=signing_keys, allow_private=True, timeout=30.0)
    harness.console.webhook_allow_private = True
    harness.console.webhook_tests = OneShotSender(harness.store, sender, keys.credential_cipher())
    async with harness.store.transaction() as session:
        site = await sites.create_site(
            session,
            OPERATOR,
            keys.credential_cipher(),
            company_id=harness.team.company_id,
            name="Depot",
            now=harness.clock.now(),
        )
        other = await sites.create_site(
            session,
            OPERATOR,
            keys.credential_cipher(),
            company_id=harness.team.other_company_id,
            name="Theirs",
            now=harness.clock.now(),
        )
    try:
        yield Hooks(harness, keys, site.id, other.id, sender)
    finally:
        await sender.aclose()


def created_id(response: httpx.Response) -> str:
    assert response.status_code == 303, response.text
    return response.headers["location"].split("?")[0].rsplit("/", 1)[1]


async def create_through_the_form(hooks: Hooks, client: httpx.AsyncClient, **fields: object) -> httpx.Response:
    data: dict[str, object] = {
        "site_id": hooks.site_id,
        "url": "http://127.0.0.1:9/hook",
        "events": ["Authorize", "StopTransaction"],
        "auth": "basic",
        "username": "partner",
        "password": SECRET,
        "alg": "ed25519",
        "signature_format": "rfc9421",
        "csrf_token": await token_of(client),
        **fields,
    }
    return await client.post("/console/webhooks", data=data, headers=ORIGIN)


async def test_the_pages_need_a_signed_in_operator(hooks: Hooks) -> None:
    webhook_id = await hooks.webhook("http://127.0.0.1:9/hook")
    anonymous = hooks.harness.client()
    for path in (
        "",
        f"/{webhook_id}",
        f"/{webhook_id}/edit",
        f"/{webhook_id}/deliveries",
        f"/{webhook_id}/dead-letters",
    ):
        response = await anonymous.get(f"/console/webhooks{path}")
        assert response.status_code == 303 and response.headers["location"].startswith("/console/login"), path
    response = await anonymous.post(f"/console/webhooks/{webhook_id}/test", headers=ORIGIN)
    assert response.status_code == 303 and response.headers["location"] == "/console/login"


async def test_an_admin_creates_a_webhook_whose_credentials_are_never_shown_again(
    hooks: Hooks, caplog: pytest.LogCaptureFixture
) -> None:
    admin = await hooks.harness.signed_in("admin@acme.test")
    webhook_id = created_id(await create_through_the_form(hooks, admin))
    pages = [
        f"/console/webhooks/{webhook_id}",
        f"/console/webhooks/{webhook_id}/edit",
        "/console/webhooks",
        f"/console/webhooks?site={hooks.site_id}",
        "/console/audit",
    ]
    for path in pages:
        html = (await admin.get(path)).text
        assert SECRET not in html, path
    detail = (await admin.get(f"/console/webhooks/{webhook_id}")).text
    assert "Authorize, StopTransaction" in detail and "credentials set, never shown" in detail
    edit = (await admin.get(f"/console/webhooks/{webhook_id}/edit")).text
    assert edit.count("Set. Leave blank to keep it") == 2  # user name and password
    assert 'id="password" name="password" type="password" value=""' in edit
    entry = (await hooks.audit("webhook.create"))[0]
    assert entry.object_id == webhook_id and entry.detail["auth"] == "basic" and SECRET not in repr(entry)
    assert SECRET not in caplog.text
    async with hooks.store.transaction() as session:
        row = await session.get(Webhook, webhook_id)
        assert row is not None and row.credentials is not None and SECRET.encode() not in row.credentials


async def test_the_list_is_filtered_by_site_status_and_event_type(hooks: Hooks) -> None:
    other_site = await _a_second_site(hooks)
    a = await hooks.webhook("http://127.0.0.1:9/a", events="Authorize")
    b = await hooks.webhook("http://127.0.0.1:9/b", events="StopTransaction", site_id=other_site)
    async with hooks.store.transaction() as session:
        await webhook_service.set_enabled(session, OPERATOR, b, False, now=hooks.harness.clock.now())
    viewer = await hooks.harness.signed_in("viewer@acme.test")
    for query, shown, hidden in (
        (f"site={hooks.site_id}", a, b),
        ("status=disabled", b, a),
        ("event=Authorize", a, b),
    ):
        html = (await viewer.get(f"/console/webhooks?{query}")).text
        assert f"/webhooks/{shown}" in html and f"/webhooks/{hidden}" not in html, query


async def _a_second_site(hooks: Hooks) -> str:
    async with hooks.store.transaction() as session:
        site = await sites.create_site(
            session,
            OPERATOR,
            hooks.keys.credential_cipher(),
            company_id=hooks.harness.team.company_id,
            name="North",
            now=hooks.harness.clock.now(),
        )
    return site.id


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"url": "ftp://example.org/x"}, "url", "is not an http:// or https:// URL"),
        ({"events": []}, "events", "subscribe to at least one event type"),
        ({"password": ""}, "password", "auth type basic needs password"),
        ({"auth": "oauth2", "token_url": "http://127.0.0.1:9/token", "client_id": "cid"}, "client_secret", "needs"),
        ({"alg": "rsa-pss-sha256"}, "alg", "only available with the legacy signature format"),
        ({"site_id": ""}, "site_id", "choose the site"),
    ],
)
async def test_an_invalid_webhook_is_422_naming_the_field_and_keeping_the_form_but_no_secret(
    hooks: Hooks, fields: dict[str, object], field: str, message: str
) -> None:
    admin = await hooks.harness.signed_in("admin@acme.test")
    response = await create_through_the_form(hooks, admin, url=fields.pop("url", "http://127.0.0.1:9/kept"), **fields)
    assert response.status_code == 422
    assert f'id="{field}-error"' in response.text and message in response.text
    if field != "url":
        assert 'value="http://127.0.0.1:9/kept"' in response.text
    assert SECRET not in response.text
    async with hooks.store.transaction() as session:
        assert list(await session.scalars(select(Webhook))) == []  # nothing half-saved


async def test_an_edit_keeps_blank_credentials_replaces_typed_ones_and_refuses_a_stale_form(hooks: Hooks) -> None:
    webhook_id = await hooks.webhook("http://127.0.0.1:9/hook", auth=BasicAuth("partner", SECRET))
    admin = await hooks.harness.signed_in("admin@acme.test")
    page = (await admin.get(f"/console/webhooks/{webhook_id}/edit")).text
    token = csrf_of(page)
    form = {
        "url": "http://127.0.0.1:9/moved",
        "events": ["Authorize", "ChargePointStatus"],
        "auth": "basic",
        "username": "",
        "password": "",
        "alg": "ed25519",
        "signature_format": "rfc9421",
        "version": "1",
        "csrf_token": token,
    }
    saved = await admin.post(f"/console/webhooks/{webhook_id}/edit", data=form, headers=ORIGIN)
    assert saved.status_code == 303
    assert await _stored_auth(hooks, webhook_id) == BasicAuth("partner", SECRET)
    detail = await hooks.detail(webhook_id)
    assert (detail.url, detail.event_types, detail.version) == (
        "http://127.0.0.1:9/moved",
        ["Authorize", "ChargePointStatus"],
        2,
    )
    stale = await admin.post(
        f"/console/webhooks/{webhook_id}/edit",
        data={**form, "url": "http://127.0.0.1:9/typed-over", "password": "another-secret"},
        headers=ORIGIN,
    )
    assert stale.status_code == 409 and "changed by someone else" in stale.text
    assert 'value="http://127.0.0.1:9/typed-over"' in stale.text and "another-secret" not in stale.text
    assert 'name="version" value="2"' in stale.text
    assert (await hooks.detail(webhook_id)).url == "http://127.0.0.1:9/moved"
    replaced = await admin.post(
        f"/console/webhooks/{webhook_id}/edit",
        data={**form, "version": "2", "auth": "token", "token": "tok-new"},
        headers=ORIGIN,
    )
    assert replaced.status_code == 303
    assert (await _stored_auth(hooks, webhook_id)).type.value == "token"
    update = (await hooks.audit("webhook.update"))[0]
    assert update.detail["authentication"] == "replaced" and "tok-new" not in repr(update)
    invalid = await admin.post(
        f"/console/webhooks/{webhook_id}/edit",
        data={**form, "version": "3", "auth": "basic", "username": "partner"},
        headers=ORIGIN,
    )
    assert invalid.status_code == 422 and 'id="password-error"' in invalid.text  # a new type needs every field


async def _stored_auth(hooks: Hooks, webhook_id: str):  # type: ignore[no-untyped-def]
    async with hooks.store.transaction() as session:
        row = await session.get(Webhook, webhook_id)
    assert row is not None and row.credentials is not None
    return from_document(json.loads(hooks.keys.credential_cipher().decrypt(row.credentials)))


async def test_an_admin_disables_enables_and_deletes_with_the_version_the_page_showed(hooks: Hooks) -> None:
    webhook_id = await hooks.webhook("http://127.0.0.1:9/hook")
    admin = await hooks.harness.signed_in("admin@acme.test")
    token = await token_of(admin)
    base = f"/console/webhooks/{webhook_id}"
    assert (
        await admin.post(f"{base}/disable", data={"csrf_token": token, "version": "1"}, headers=ORIGIN)
    ).status_code == 303
    assert "<dd>disabled</dd>" in (await admin.get(base)).text
    stale = await admin.post(f"{base}/enable", data={"csrf_token": token, "version": "1"}, headers=ORIGIN)
    assert stale.status_code == 409 and not (await hooks.detail(webhook_id)).enabled
    assert (
        await admin.post(f"{base}/enable", data={"csrf_token": token, "version": "2"}, headers=ORIGIN)
    ).status_code == 303
    deleted = await admin.post(
        f"{base}/delete", data={"csrf_token": token, "version": "3"}, headers={**ORIGIN, "HX-Request": "true"}
    )
    assert deleted.headers["hx-redirect"] == "/console/webhooks"
    assert (await admin.get(base)).status_code == 404
    assert [e.action for e in await hooks.audit("webhook.delete")] == ["webhook.delete"]
    assert len(await hooks.audit("webhook.disable")) == 1 and len(await hooks.audit("webhook.enable")) == 1


async def test_a_test_event_arrives_signed_and_authenticated_and_is_in_the_delivery_log(hooks: Hooks) -> None:
    async with run_receiver(lambda _r: Reply(202, b"thanks")) as receiver:
        webhook_id = await hooks.webhook(receiver.url, auth=BasicAuth("partner", SECRET))
        async with hooks.store.transaction() as session:
            await webhook_service.set_enabled(session, OPERATOR, webhook_id, False, now=hooks.harness.clock.now())
        admin = await hooks.harness.signed_in("admin@acme.test")
        sent = await admin.post(
            f"/console/webhooks/{webhook_id}/test", data={"csrf_token": await token_of(admin)}, headers=ORIGIN
        )
        assert sent.status_code == 303
        shown = await admin.get(sent.headers["location"])
    assert "The test event was delivered: HTTP 202" in shown.text
    (request,) = receiver.received  # once, even to a disabled webhook, and no retry
    verified = verify_request(
        method="POST",
        path="/hook",
        headers=request.headers,
        body=request.body,
        keys=public_keys,
        now=hooks.harness.clock.now().timestamp(),
    )
    assert verified.event["eventType"] == "WebhookTest" and verified.event["siteId"] == hooks.site_id
    assert verified.event["payload"] == {"webhookId": webhook_id, "requestedBy": "operator admin@acme.test"}
    assert request.headers["authorization"].startswith("Basic ")
    assert "WebhookTest" in shown.text and verified.event["eventId"] in shown.text
    log = (await admin.get(f"/console/webhooks/{webhook_id}/deliveries?event_type=WebhookTest")).text
    assert verified.event["eventId"] in log and "thanks" in log
    entry = (await hooks.audit("webhook.test"))[0]
    assert entry.detail == {"event": verified.event["eventId"], "outcome": "delivered"}


async def test_a_failed_test_event_and_a_hostile_response_are_shown_escaped(hooks: Hooks) -> None:
    hostile_body = f"{HOSTILE}<img src=x onerror=alert(2)>".encode()
    async with run_receiver(lambda _r: Reply(500, hostile_body)) as receiver:
        webhook_id = await hooks.webhook(receiver.url + "?q=<b>x</b>")
        admin = await hooks.harness.signed_in("admin@acme.test")
        sent = await admin.post(
            f"/console/webhooks/{webhook_id}/test", data={"csrf_token": await token_of(admin)}, headers=ORIGIN
        )
        shown = (await admin.get(sent.headers["location"])).text
    assert "The test event was not delivered: HTTP 500" in shown
    for html in (shown, (await admin.get(f"/console/webhooks/{webhook_id}/deliveries")).text):
        assert "<script>alert(1)</script>" not in html and "<img src=x" not in html and "<b>x</b>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in html
    # The audit log keeps the URL without its query, which may carry a partner's token.
    assert (await hooks.audit("webhook.create"))[0].detail["url"] == receiver.url


async def test_the_delivery_log_shows_every_lane_attempt_with_filters_and_pages(hooks: Hooks) -> None:
    answers = [Reply(503, b"busy")] + [Reply(204)] * 60
    async with run_receiver(lambda _r: answers.pop(0)) as receiver:
        webhook_id = await hooks.webhook(receiver.url)
        await hooks.publish(*(f"T{i}" for i in range(55)))
        engine = hooks.engine()
        await engine.lease_once()
        await engine.fill_once()
        await drain(engine, await hooks.lane_id(webhook_id), hooks.harness.clock, window=1)
    viewer = await hooks.harness.signed_in("viewer@acme.test")
    failed = (await viewer.get(f"/console/webhooks/{webhook_id}/deliveries?outcome=failed")).text
    assert failed.count("HTTP 503") == 1 and "busy" in failed
    first = (await viewer.get(f"/console/webhooks/{webhook_id}/deliveries")).text
    assert first.count("<tr>") - 1 == 50
    older = re.search(r'href="([^"]+before=\d+)">Older attempts', first)
    assert older
    second = (await viewer.get(older.group(1).replace("&amp;", "&"))).text
    assert second.count("<tr>") - 1 == 6  # 56 attempts in all
    # A position that is no row number (past the largest id) is the first page, as on the console's other lists.
    beyond = (await viewer.get(f"/console/webhooks/{webhook_id}/deliveries?before={'9' * 20}")).text
    assert beyond.count("<tr>") - 1 == 50
    detail = (await viewer.get(f"/console/webhooks/{webhook_id}")).text
    assert "The whole delivery log (more attempts)" in detail
    async with hooks.store.transaction() as session:
        assert len(list(await session.scalars(select(WebhookDelivery)))) == 56


async def test_the_health_shows_each_lanes_depth_failures_and_levels_against_the_thresholds(hooks: Hooks) -> None:
    async with run_receiver(lambda _r: Reply(204)) as closed:
        dead_url = closed.url
    webhook_id = await hooks.webhook(dead_url)
    await hooks.publish(*(f"W{i}" for i in range(6)))
    engine = hooks.engine()
    await engine.lease_once()
    await engine.fill_once()
    await engine.step(await hooks.lane_id(webhook_id))  # the head fails once: connection refused
    admin = await hooks.harness.signed_in("admin@acme.test")
    health = await admin.get(f"/console/webhooks/{webhook_id}/health", headers={"HX-Request": "true"})
    assert health.status_code == 200
    assert '<section id="health"' in health.text and "<html" not in health.text
    assert "alert above 5 and critical above 100" in health.text and "alert above 500 ms" in health.text
    row = re.search(r'<tr id="lane-Authorize">(.*?)</tr>', health.text, re.S)
    assert row
    cells = re.findall(r"<td>(.*?)</td>", row.group(1), re.S)
    assert "level-alert" in cells[1]  # failing, and over the waiting threshold
    assert cells[2].startswith("6 of 1000") and "level-alert" in cells[2]
    assert cells[5] == "1" and "connection failed" in cells[7]
    listing = (await admin.get("/console/webhooks")).text
    assert 'class="level level-alert">alert</span>' in listing


async def test_dead_letters_are_counted_listed_and_replayed_one_or_all(hooks: Hooks) -> None:
    async with run_receiver(lambda _r: Reply(500)) as failing:
        webhook_id = await hooks.webhook(failing.url)
        await hooks.publish("A", "B", "C")
        engine = hooks.engine(RetryPolicy(max_retries=1))
        await engine.lease_once()
        await engine.fill_once()
        await drain(engine, await hooks.lane_id(webhook_id), hooks.harness.clock)
    assert len(failing.received) == 6  # each event tried twice, then dead-lettered by the lane itself
    admin = await hooks.harness.signed_in("admin@acme.test")
    detail = (await admin.get(f"/console/webhooks/{webhook_id}")).text
    assert "<strong>3</strong> events could not be delivered" in detail
    listing = (await admin.get(f"/console/webhooks/{webhook_id}/dead-letters")).text
    assert "<strong>3</strong> events wait" in listing and "Replay all 3" in listing
    assert listing.count("retries_exhausted") == 3
    event_ids = re.findall(r'name="event_id" value="([^"]+)"', listing)
    token = csrf_of(listing)
    one = await admin.post(
        f"/console/webhooks/{webhook_id}/dead-letters/replay",
        data={"event_id": event_ids[0], "csrf_token": token},
        headers=ORIGIN,
    )
    assert one.status_code == 303
    after_one = (await admin.get(one.headers["location"])).text
    assert "1 event(s) put back" in after_one and "<strong>2</strong> events wait" in after_one
    everything = await admin.post(
        f"/console/webhooks/{webhook_id}/dead-letters/replay", data={"csrf_token": token}, headers=ORIGIN
    )
    assert everything.status_code == 303
    assert "<strong>0</strong> events wait" in (await admin.get(everything.headers["location"])).text
    assert "replayed" in (await admin.get(f"/console/webhooks/{webhook_id}/dead-letters?include=all")).text
    assert (await hooks.detail(webhook_id)).lanes[0].size == 3
    replays = await hooks.audit("webhook.replay")
    assert [e.detail for e in replays] == [
        {"events": "2", "event": "all waiting"},
        {"events": "1", "event": event_ids[0]},
    ]
    missing = await admin.post(
        f"/console/webhooks/{webhook_id}/dead-letters/replay",
        data={"event_id": event_ids[0], "csrf_token": token},
        headers=ORIGIN,
    )
    assert missing.status_code == 404


async def test_a_viewer_reads_every_page_but_every_change_is_refused(hooks: Hooks) -> None:
    webhook_id = await hooks.webhook("http://127.0.0.1:9/hook")
    viewer = await hooks.harness.signed_in("viewer@acme.test")
    token = await token_of(viewer)
    for path in ("", f"/{webhook_id}", f"/{webhook_id}/deliveries", f"/{webhook_id}/dead-letters"):
        response = await viewer.get(f"/console/webhooks{path}")
        assert response.status_code == 200, path
        assert "Create webhook" not in response.text and "Send a test event" not in response.text
    assert (await viewer.get(f"/console/webhooks/{webhook_id}/edit")).status_code == 403
    for path in ("", "/edit", "/enable", "/disable", "/delete", "/test", "/dead-letters/replay"):
        response = await viewer.post(
            f"/console/webhooks{'/' + webhook_id if path else ''}{path}",
            data={"csrf_token": token, "site_id": hooks.site_id, "url": "http://127.0.0.1:9/x", "events": "Authorize"},
            headers=ORIGIN,
        )
        assert response.status_code == 403, path
    assert (await hooks.detail(webhook_id)).enabled


async def test_a_change_without_the_token_or_from_another_origin_is_refused(hooks: Hooks) -> None:
    webhook_id = await hooks.webhook("http://127.0.0.1:9/hook")
    admin = await hooks.harness.signed_in("admin@acme.test")
    token = await token_of(admin)
    path = f"/console/webhooks/{webhook_id}/disable"
    assert (await admin.post(path, headers=ORIGIN)).status_code == 403
    assert (await admin.post(path, data={"csrf_token": token[:-1] + "x"}, headers=ORIGIN)).status_code == 403
    assert (
        await admin.post(path, data={"csrf_token": token}, headers={"Origin": "https://evil.example"})
    ).status_code == 403
    assert (await hooks.detail(webhook_id)).enabled


async def test_another_companys_webhook_is_not_found_on_every_page(hooks: Hooks) -> None:
    theirs = await hooks.webhook("http://127.0.0.1:9/theirs", site_id=hooks.other_site_id)
    admin = await hooks.harness.signed_in("admin@acme.test")
    token = await token_of(admin)
    for path in ("", "/edit", "/health", "/deliveries", "/dead-letters"):
        assert (await admin.get(f"/console/webhooks/{theirs}{path}")).status_code == 404, path
    for path in ("/edit", "/enable", "/disable", "/delete", "/test", "/dead-letters/replay"):
        response = await admin.post(
            f"/console/webhooks/{theirs}{path}",
            data={"csrf_token": token, "url": "http://127.0.0.1:9/x", "events": "Authorize", "auth": "none"},
            headers=ORIGIN,
        )
        assert response.status_code == 404, path
    assert "/theirs" not in (await admin.get("/console/webhooks")).text
    created = await create_through_the_form(hooks, admin, site_id=hooks.other_site_id)
    assert created.status_code == 422 and 'id="site_id-error"' in created.text


async def test_an_api_call_and_a_cli_command_leave_audit_records_and_reach_the_delivery_log(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHARGENET_WEBHOOK_ALLOW_PRIVATE", "1")
    copy_sqlite_template(tmp_path / "faces.db")
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'faces.db'}"
    settings = load_settings(
        {"database_url": database_url, "data_dir": str(tmp_path / "data"), "webhook_allow_private": True}, environ={}
    )
    async with run_receiver() as receiver:
        context = await open_context(settings, clock=clock)
        try:
            tenant = await make_tenant(context.store, context.keys, clock.now())
            sender = WebhookSender(clock=clock, keys=signing_keys, allow_private=True)
            context.webhook_tests = OneShotSender(context.store, sender, context.keys.credential_cipher())
            token = await partner_token(context, tenant.company_id, ["webhooks:write", "webhooks:read"])
            transport = httpx.ASGITransport(app=create_app(context), client=("198.51.100.7", 5000))
            async with httpx.AsyncClient(transport=transport, base_url="http://test/api/v1") as api:
                headers = {"Authorization": f"Bearer {token}"}
                body = {"siteId": tenant.site_id, "url": receiver.url, "events": ["Authorize"]}
                webhook_id = (await api.post("/webhooks", json=body, headers=headers)).json()["id"]
                tested = await api.post(f"/webhooks/{webhook_id}/test", headers=headers)
                assert tested.status_code == 200, tested.text
                assert tested.json()["eventType"] == "WebhookTest" and tested.json()["delivered"] is True
                log = await api.get(
                    f"/webhooks/{webhook_id}/deliveries", params={"outcome": "delivered"}, headers=headers
                )
                assert log.status_code == 200 and [a["id"] for a in log.json()["items"]] == [tested.json()["id"]]
                assert (
                    await api.get(f"/webhooks/{webhook_id}/deliveries", params={"cursor": "zz"}, headers=headers)
                ).status_code == 404  # a cursor of the right form that no page gave names no page
                assert (await api.post("/webhooks/wh_unknown/test", headers=headers)).status_code == 404
            await sender.aclose()
            async with context.store.transaction() as session:
                found = await audit.list_records(session, OPERATOR, PageRequest(), company_id=tenant.company_id)
            by_api = {e.action: e for e in found.items}
            assert by_api["webhook.test"].face == "api" and by_api["webhook.test"].address == "198.51.100.7"
            assert by_api["webhook.create"].face == "api"
        finally:
            await context.close()

        def cli(*args: str) -> str:
            out = io.StringIO()
            with redirect_stdout(out), redirect_stderr(io.StringIO()):
                code = main([*args, "--json", "--database-url", database_url, "--data-dir", str(tmp_path / "data")])
            assert code == 0, args
            return out.getvalue()

        printed = json.loads(await asyncio.to_thread(cli, "admin", "webhook", "test", webhook_id))
        assert printed["delivered"] is True and printed["eventType"] == "WebhookTest"
        assert len(receiver.received) == 2
        cli_log = json.loads(await asyncio.to_thread(cli, "admin", "webhook", "deliveries", webhook_id))
        assert cli_log["items"][0]["id"] == printed["id"] and len(cli_log["items"]) == 2
    assert json.loads(receiver.received[1].body)["payload"]["requestedBy"] == "local operator"
    store = Store(database_url)
    try:
        async with store.transaction() as session:
            found = await audit.list_records(session, OPERATOR, PageRequest(), company_id=tenant.company_id)
    finally:
        await store.dispose()
    tests = [e for e in found.items if e.action == "webhook.test"]
    assert [e.face for e in tests] == ["cli", "api"] and tests[0].actor == "local operator"


async def test_an_admin_sets_a_filter_and_headers_recovers_a_window_and_rotates_credentials(hooks: Hooks) -> None:
    webhook_id = await hooks.webhook("http://127.0.0.1:9/hook", auth=BasicAuth("partner", SECRET))
    admin = await hooks.harness.signed_in("admin@acme.test")
    token = csrf_of((await admin.get(f"/console/webhooks/{webhook_id}/edit")).text)
    form = {
        "url": "http://127.0.0.1:9/hook",
        "events": ["Authorize"],
        "auth": "basic",
        "alg": "ed25519",
        "signature_format": "rfc9421",
        "stations": "ST-1, ST-2",
        "headers": "X-Partner-Tenant: acme\r\n",
        "version": "1",
        "csrf_token": token,
    }
    refused = await admin.post(
        f"/console/webhooks/{webhook_id}/edit", data={**form, "headers": "Signature: forged"}, headers=ORIGIN
    )
    assert refused.status_code == 422 and 'id="headers-error"' in refused.text
    saved = await admin.post(f"/console/webhooks/{webhook_id}/edit", data=form, headers=ORIGIN)
    assert saved.status_code == 303, saved.text
    detail = await hooks.detail(webhook_id)
    assert (detail.stations, detail.headers) == (["ST-1", "ST-2"], {"X-Partner-Tenant": "acme"})

    await hooks.publish("A", "B")
    engine = hooks.engine()
    await engine.fill_once()
    hooks.harness.clock.advance(60)
    page = (await admin.get(f"/console/webhooks/{webhook_id}")).text
    assert "stations ST-1, ST-2" in page and "X-Partner-Tenant: acme" in page
    token = csrf_of(page)
    window = {"since": "2026-07-01T13:00", "csrf_token": token}  # Brussels wall clock: 11:00 UTC
    future = await admin.post(
        f"/console/webhooks/{webhook_id}/recover", data={**window, "until": "2026-07-01T16:00"}, headers=ORIGIN
    )
    assert future.status_code == 422 and 'id="until-error"' in future.text
    recovered = await admin.post(
        f"/console/webhooks/{webhook_id}/recover", data={**window, "until": "2026-07-01T14:01"}, headers=ORIGIN
    )
    assert recovered.status_code == 303, recovered.text
    assert "0 event(s) recovered" in (await admin.get(recovered.headers["location"])).text  # both still wait

    rotate = {"auth": "token", "token": "tok-new", "version": "2", "csrf_token": token}
    ended = await admin.post(
        f"/console/webhooks/{webhook_id}/rotate", data={**rotate, "overlap_until": "2026-07-01T14:00"}, headers=ORIGIN
    )
    assert ended.status_code == 422 and 'id="overlap_until-error"' in ended.text
    rotated = await admin.post(
        f"/console/webhooks/{webhook_id}/rotate", data={**rotate, "overlap_until": "2026-07-02T14:00"}, headers=ORIGIN
    )
    assert rotated.status_code == 303, rotated.text
    assert (await _stored_auth(hooks, webhook_id)).type.value == "token"
    assert (await hooks.detail(webhook_id)).auth_overlap_until is not None
    actions = [action for action in ("webhook.recover", "webhook.rotate_credentials") if await hooks.audit(action)]
    assert actions == ["webhook.recover", "webhook.rotate_credentials"]
    assert "tok-new" not in repr(await hooks.audit("webhook.rotate_credentials"))
