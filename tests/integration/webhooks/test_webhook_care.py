"""Webhook care with a real receiver: a recovered window arrives in lane order, behind what waited, with the
original eventIds; a filter keeps other stations' events out without holding the lane; custom headers ride along
the signed ones; a credential rotation lets the partner switch at any moment of the overlap."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from sqlalchemy import select

from chargenet.clock import ManualClock
from chargenet.domain.events import AuthorizePayload
from chargenet.outbox import Outbox
from chargenet.services import webhook_recovery, webhook_rotation
from chargenet.services import webhooks as webhook_service
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Store
from chargenet.store.models import Webhook
from chargenet.webhooks.install import CredentialOverlapEnd
from chargenet.webhooks.outbound_auth import NoAuth, StaticToken
from tests.integration.webhooks.harness import Harness, drain, make_harness
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
    first = receiver.received[0].headers
    assert first["x-partner-tenant"] == "acme"
    assert {"signature", "signature-input", "content-digest", "x-request-id"} <= set(first)


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
