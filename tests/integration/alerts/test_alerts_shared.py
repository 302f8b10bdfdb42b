"""Two processes sharing one PostgreSQL store (two `Store`s, each with its own engine and pool, as
tests/support/processes.py has them), each with its own evaluator and mailer running at once: an alert is raised
once and mailed once, whichever process sees the condition first."""

from __future__ import annotations

import asyncio

from sqlalchemy import func, select

from chargenet.alerts.evaluator import AlertEvaluator
from chargenet.alerts.mailer import AlertMailer
from chargenet.clock import ManualClock
from chargenet.keys import KeyStore
from chargenet.store.models import Alert, AlertMail
from tests.factories import make_tenant
from tests.integration.alerts.conftest import add_rule, set_presence, set_server
from tests.support.processes import two_stores
from tests.support.smtp import SmtpServer


async def test_two_processes_raise_one_alert_and_send_one_mail(
    keys: KeyStore, clock: ManualClock, smtp: SmtpServer
) -> None:
    async with two_stores(clock) as (first, second):
        tenant = await make_tenant(first, keys, clock.now())
        await set_presence(first, tenant.station_id, connected=True, at=clock.now())
        await add_rule(first, tenant.company_id, clock.now())
        await set_server(first, keys, tenant.company_id, clock.now(), host=smtp.host, port=smtp.port)
        evaluators = [AlertEvaluator(store, clock) for store in (first, second)]
        mailers = [
            AlertMailer(store, clock, keys.credential_cipher(), owner, timeout=30.0)
            for store, owner in ((first, "process-1"), (second, "process-2"))
        ]
        await set_presence(first, tenant.station_id, connected=False, at=clock.now())
        clock.advance(10 * 60)
        for _ in range(5):
            await asyncio.gather(*(evaluator.run_once() for evaluator in evaluators))
            await asyncio.gather(*(mailer.run_once() for mailer in mailers))
        async with first.read() as session:
            alerts = await session.scalar(select(func.count()).select_from(Alert))
            mails = (await session.execute(select(AlertMail.attempts, AlertMail.sent_at))).all()
        assert alerts == 1
        assert [attempts for attempts, _ in mails] == [1] and mails[0][1] is not None
        assert smtp.inbox.subjects == ["[chargenet] Station offline: station ST-1 at Depot"]
