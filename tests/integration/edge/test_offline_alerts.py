"""The whole of it, on both stores: a real station connects to chargenet over OCPP and goes away; the company's
operator gets one mail from a real SMTP server (aiosmtpd on loopback) once the station has been offline past the
rule's threshold, and one when it is back. The app's clock is a ManualClock the test moves; waits are on
conditions. The test drives an evaluator and a mailer of its own, as a second process would, beside the app's own
ones: the store's row locks and leases are what keep the mails to one each way."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from chargenet.alerts.evaluator import AlertEvaluator
from chargenet.alerts.mailer import AlertMailer
from chargenet.domain.alerts import CLEAR_HOLD
from chargenet.services import alert_rules, mail_settings
from chargenet.services.callers import OPERATOR
from chargenet.store.models import StationPresence
from tests.integration.edge.conftest import Served, manual_clock
from tests.support.smtp import smtp_server


async def until(condition: Callable[[], Awaitable[bool] | bool], what: str, within: float = 60.0) -> None:
    # A generous bound: the app's own mailer may hold the mail's lease and send it at its own pace on a busy machine
    # (10 s was once not enough there); a wait that succeeds returns as soon as the condition holds.
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if not isinstance(value, bool):
            value = await value
        if value:
            return
        assert time.monotonic() < deadline, f"{what}: not within {within} s"
        await asyncio.sleep(0.02)


async def test_an_operator_gets_one_mail_when_a_real_station_drops_off_and_one_when_it_is_back(
    served_manual: Served,
) -> None:
    served = served_manual
    clock, store, keys = manual_clock(served), served.context.store, served.context.keys
    evaluator = AlertEvaluator(store, clock)
    mailer = AlertMailer(store, clock, keys.credential_cipher(), "test-process", timeout=30.0)

    async def shown(connected: bool) -> bool:
        await served.edge.message_log.run_once()  # the presence the edge keeps, written now, not within a second
        async with store.read() as session:
            row = await session.get(StationPresence, "CS-1")
            return row is not None and row.connected is connected

    async def one_round() -> None:
        await evaluator.run_once()
        await mailer.run_once()

    async def mailed(count: int) -> bool:
        # Rounds go on while we wait, as a second process's would: the app's own evaluator, woken by the clock,
        # may have taken the rule (SKIP LOCKED) and queued the mail after this test's last round.
        await one_round()
        return len(smtp.inbox.received) == count

    with smtp_server() as smtp:
        async with store.transaction() as session:
            await alert_rules.create_rule(
                session,
                OPERATOR,
                company_id=served.tenant.company_id,
                kind="station_offline",
                threshold_minutes=10,
                recipients="ops@example.org",
                now=clock.now(),
            )
            await mail_settings.set_mail_settings(
                session,
                OPERATOR,
                keys.credential_cipher(),
                company_id=served.tenant.company_id,
                host=smtp.host,
                port=smtp.port,
                tls="none",
                sender="alerts@chargenet.test",
                now=clock.now(),
            )
        station = served.station()
        await station.connect()
        await station.boot()
        await until(lambda: shown(True), "the station shown connected")
        await station.close()
        await until(lambda: shown(False), "the station shown gone")

        clock.advance(9 * 60)
        await one_round()
        assert smtp.inbox.received == []
        clock.advance(60)
        await one_round()
        await until(lambda: mailed(1), "the mail that the station is offline")
        assert smtp.inbox.subjects == ["[chargenet] Station offline: station CS-1 at Depot"]

        await station.connect()
        await station.boot()
        await until(lambda: shown(True), "the station shown back")
        await one_round()
        clock.advance(CLEAR_HOLD.total_seconds())
        await one_round()
        await until(lambda: mailed(2), "the mail that the station is back")
        for _ in range(3):
            await one_round()
        assert smtp.inbox.subjects == [
            "[chargenet] Station offline: station CS-1 at Depot",
            "[chargenet] Cleared: Station offline: station CS-1 at Depot",
        ]
        await station.close()
