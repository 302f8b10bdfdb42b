"""Groups and webhooks in Debian's Chromium, against the whole app served on loopback with its webhook lanes
running under a ManualClock the test advances: an application joins a group and the API answers differently; a
webhook to a real receiver gets a signed test event, which the delivery log shows; with the receiver stopped the
lane's health turns to alert, the real lane dead-letters the event as the clock passes its retries, and the dead
letter is replayed once the receiver is back. Each page is scanned by axe-core on the way, in its empty, filled
and error states, the groups in a narrow window and the webhooks in a wide one. Waits are on conditions."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import httpx
import pytest
from chargenet_partner.webhooks import parse_jwks, verify_request
from playwright.async_api import Browser, Page, expect
from sqlalchemy import func, select

from chargenet.clock import ManualClock
from chargenet.domain.events import AuthorizePayload
from chargenet.outbox import Outbox
from chargenet.store.models import WebhookDeadLetter, WebhookLane
from chargenet.webhooks.retry import RetryPolicy
from tests.browser.console import (
    a_site,
    assert_accessible,
    csp_complaints,
    follow,
    served_console,
    sign_in,
)
from tests.support.receiver import Reply, run_receiver

pytestmark = pytest.mark.asyncio(loop_scope="session")

# The lane's real retry policy, shortened so that the clock passes it in three steps rather than 361.
RETRIES = RetryPolicy(max_retries=2)


async def until(condition: Callable[[], object], what: str, timeout: float = 10.0) -> None:
    """Wait for a condition of the server's state (not a page's: those are `expect`ed)."""
    deadline = time.monotonic() + timeout
    while not await _holds(condition):
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        await asyncio.sleep(0.02)


async def _holds(condition: Callable[[], object]) -> bool:
    value = condition()
    if asyncio.iscoroutine(value):
        value = await value
    return bool(value)


async def test_an_application_added_to_a_group_from_its_page_gets_what_the_group_grants(
    browser: Browser, tmp_path: Path
) -> None:
    clock = ManualClock(datetime.now(UTC))
    async with served_console(tmp_path, clock=clock) as console:
        site_id = await a_site(console)
        context = await browser.new_context(viewport={"width": 360, "height": 740})
        page = await context.new_page()
        complaints = csp_complaints(page)
        api_base = console.url.removesuffix("/console")
        try:
            await sign_in(page, console)
            await page.get_by_role("link", name="Applications").click()
            await page.get_by_label("Name", exact=True).fill("Fleet partner")
            await page.get_by_role("button", name="Create application").click()
            client_id = await page.get_by_label("Client ID").input_value()
            secret = await page.get_by_label("Client Secret").input_value()

            async with httpx.AsyncClient(base_url=api_base) as http:
                granted = await http.post(
                    "/auth/oauth2/token", data={"grant_type": "client_credentials"}, auth=(client_id, secret)
                )
                bearer = {"Authorization": f"Bearer {granted.json()['access_token']}"}

                async def sites_answer() -> httpx.Response:
                    clock.advance(3)  # past the bearer check's cache of the application's grants (2 s)
                    return await http.get("/api/v1/sites", headers=bearer)

                assert (await sites_answer()).status_code == 403  # in no group: no scope

                await follow(page, page.get_by_role("link", name="Groups"))
                await assert_accessible(page, "groups, empty")
                new_group = page.locator("form[aria-labelledby=new-group]")
                await new_group.get_by_label("Name").fill("Site readers")
                await new_group.get_by_role("button", name="Create group").click()
                await expect(page.get_by_role("alert")).to_contain_text("not created")
                await expect(page.locator("#scope-error")).to_contain_text("at least one scope")
                await assert_accessible(page, "groups, error (no scope)")
                await expect(new_group.get_by_label("Name")).to_have_value("Site readers")  # kept as typed
                await new_group.get_by_role("checkbox", name="sites:read").check()
                await new_group.get_by_role("button", name="Create group").click()
                await expect(page.get_by_role("heading", name="Group Site readers")).to_be_visible()
                await assert_accessible(page, "group, no members")

                # From the application's side, by keyboard: choose the group, then the button.
                await page.goto(f"{console.url}/applications/{client_id}")
                chooser = page.get_by_label("Group to join")
                await chooser.focus()
                await page.keyboard.press("Tab")
                await expect(page.get_by_role("button", name="Add to group")).to_be_focused()
                await page.keyboard.press("Enter")
                groups_table = page.get_by_role("table", name="What its tokens may do comes from these groups.")
                await expect(groups_table).to_contain_text("Site readers")
                await assert_accessible(page, "application in a group")

                listed = await sites_answer()
                assert listed.status_code == 200 and [s["id"] for s in listed.json()["items"]] == [site_id]

                await groups_table.get_by_role("link", name="Site readers").click()
                members = page.get_by_role("table", name="Their tokens get this group's scopes", exact=False)
                await expect(members).to_contain_text("Fleet partner")
                await assert_accessible(page, "group with a member")
                await page.get_by_role("button", name="Remove Fleet partner from this group").click()
                await expect(page.get_by_text("No applications in this group.")).to_be_visible()
                assert (await sites_answer()).status_code == 403

            await follow(page, page.get_by_role("link", name="All groups"))
            await assert_accessible(page, "groups, filled")
            await page.get_by_label("Grants scope").select_option("meters:read")
            await page.get_by_role("button", name="Filter").click()
            await expect(page.get_by_text("No group matches the filter.")).to_be_visible()
            assert "grants=meters%3Aread" in page.url  # the filtered view can be bookmarked
            assert not complaints
        finally:
            await context.close()


async def test_a_webhook_gets_a_signed_test_event_turns_to_alert_when_its_receiver_stops_and_replays_its_dead_letter(
    page: Page, tmp_path: Path
) -> None:
    clock = ManualClock(datetime.now(UTC))
    async with served_console(tmp_path, clock=clock, webhooks=RETRIES) as console:
        site_id = await a_site(console)
        store = console.context.store
        await page.set_viewport_size({"width": 1280, "height": 900})
        complaints = csp_complaints(page)
        await sign_in(page, console)
        await follow(page, page.get_by_role("link", name="Webhooks", exact=True))
        await assert_accessible(page, "webhooks, empty")

        async with run_receiver(lambda _r: Reply(204)) as receiver:
            new_webhook = page.locator("form[aria-labelledby=new-webhook]")
            await new_webhook.get_by_label("URL", exact=True).fill("not a url")
            await new_webhook.evaluate("form => form.noValidate = true")
            await new_webhook.get_by_role("checkbox", name="Authorize").check()
            await new_webhook.get_by_label("Authentication", exact=True).select_option("token")
            await new_webhook.get_by_label("Token", exact=True).fill("tok-123")
            await new_webhook.get_by_role("button", name="Create webhook").click()
            await expect(page.locator("#url-error")).to_contain_text("is not an http:// or https:// URL")
            await assert_accessible(page, "webhooks, error")
            assert "tok-123" not in await page.content()  # a credential is never sent back, even to fix a form
            await new_webhook.get_by_label("URL", exact=True).fill(receiver.url)
            await new_webhook.get_by_label("Token", exact=True).fill("tok-123")
            await new_webhook.get_by_role("button", name="Create webhook").click()
            await expect(page.get_by_role("heading", name=f"Webhook to {receiver.url}")).to_be_visible()

            await page.get_by_role("button", name="Send a test event").click()
            await expect(page.get_by_role("status")).to_contain_text("The test event was delivered: HTTP 204")
            (request,) = receiver.received
            async with httpx.AsyncClient() as http:
                jwks = (await http.get(f"{console.url.removesuffix('/console')}/auth/.well-known/jwks.json")).json()
            keys = parse_jwks(jwks)
            verified = verify_request(
                method="POST",
                path="/hook",
                headers=request.headers,
                body=request.body,
                keys=lambda kid, kty: keys.get((kid, kty)),
                now=clock.now().timestamp(),
            )
            assert verified.event["eventType"] == "WebhookTest"
            assert verified.event["payload"]["requestedBy"] == "operator owner@acme.test"
            assert request.headers["authorization"] == "Token tok-123"
            log = page.get_by_role("table", name="The latest attempts, newest first (kept 7 days)")
            await expect(log).to_contain_text("WebhookTest")
            await expect(log).to_contain_text(verified.event["eventId"])
            await assert_accessible(page, "webhook detail, test delivered")
            receiver_port = receiver.port

        # The receiver is gone: an event for the site reaches the lane, whose first attempt is refused.
        async with store.transaction() as session:
            payload = AuthorizePayload.model_validate({"stationId": "ST-1", "idTag": "CARD-7", "status": "Accepted"})
            await Outbox(clock).publish(session, site_id=site_id, payload=payload)
        lane = page.locator("#lane-Authorize")
        status = lane.locator("td").nth(1)
        await expect(status).to_have_text("alert", timeout=10_000)  # the health refreshes itself in place
        await expect(lane).to_contain_text("connection failed")
        await assert_accessible(page, "webhook detail, lane in alert")

        async def head_attempts() -> int:
            async with store.transaction() as session:
                return int(await session.scalar(select(WebhookLane.head_attempts)) or 0)

        async def dead_letters() -> int:
            async with store.transaction() as session:
                return int(await session.scalar(select(func.count()).select_from(WebhookDeadLetter)) or 0)

        for made in range(1, RETRIES.max_attempts):
            await until(partial(_equals, head_attempts, made), f"attempt {made} recorded")
            clock.advance(RETRIES.interval.total_seconds())  # the lane's next retry is due
        await until(partial(_equals, dead_letters, 1), "the lane dead-lettered the event")

        await page.reload()
        await expect(page.locator("#dead-letters + p")).to_contain_text("1 event could not be delivered")
        await page.get_by_role("link", name="Review and replay the dead letters").click()
        await expect(page.locator("#waiting")).to_contain_text("1 event waits for a replay")
        await expect(page.get_by_role("row").filter(has_text="retries_exhausted")).to_have_count(1)
        await assert_accessible(page, "dead letters, one waiting")

        async with run_receiver(lambda _r: Reply(200, b"<b>got it</b>"), port=receiver_port) as back:
            await page.get_by_role("button", name="Replay event").click()
            await expect(page.get_by_role("status")).to_contain_text("1 event(s) put back")
            await until(lambda: len(back.received) == 1, "the replayed event reached the receiver")
        assert json.loads(back.received[0].body)["payload"]["idTag"] == "CARD-7"
        await assert_accessible(page, "dead letters, replayed")

        await page.get_by_role("link", name="Back to the webhook").click()
        await expect(page.locator("#lane-Authorize td").nth(1)).to_have_text("ok", timeout=10_000)
        await page.get_by_role("link", name="The whole delivery log").click()
        attempts = page.get_by_role("table", name="Attempts")
        await expect(attempts.get_by_role("row")).to_have_count(1 + 1 + RETRIES.max_attempts + 1)
        await expect(attempts).to_contain_text("<b>got it</b>")  # the partner's markup, shown as text
        await assert_accessible(page, "delivery log, filled")
        await page.get_by_label("Outcome").select_option("failed")
        await page.get_by_role("button", name="Filter").click()
        await expect(attempts.get_by_role("row")).to_have_count(1 + RETRIES.max_attempts)

        await page.get_by_role("link", name="Back to the webhook").click()
        await page.get_by_role("link", name="Edit settings").click()
        await expect(page.get_by_label("Token", exact=True)).to_have_value("")
        await expect(page.get_by_text("Set. Leave blank to keep it")).to_have_count(1)
        await assert_accessible(page, "webhook edit")
        await follow(page, page.get_by_role("link", name="Webhooks", exact=True))
        await assert_accessible(page, "webhooks, filled")
        assert not complaints


async def _equals(value: Callable[[], Awaitable[int]], expected: int) -> bool:
    return await value() == expected
