from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, text

from chargenet.api.app import create_api
from chargenet.app import AppContext, open_context
from chargenet.clock import ManualClock
from chargenet.config import load_settings
from chargenet.domain.events import AuthorizePayload
from chargenet.services.pages import encode_cursor
from chargenet.store.models import AuditRecord, Webhook, WebhookDeadLetter, WebhookLaneEntry
from chargenet.webhooks.install import install as install_webhooks
from chargenet.webhooks.lane import DeadLetter, DeadLetterReason
from chargenet.webhooks.queue import store_dead_letter
from tests.factories import make_tenant, partner_token

pytestmark = pytest.mark.sqlite_only(
    reason="the webhook API's answers and problems; the queue's store has its own tests"
)


@dataclass
class Api:
    client: httpx.AsyncClient
    context: AppContext
    company_id: str
    site_id: str
    changes: list[int]

    async def grants(self, *scopes: str, site: bool = False) -> dict[str, str]:
        """A real bearer token of an application in a group granting `scopes` over the company (or the site)."""
        token = await partner_token(self.context, self.company_id, scopes, site_id=self.site_id if site else None)
        return {"Authorization": f"Bearer {token}"}

    async def outsider(self, *scopes: str) -> dict[str, str]:
        """A token of another company's application, granting `scopes` over that company."""
        other = await make_tenant(self.context.store, self.context.keys, self.context.clock.now(), station_id="X-1")
        return {"Authorization": f"Bearer {await partner_token(self.context, other.company_id, scopes)}"}


@pytest.fixture
async def api(database_url: str, tmp_path: Path, clock: ManualClock) -> AsyncIterator[Api]:
    settings = load_settings(
        {"database_url": database_url, "data_dir": str(tmp_path / "data"), "webhook_allow_private": False}, environ={}
    )
    context = await open_context(settings, clock=clock)
    tenant = await make_tenant(context.store, context.keys, clock.now())
    async with context.store.transaction() as session:
        company_id = (await session.execute(text("SELECT company_id FROM sites"))).scalar()
    changes: list[int] = []
    engine = install_webhooks(context)
    poke = engine.poke

    def counted_poke() -> None:
        changes.append(1)
        poke()

    engine.poke = counted_poke  # type: ignore[method-assign]
    app = create_api(context)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        yield Api(client, context, str(company_id), tenant.site_id, changes)
    await context.close()


def _create_body(api: Api, **extra: Any) -> dict[str, Any]:
    return {"siteId": api.site_id, "url": "https://93.184.215.14/hook", "events": ["Authorize"], **extra}


async def test_webhook_crud_never_returns_credentials(api: Api) -> None:
    write = await api.grants("webhooks:write", "webhooks:read")
    body = _create_body(api, auth={"type": "basic", "username": "u", "password": "pw-secret"})
    created = await api.client.post("/webhooks", json=body, headers=write)
    assert created.status_code == 201, created.text
    webhook_id = created.json()["id"]
    shown = await api.client.get(f"/webhooks/{webhook_id}", headers=write)
    patched = await api.client.patch(f"/webhooks/{webhook_id}", json={"enabled": False}, headers=write)
    listed = await api.client.get("/webhooks", headers=write)
    deleted = await api.client.delete(f"/webhooks/{webhook_id}", headers=write)
    assert (created.status_code, shown.status_code, patched.json()["enabled"], deleted.status_code) == (
        201,
        200,
        False,
        204,
    )
    assert "pw-secret" not in created.text + shown.text + patched.text + listed.text
    assert shown.json()["lanes"][0]["eventType"] == "Authorize"
    assert [w["id"] for w in listed.json()["items"]] == [webhook_id]
    assert len(api.changes) == 3


async def test_webhook_outside_the_callers_reach_is_not_found(api: Api) -> None:
    created = await api.client.post("/webhooks", json=_create_body(api), headers=await api.grants("webhooks:write"))
    other = await api.outsider("webhooks:read")
    shown = await api.client.get(f"/webhooks/{created.json()['id']}", headers=other)
    listed = await api.client.get("/webhooks", headers=other)
    assert (shown.status_code, listed.json()["items"]) == (404, [])


