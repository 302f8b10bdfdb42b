"""Alerts mailed through a real SMTP server (aiosmtpd on loopback), on both stores, with a manual clock: one mail
when a station has been offline past the rule's threshold, one when it is back, whatever the number of rounds; a
server that refuses, answers slowly or is down is retried, and the failure is shown with the alert meanwhile."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from chargenet.alerts.health import health_check
from chargenet.alerts.mailer import NO_SERVER
from chargenet.alerts.retention import AlertRetention
from chargenet.domain.alerts import CLEAR_HOLD, MAIL_RETRY_DELAY
from chargenet.observability.health import Level
from chargenet.services import alert_rules
from chargenet.services.callers import OPERATOR
from chargenet.store.models import AlertMail, MailSettings
from tests.factories import add_station, make_tenant
from tests.integration.alerts.conftest import Alerting, add_rule, alert_list, set_presence, set_server
from tests.support.ports import free_port
from tests.support.smtp import SmtpServer


async def test_an_operator_gets_one_mail_when_a_station_drops_off_and_one_when_it_is_back(
    alerting: Alerting, smtp: SmtpServer
) -> None:
    clock, station = alerting.clock, alerting.tenant.station_id
    await set_presence(alerting.store, station, connected=False, at=clock.now())
    await alerting.round()
    clock.advance(9 * 60)
    await alerting.round()
    assert smtp.inbox.received == []
    assert await alert_list(alerting.store, alerting.tenant.company_id) == []

    clock.advance(60)
    for _ in range(3):
        await alerting.round()
    assert smtp.inbox.subjects == ["[chargenet] Station offline: station ST-1 at Depot"]
    assert smtp.inbox.envelopes == [("alerts@chargenet.test", ["ops@example.org", "night@example.org"])]
    (raised,) = await alert_list(alerting.store, alerting.tenant.company_id)
    assert raised.is_open and raised.mails[0].sent_at == clock.now()

    await set_presence(alerting.store, station, connected=True, at=clock.now())
    await alerting.round()
    clock.advance(CLEAR_HOLD.total_seconds())
    for _ in range(3):
        await alerting.round()
    assert smtp.inbox.subjects == [
        "[chargenet] Station offline: station ST-1 at Depot",
        "[chargenet] Cleared: Station offline: station ST-1 at Depot",
    ]
    (cleared,) = await alert_list(alerting.store, alerting.tenant.company_id)
    assert cleared.cleared_at == clock.now() and not cleared.is_open


async def test_a_station_back_within_the_hold_keeps_its_one_alert_and_mails_once(
    alerting: Alerting, smtp: SmtpServer
) -> None:
    clock, station = alerting.clock, alerting.tenant.station_id
    await set_presence(alerting.store, station, connected=False, at=clock.now())
    clock.advance(10 * 60)
    await alerting.round()
    await set_presence(alerting.store, station, connected=True, at=clock.now())
    await alerting.round()
    clock.advance(30)
    await set_presence(alerting.store, station, connected=False, at=clock.now())
    clock.advance(CLEAR_HOLD.total_seconds())
    await alerting.round()
    assert len(smtp.inbox.received) == 1
    assert [alert.is_open for alert in await alert_list(alerting.store, alerting.tenant.company_id)] == [True]


async def test_a_mail_the_server_refuses_is_retried_and_its_failure_is_shown_meanwhile(
    alerting: Alerting, smtp: SmtpServer
) -> None:
    smtp.inbox.refuse_with = "451 4.3.0 mailbox busy, try again later"
    await set_presence(alerting.store, alerting.tenant.station_id, connected=False, at=alerting.clock.now())
    alerting.clock.advance(10 * 60)
    await alerting.round()
    (alert,) = await alert_list(alerting.store, alerting.tenant.company_id)
    (mail,) = alert.mails
    assert alert.mail_failing and mail.attempts == 1 and mail.sent_at is None
    assert mail.last_error == "the server answered 451 4.3.0 mailbox busy, try again later"
    assert mail.next_attempt_at == alerting.clock.now() + MAIL_RETRY_DELAY

    (shown,) = await health_check(alerting.store)()
    assert (shown.level, shown.details) == (Level.DEGRADED, {"waiting": 1, "failing": 1})

    smtp.inbox.refuse_with = None
    await alerting.mailer.run_once()  # not due yet
    assert smtp.inbox.received == []
    alerting.clock.advance(MAIL_RETRY_DELAY.total_seconds())
    await alerting.mailer.run_once()
    (alert,) = await alert_list(alerting.store, alerting.tenant.company_id)
    assert len(smtp.inbox.received) == 1 and not alert.mail_failing and alert.mails[0].attempts == 2
    (shown,) = await health_check(alerting.store)()
    assert (shown.level, shown.details) == (Level.OK, {"waiting": 0, "failing": 0})


async def test_a_server_that_is_down_or_slow_fails_the_attempt_which_is_retried(
    alerting: Alerting, smtp: SmtpServer
) -> None:
    company = alerting.tenant.company_id
    await set_server(alerting.store, alerting.keys, company, alerting.clock.now(), host="127.0.0.1", port=free_port())
    await set_presence(alerting.store, alerting.tenant.station_id, connected=False, at=alerting.clock.now())
    alerting.clock.advance(10 * 60)
    await alerting.round()
    (alert,) = await alert_list(alerting.store, company)
    assert alert.mails[0].last_error is not None and alert.mails[0].last_error.startswith("could not reach 127.0.0.1:")

    await set_server(alerting.store, alerting.keys, company, alerting.clock.now(), host=smtp.host, port=smtp.port)
    smtp.inbox.delay = 3.0  # longer than the mailer's 2 s for each answer
    alerting.clock.advance(MAIL_RETRY_DELAY.total_seconds())
    await alerting.mailer.run_once()
    (alert,) = await alert_list(alerting.store, company)
    assert alert.mails[0].last_error == "the server did not answer within 2 s" and alert.mails[0].attempts == 2

    smtp.inbox.delay = 0.0
    alerting.clock.advance(MAIL_RETRY_DELAY.total_seconds())
    await alerting.mailer.run_once()
    (alert,) = await alert_list(alerting.store, company)
    assert alert.mails[0].sent_at is not None and alert.mails[0].attempts == 3
    assert len(smtp.inbox.received) == 1


async def test_without_a_mail_server_the_alert_is_raised_and_its_mail_waits_saying_why(alerting: Alerting) -> None:
    async with alerting.store.transaction() as session:
        await session.delete(await session.get(MailSettings, alerting.tenant.company_id))
    await set_presence(alerting.store, alerting.tenant.station_id, connected=False, at=alerting.clock.now())
    alerting.clock.advance(timedelta(minutes=10).total_seconds())
    await alerting.round()
    (alert,) = await alert_list(alerting.store, alerting.tenant.company_id)
    assert alert.is_open and alert.mails[0].last_error == NO_SERVER


async def test_disabling_a_rule_ends_its_open_alert_without_a_mail(alerting: Alerting, smtp: SmtpServer) -> None:
    await set_presence(alerting.store, alerting.tenant.station_id, connected=False, at=alerting.clock.now())
    alerting.clock.advance(10 * 60)
    await alerting.round()
    async with alerting.store.transaction() as session:
        await alert_rules.set_enabled(session, OPERATOR, alerting.rule_id, enabled=False, now=alerting.clock.now())
    alerting.clock.advance(CLEAR_HOLD.total_seconds())
    await alerting.round()
    (ended,) = await alert_list(alerting.store, alerting.tenant.company_id)
    assert not ended.is_open and len(smtp.inbox.received) == 1


async def test_a_company_whose_server_is_down_holds_up_no_other_company_and_tries_it_once_a_round(
    alerting: Alerting, smtp: SmtpServer
) -> None:
    clock, store = alerting.clock, alerting.store
    down = alerting.tenant
    async with store.transaction() as session:
        await add_station(session, alerting.keys, down.site_id, "ST-2", clock.now())
    await set_server(store, alerting.keys, down.company_id, clock.now(), host="127.0.0.1", port=free_port())
    other = await make_tenant(store, alerting.keys, clock.now(), station_id="ST-3")
    await add_rule(store, other.company_id, clock.now())
    await set_server(store, alerting.keys, other.company_id, clock.now(), host=smtp.host, port=smtp.port)
    for station in ("ST-1", "ST-2", "ST-3"):
        await set_presence(store, station, connected=True, at=clock.now())
        await set_presence(store, station, connected=False, at=clock.now())
    clock.advance(10 * 60)
    await alerting.round()
    assert smtp.inbox.subjects == ["[chargenet] Station offline: station ST-3 at Depot"]
    mails = [alert.mails[0] for alert in await alert_list(store, down.company_id)]
    assert sorted(mail.attempts for mail in mails) == [0, 1]
    assert all(mail.last_error and mail.last_error.startswith("could not reach") for mail in mails)
    assert all(mail.next_attempt_at == clock.now() + MAIL_RETRY_DELAY for mail in mails)


async def test_alerts_cleared_more_than_a_year_ago_are_purged_with_their_mails(
    alerting: Alerting, smtp: SmtpServer
) -> None:
    clock, station = alerting.clock, alerting.tenant.station_id
    await set_presence(alerting.store, station, connected=False, at=clock.now())
    clock.advance(10 * 60)
    await alerting.round()
    await set_presence(alerting.store, station, connected=True, at=clock.now())
    await alerting.round()
    clock.advance(CLEAR_HOLD.total_seconds())
    await alerting.round()
    retention = AlertRetention(alerting.store, clock)
    clock.advance(timedelta(days=364).total_seconds())
    await retention.run_once()
    assert len(await alert_list(alerting.store, alerting.tenant.company_id)) == 1
    clock.advance(timedelta(days=1, seconds=1).total_seconds())
    await retention.run_once()
    assert await alert_list(alerting.store, alerting.tenant.company_id) == []
    async with alerting.store.read() as session:
        assert await session.scalar(select(func.count()).select_from(AlertMail)) == 0
