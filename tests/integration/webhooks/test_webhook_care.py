"""Webhook care with a real receiver: a recovered window arrives in lane order, behind what waited, with the
original eventIds; a filter keeps other stations' events out without holding the lane; custom headers ride along
the signed ones; a credential rotation lets the partner switch at any moment of the overlap."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import delete, func, select, update

from chargenet.clock import ManualClock
from chargenet.domain.events import AuthorizePayload
from chargenet.errors import Conflict
from chargenet.outbox import Outbox
from chargenet.services import webhook_recovery, webhook_rotation
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import AuditRecord, Webhook, WebhookLane, WebhookLaneEntry
from chargenet.webhooks.install import CredentialOverlapEnd
from chargenet.webhooks.outbound_auth import NoAuth, StaticToken
from chargenet.webhooks.sender import Endpoint, WebhookSender
from tests.integration.webhooks.harness import Harness, drain, make_harness
from tests.support.keys import signing_keys
from tests.support.receiver import Received, Reply, run_receiver

WEEK = timedelta(days=7)


@dataclass
class LaneOrderReceiver:
    """Answers 204 and checks, as each request arrives, that events come in the order the test expects next."""

    expected: list[str] = field(default_factory=list)
    arrived: list[tuple[str, str]] = field(default_factory=list)
    """(eventId, idTag) of each request, in arrival order."""
    out_of_order: list[str] = field(default_factory=list)

    def __call__(self, request: Received) -> Reply:
        envelope = json.loads(request.body)
        event_id = envelope["eventId"]
        position = len(self.arrived)
        if position >= len(self.expected) or self.expected[position] != event_id:
            self.out_of_order.append(event_id)
        self.arrived.append((event_id, envelope["payload"]["idTag"]))
        return Reply(204)


async def publish(harness: Harness, tag: str, station: str = "ST-1") -> str:
    payload = AuthorizePayload.model_validate({"stationId": station, "idTag": tag, "status": "Accepted"})
    async with harness.store.transaction() as session:
        event = await Outbox(harness.clock).publish(session, site_id=harness.tenant.site_id, payload=payload)
    return event.eventId


async def test_a_recovered_window_arrives_in_lane_order_behind_what_waits_with_the_original_event_ids(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    checker = LaneOrderReceiver()
    async with run_receiver(checker) as receiver:
        view = await webhook_service.create_webhook(
            store.transaction,
            OPERATOR,
            harness.keys.credential_cipher(),
            site_id=harness.tenant.site_id,
            url=receiver.url,
            event_types=["Authorize"],
            auth=NoAuth(),
            headers=[("X-Partner-Tenant", "acme")],
            stations=["ST-1"],
            now=clock.now(),
            allow_private=True,
        )
        lane_id = await harness.lane_id(view.id)
        day_start = clock.now()
        ids = {tag: await publish(harness, tag) for tag in ("A", "B")}
        other_station = await publish(harness, "not-for-this-webhook", station="ST-2")
        ids["C"] = await publish(harness, "C")
        clock.advance(20 * 3600)
        ids["D"] = await publish(harness, "D")
        checker.expected = [ids[tag] for tag in "ABCD"]
        engine = await harness.filled_engine()
        await drain(engine, lane_id, clock)

        # The lost day: E waits in the lane (the receiver is not asked yet) when the operator recovers it.
        clock.advance(8 * 3600)
        ids["E"] = await publish(harness, "E")
        await engine.fill_once()
        async with store.transaction() as session:
            recovered = await webhook_recovery.recover_window(
                session,
                OPERATOR,
                view.id,
                since=day_start,
                until=clock.now(),
                now=clock.now(),
                retention=WEEK,
            )
        checker.expected += [ids[tag] for tag in "EABCD"]
        await drain(engine, lane_id, clock)
        await engine.sender.aclose()

    assert recovered.events == 4
    assert recovered.event_types == {"Authorize": 4}
    assert checker.out_of_order == []
    assert [tag for _, tag in checker.arrived] == ["A", "B", "C", "D", "E", "A", "B", "C", "D"]
    assert [event_id for event_id, _ in checker.arrived] == checker.expected
    assert other_station not in {event_id for event_id, _ in checker.arrived}
    first = receiver.received[0]
    assert first.headers["x-partner-tenant"] == "acme"
    assert first.names.index("x-partner-tenant") < first.names.index("signature")
    assert {"signature", "signature-input", "content-digest", "x-request-id"} <= set(first.headers)


async def test_a_partner_switching_credentials_during_the_overlap_loses_no_event(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    accepted = {"Token old"}

    def partner(request: Received) -> Reply:
        return Reply(204) if request.headers.get("authorization") in accepted else Reply(401)

    async with run_receiver(partner) as receiver:
        webhook_id = await harness.webhook(receiver.url, auth=StaticToken("old"))
        lane_id = await harness.lane_id(webhook_id)
        clock.advance(1)
        overlap_until = clock.now() + timedelta(hours=1)
        rotated = await webhook_rotation.rotate_credentials(
            store.transaction,
            OPERATOR,
            harness.keys.credential_cipher(),
            webhook_id,
            StaticToken("new"),
            overlap_until=overlap_until,
            now=clock.now(),
            allow_private=True,
        )
        engine = await harness.filled_engine()
        await harness.publish("before the switch")
        await engine.fill_once()
        await drain(engine, lane_id, clock)

        accepted = {"Token new"}  # the partner switches
        await harness.publish("after the switch")
        await engine.fill_once()
        await drain(engine, lane_id, clock)

        clock.set(overlap_until)
        await CredentialOverlapEnd(store, clock).run_once()
        accepted = {"Token old"}  # the old credentials no longer help once the overlap is over
        await harness.publish("after the overlap")
        await engine.fill_once()
        await engine.step(lane_id)
        await engine.sender.aclose()
    async with store.transaction() as session:
        row = await session.scalar(select(Webhook).where(Webhook.id == webhook_id))
    assert rotated.auth_overlap_until == overlap_until
    assert [r.headers["authorization"] for r in receiver.received] == [
        "Token new",
        "Token old",
        "Token new",
        "Token new",
    ]
    assert row is not None and (row.previous_credentials, row.previous_credentials_until) == (None, None)


async def test_a_window_the_lane_has_no_room_for_is_refused_and_nothing_is_recovered(
    store: Store, clock: ManualClock, tmp_path: Path
) -> None:
    harness = await make_harness(store, clock, tmp_path)
    webhook_id = await harness.webhook("http://127.0.0.1:9/hook")
    lane_id = await harness.lane_id(webhook_id)
    since = clock.now()
    await harness.publish("A", "B")
    engine = await harness.filled_engine()
    await engine.sender.aclose()
    async with store.transaction() as session:  # the two wait; as if 997 more did
        await session.execute(update(WebhookLane).where(WebhookLane.id == lane_id).values(size=999))
    async with store.transaction() as session:
        await session.execute(delete(WebhookLaneEntry).where(WebhookLaneEntry.lane_id == lane_id))
    clock.advance(60)
    with pytest.raises(Conflict, match="room for 1 events"):
        async with store.transaction() as session:
            await webhook_recovery.recover_window(
                session, OPERATOR, webhook_id, since=since, until=clock.now(), now=clock.now(), retention=WEEK
            )
    async with store.transaction() as session:
        entries = await session.scalar(select(func.count()).where(WebhookLaneEntry.lane_id == lane_id))
        recoveries = await session.scalar(select(func.count()).where(AuditRecord.action == "webhook.recover"))
    assert (entries, recoveries) == (0, 0)


async def test_a_custom_header_naming_a_signed_one_is_never_sent_even_if_stored() -> None:
    clock = ManualClock(datetime(2026, 7, 1, 12, 0, tzinfo=UTC))
    sender = WebhookSender(clock=clock, keys=signing_keys, allow_private=True, timeout=30.0)
    async with run_receiver() as receiver:
        endpoint = Endpoint(
            webhook_id="wh_1",
            url=receiver.url,
            auth=NoAuth(),
            headers=(("X-Partner-Tenant", "acme"), ("x-request-id", "forged"), ("Signature", "sig1=:Zm9yZ2Vk:")),
        )
        result = await sender.send(endpoint, b'{"eventId":"e"}')
        await sender.aclose()
    request = receiver.received[0]
    assert request.headers["x-partner-tenant"] == "acme"
    assert (request.names.count("x-request-id"), request.names.count("signature")) == (1, 1)
    assert request.headers["x-request-id"] == result.request_id
    assert "Zm9yZ2Vk" not in request.headers["signature"]