async def test_site_level_grant_reaches_that_sites_webhooks(api: Api) -> None:
    created = await api.client.post("/webhooks", json=_create_body(api), headers=await api.grants("webhooks:write"))
    shown = await api.client.get(
        f"/webhooks/{created.json()['id']}", headers=await api.grants("webhooks:read", site=True)
    )
    assert shown.status_code == 200


async def test_private_target_is_refused_with_a_problem_naming_the_url(api: Api) -> None:
    body = _create_body(api, url="http://10.1.2.3/hook")
    refused = await api.client.post("/webhooks", json=body, headers=await api.grants("webhooks:write"))
    assert refused.status_code == 422
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["field"] == "url" and "10.1.2.3 is a private address" in refused.json()["detail"]


def _oauth2(token_url: str) -> dict[str, str]:
    return {"type": "oauth2", "tokenUrl": token_url, "clientId": "c", "clientSecret": "s"}


async def test_private_oauth2_token_url_is_refused_with_a_problem_naming_it(api: Api) -> None:
    body = _create_body(api, auth=_oauth2("http://127.0.0.1:9/token"))
    refused = await api.client.post("/webhooks", json=body, headers=await api.grants("webhooks:write"))
    assert (refused.status_code, refused.headers["content-type"]) == (422, "application/problem+json")
    assert refused.json()["field"] == "tokenUrl" and "127.0.0.1 is a loopback address" in refused.json()["detail"]


async def test_private_oauth2_token_url_is_refused_on_update(api: Api) -> None:
    write = await api.grants("webhooks:write")
    created = await api.client.post("/webhooks", json=_create_body(api), headers=write)
    patch = {"auth": _oauth2("http://192.168.1.20/token")}
    refused = await api.client.patch(f"/webhooks/{created.json()['id']}", json=patch, headers=write)
    assert (refused.status_code, refused.headers["content-type"]) == (422, "application/problem+json")
    assert refused.json()["field"] == "tokenUrl" and "192.168.1.20 is a private address" in refused.json()["detail"]


async def test_oauth2_without_client_secret_is_refused(api: Api) -> None:
    auth = {"type": "oauth2", "tokenUrl": "https://93.184.215.14/token", "clientId": "c"}
    refused = await api.client.post(
        "/webhooks", json=_create_body(api, auth=auth), headers=await api.grants("webhooks:write")
    )
    # The settings of each auth type are their own shape (the OpenAPI document's `oneOf`), named by the type.
    assert (refused.status_code, refused.json()["field"]) == (422, "auth.oauth2.clientSecret")


async def test_an_algorithm_the_format_refuses_is_422_in_one_body_and_409_against_the_webhook(api: Api) -> None:
    write = await api.grants("webhooks:write")
    refused = await api.client.post("/webhooks", json=_create_body(api, alg="rsa-pss-sha256"), headers=write)
    assert (refused.status_code, refused.json()["field"]) == (422, "alg")
    body = _create_body(api, alg="rsa-pss-sha256", signatureFormat="legacy")
    webhook_id = (await api.client.post("/webhooks", json=body, headers=write)).json()["id"]
    both = {"alg": "rsa-pss-sha256", "signatureFormat": "rfc9421"}
    assert (await api.client.patch(f"/webhooks/{webhook_id}", json=both, headers=write)).status_code == 422
    # Only the format changes: the webhook's algorithm does not allow it, a conflict with its state.
    one = await api.client.patch(f"/webhooks/{webhook_id}", json={"signatureFormat": "rfc9421"}, headers=write)
    assert one.status_code == 409 and one.headers["content-type"] == "application/problem+json"


async def test_dead_letters_list_and_replay_answer_for_an_empty_webhook(api: Api) -> None:
    write = await api.grants("webhooks:write", "webhooks:read")
    webhook_id = (await api.client.post("/webhooks", json=_create_body(api), headers=write)).json()["id"]
    listed = await api.client.get(f"/webhooks/{webhook_id}/dead-letters", headers=write)
    replayed = await api.client.post(f"/webhooks/{webhook_id}/dead-letters/replay", headers=write)
    assert (listed.json(), replayed.json()) == ({"items": [], "next": None}, {"replayed": []})


async def _publish(api: Api, *tags: str) -> None:
    async with api.context.store.transaction() as session:
        for tag in tags:
            payload = AuthorizePayload.model_validate({"stationId": "ST-1", "idTag": tag, "status": "Accepted"})
            await api.context.outbox.publish(session, site_id=api.site_id, payload=payload)


async def test_events_feed_resumes_from_its_cursor(api: Api) -> None:
    read = await api.grants("events:read")
    await _publish(api, "A", "B", "C")
    first = (await api.client.get("/events", params={"siteId": api.site_id, "limit": 2}, headers=read)).json()
    second = (
        await api.client.get("/events", params={"siteId": api.site_id, "cursor": first["next"]}, headers=read)
    ).json()
    await _publish(api, "D")
    third = (
        await api.client.get("/events", params={"siteId": api.site_id, "cursor": second["next"]}, headers=read)
    ).json()
    tags = [[e["payload"]["idTag"] for e in page["items"]] for page in (first, second, third)]
    assert tags == [["A", "B"], ["C"], ["D"]]


async def test_events_feed_filters_by_event_type(api: Api) -> None:
    await _publish(api, "A")
    params = {"siteId": api.site_id, "eventType": "StopTransaction"}
    page = (await api.client.get("/events", params=params, headers=await api.grants("events:read"))).json()
    assert page["items"] == []


async def test_events_of_a_site_outside_the_reach_are_not_found(api: Api) -> None:
    answer = await api.client.get("/events", params={"siteId": api.site_id}, headers=await api.outsider("events:read"))
    assert answer.status_code == 404


async def test_cursor_of_another_form_is_invalid_input(api: Api) -> None:
    params = {"siteId": api.site_id, "cursor": "not a cursor!"}
    answer = await api.client.get("/events", params=params, headers=await api.grants("events:read"))
    assert (answer.status_code, answer.json()["field"]) == (422, "cursor")


async def test_cursor_no_page_gave_names_no_page(api: Api) -> None:
    # Of the documented form (base64url), but not a position of the feed: like an id of no object.
    params = {"siteId": api.site_id, "cursor": "not-a-cursor"}
    answer = await api.client.get("/events", params=params, headers=await api.grants("events:read"))
    assert answer.status_code == 404 and answer.headers["content-type"] == "application/problem+json"


DEAD_LETTER_BODY = '{"eventId":"e-1","eventType":"Authorize","payload":{"idTag":"T"}}'


async def _dead_letter(api: Api, webhook_id: str, event_id: str) -> None:
    letter = DeadLetter(None, event_id, DeadLetterReason.RETRIES_EXHAUSTED, "HTTP 500", 361)
    async with api.context.store.transaction() as session:
        await store_dead_letter(
            session, webhook_id, "Authorize", letter, DEAD_LETTER_BODY.replace("e-1", event_id), api.context.clock.now()
        )


async def test_dead_letters_are_listed_with_their_reason_error_and_attempts(api: Api) -> None:
    write = await api.grants("webhooks:write", "webhooks:read")
    webhook_id = (await api.client.post("/webhooks", json=_create_body(api), headers=write)).json()["id"]
    await _dead_letter(api, webhook_id, "e-1")
    listed = (await api.client.get(f"/webhooks/{webhook_id}/dead-letters", headers=write)).json()
    [letter] = listed["items"]
    assert (letter["eventId"], letter["reason"], letter["error"], letter["attempts"]) == (
        "e-1",
        "retries_exhausted",
        "HTTP 500",
        361,
    )
    assert letter["event"]["eventId"] == "e-1" and letter["replayedAt"] is None


@pytest.mark.both_stores(reason="a replay is a query of the queue's that differs between the stores")
async def test_replaying_one_dead_letter_puts_it_back_at_the_tail_of_its_lane(api: Api) -> None:
    write = await api.grants("webhooks:write", "webhooks:read")
    webhook_id = (await api.client.post("/webhooks", json=_create_body(api), headers=write)).json()["id"]
    await _dead_letter(api, webhook_id, "e-1")
    await _dead_letter(api, webhook_id, "e-2")
    replayed = await api.client.post(
        f"/webhooks/{webhook_id}/dead-letters/replay", json={"eventId": "e-2"}, headers=write
    )
    waiting = (await api.client.get(f"/webhooks/{webhook_id}/dead-letters", headers=write)).json()["items"]
    everything = await api.client.get(f"/webhooks/{webhook_id}/dead-letters?include=all", headers=write)
    async with api.context.store.transaction() as session:
        queued = list(await session.scalars(select(WebhookLaneEntry.event_id)))
    assert replayed.json() == {"replayed": ["e-2"]}
    assert [d["eventId"] for d in waiting] == ["e-1"] and queued == ["e-2"]
    assert {d["eventId"]: d["replayedAt"] is not None for d in everything.json()["items"]} == {
        "e-1": False,
        "e-2": True,
    }


async def test_dead_letters_and_the_delivery_log_read_their_cursors_as_every_list_ordered_by_id(api: Api) -> None:
    read = await api.grants("webhooks:write", "webhooks:read")
    webhook_id = (await api.client.post("/webhooks", json=_create_body(api), headers=read)).json()["id"]
    for event_id in ("e-1", "e-2", "e-3"):
        await _dead_letter(api, webhook_id, event_id)
    letters = f"/webhooks/{webhook_id}/dead-letters"
    first = (await api.client.get(letters, params={"limit": 2}, headers=read)).json()
    second = (await api.client.get(letters, params={"cursor": first["next"]}, headers=read)).json()
    assert [[d["eventId"] for d in page["items"]] for page in (first, second)] == [["e-1", "e-2"], ["e-3"]]
    # A cursor of the documented form whose key is no row number names no page, as on any list ordered by id.
    for path in (letters, f"/webhooks/{webhook_id}/deliveries"):
        answer = await api.client.get(path, params={"cursor": encode_cursor("e-1")}, headers=read)
        assert (answer.status_code, answer.headers["content-type"]) == (404, "application/problem+json"), path
        assert answer.json()["detail"] == f"page at cursor {encode_cursor('e-1')!r} not found", path


async def test_dead_letters_of_another_companys_webhook_are_not_found(api: Api) -> None:
    write = await api.grants("webhooks:write", "webhooks:read")
    webhook_id = (await api.client.post("/webhooks", json=_create_body(api), headers=write)).json()["id"]
    await _dead_letter(api, webhook_id, "e-1")
    other = await api.outsider("webhooks:read", "webhooks:write")
    listed = await api.client.get(f"/webhooks/{webhook_id}/dead-letters", headers=other)
    replayed = await api.client.post(f"/webhooks/{webhook_id}/dead-letters/replay", headers=other)
    async with api.context.store.transaction() as session:
        left = await session.scalar(select(func.count()).select_from(WebhookDeadLetter))
    assert (listed.status_code, replayed.status_code, left) == (404, 404, 1)


async def test_webhook_credentials_are_stored_encrypted(api: Api) -> None:
    write = await api.grants("webhooks:write")
    body = _create_body(api, auth={"type": "basic", "username": "partner-user", "password": "pw-secret-123"})
    webhook_id = (await api.client.post("/webhooks", json=body, headers=write)).json()["id"]
    async with api.context.store.transaction() as session:
        stored = await session.scalar(select(Webhook.credentials).where(Webhook.id == webhook_id))
    assert stored is not None
    assert b"pw-secret-123" not in stored and b"partner-user" not in stored


def _at(moment: datetime) -> str:
    return moment.isoformat()


async def test_webhook_care_refusals_are_problems_naming_the_field_and_store_nothing(api: Api) -> None:
    write = await api.grants("webhooks:write", "webhooks:read")
    body = _create_body(api, auth={"type": "token", "token": "old"}, headers={"X-Partner-Tenant": "acme"})
    created = await api.client.post("/webhooks", json={**body, "stations": ["ST-1"]}, headers=write)
    assert created.status_code == 201, created.text
    webhook = created.json()
    assert (webhook["headers"], webhook["stations"], webhook["chargePoints"]) == (
        {"X-Partner-Tenant": "acme"},
        ["ST-1"],
        [],
    )
    hook = f"/webhooks/{webhook['id']}"
    now = api.context.clock.now()
    rotate = {"auth": {"type": "token", "token": "new"}}
    refused: list[tuple[str, str, dict[str, Any], str]] = [
        ("POST", "/webhooks", _create_body(api, headers={"X-Tenant": "a\r\nInjected: 1"}), "headers"),
        ("POST", "/webhooks", _create_body(api, headers={"X-Tenant": "a\nb"}), "headers"),
        *(
            ("PATCH", hook, {"headers": {name: "x"}}, "headers")
            for name in (
                "Signature",
                "Signature-Input",
                "content-digest",
                "AUTHORIZATION",
                "Host",
                "Content-Length",
                "X-Request-ID",
            )
        ),
        ("PATCH", hook, {"headers": {"X Tenant": "x"}}, "headers"),
        (
            "POST",
            f"{hook}/recover",
            {"since": _at(now - timedelta(hours=1)), "until": _at(now + timedelta(hours=1))},
            "until",
        ),
        (
            "POST",
            f"{hook}/recover",
            {"since": _at(now + timedelta(hours=1)), "until": _at(now + timedelta(hours=2))},
            "until",
        ),
        (
            "POST",
            f"{hook}/recover",
            {"since": _at(now - timedelta(days=8)), "until": _at(now - timedelta(days=6))},
            "since",
        ),
        (
            "POST",
            f"{hook}/credentials/rotate",
            {**rotate, "overlapUntil": _at(now - timedelta(seconds=1))},
            "overlapUntil",
        ),
        (
            "POST",
            f"{hook}/credentials/rotate",
            {**rotate, "overlapUntil": _at(now + timedelta(days=31))},
            "overlapUntil",
        ),
    ]
    for method, path, request, field in refused:
        answer = await api.client.request(method, path, json=request, headers=write)
        problem = (answer.status_code, answer.headers["content-type"], answer.json().get("field"))
        assert problem == (422, "application/problem+json", field), (method, path, request, answer.text)
    async with api.context.store.transaction() as session:
        webhooks = await session.scalar(select(func.count()).select_from(Webhook))
        audited = await session.scalar(
            select(func.count()).select_from(AuditRecord).where(AuditRecord.action.like("webhook.%"))
        )
    unchanged = (await api.client.get(hook, headers=write)).json()
    assert (webhooks, audited) == (1, 1)
    assert (unchanged["version"], unchanged["headers"], unchanged["authOverlapUntil"]) == (
        1,
        {"X-Partner-Tenant": "acme"},
        None,
    )

    recovered = await api.client.post(
        f"{hook}/recover", json={"since": _at(now - timedelta(days=1)), "until": _at(now)}, headers=write
    )
    until = now + timedelta(days=1)
    rotated = await api.client.post(
        f"{hook}/credentials/rotate", json={**rotate, "overlapUntil": _at(until)}, headers=write
    )
    assert (recovered.status_code, recovered.json()["events"]) == (200, 0), recovered.text
    assert (rotated.status_code, rotated.json()["authOverlapUntil"]) == (200, until.isoformat()), rotated.text
    replaced = await api.client.patch(hook, json={"auth": {"type": "token", "token": "newer"}}, headers=write)
    assert replaced.json()["authOverlapUntil"] is None  # a plain change of the credentials ends the overlap
