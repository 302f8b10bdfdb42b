"""The worker that raises and clears alerts: each round, every enabled rule, judged in a read and, where that finds
something to change, again in a transaction of its own.

In that transaction it locks the rule's row (on PostgreSQL `FOR UPDATE SKIP LOCKED`: a rule another process is
evaluating is skipped this round), reads the conditions of the rule's kind and the rule's alerts not yet cleared,
applies `domain.alerts.decide` to every subject, and queues the mail of each alert raised or cleared. So an alert
is raised once and cleared once whichever process sees it first, and the partial unique index on an alert not yet
cleared per rule and subject (store/models/alerts.py) stops a second one even if that went wrong.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.alerts.conditions import READERS, Observed
from chargenet.clock import Clock
from chargenet.domain import alerts as rules
from chargenet.domain.alerts import MailKind, Step, Tracked
from chargenet.domain.local_time import LocalTime, reader_zone
from chargenet.store.db import Store
from chargenet.store.models import Alert, AlertMail, AlertRule, Company
from chargenet.workers import LoopWorker

log = logging.getLogger(__name__)

EVALUATE_EVERY = 15.0  # seconds; thresholds are whole minutes


class AlertEvaluator(LoopWorker):
    name = "alert-evaluator"

    def __init__(
        self,
        store: Store,
        clock: Clock,
        interval: float = EVALUATE_EVERY,
        *,
        clear_hold: timedelta = rules.CLEAR_HOLD,
    ) -> None:
        super().__init__(clock, interval)
        self.store = store
        self.clear_hold = clear_hold

    async def run_once(self) -> None:
        async with self.store.read() as session:
            rule_ids = list(
                await session.scalars(select(AlertRule.id).where(AlertRule.enabled.is_(True)).order_by(AlertRule.id))
            )
        for rule_id in rule_ids:
            now = self.clock.now()
            # Judged in a read first: most rounds change nothing, and on SQLite a transaction for nothing would take
            # the writer's lock the stations' messages wait for.
            async with self.store.read() as session:
                rule = await session.get(AlertRule, rule_id)
                if rule is None or not rule.enabled:
                    continue
                steps = [decision.step for _, _, _, decision in await self.decisions(session, rule, now)]
            if all(step is Step.NOTHING for step in steps):
                continue
            async with self.store.transaction() as session:
                await self.evaluate(session, rule_id, now)

    async def decisions(
        self, session: AsyncSession, rule: AlertRule, now: datetime
    ) -> list[tuple[str, Observed | None, Alert | None, rules.Decision]]:
        """What to do about each subject of `rule`: those whose condition holds and those it has an alert about."""
        observed = await READERS[rules.RuleKind(rule.kind)](session, rule.company_id, now)
        tracked = {
            row.subject_id: row
            for row in await session.scalars(select(Alert).where(Alert.rule_id == rule.id, Alert.cleared_at.is_(None)))
        }
        threshold = timedelta(minutes=rule.threshold_minutes)
        found = []
        for subject_id in sorted(observed.keys() | tracked.keys()):
            seen = observed.get(subject_id)
            row = tracked.get(subject_id)
            decision = rules.decide(
                seen.holding if seen is not None else None,
                Tracked(row.since, row.raised_at, row.gone_since) if row is not None else None,
                threshold=threshold,
                now=now,
                clear_hold=self.clear_hold,
            )
            found.append((subject_id, seen, row, decision))
        return found

    async def evaluate(self, session: AsyncSession, rule_id: str, now: datetime) -> None:
        """One rule, in the caller's transaction."""
        rule = (
            await session.execute(select(AlertRule).where(AlertRule.id == rule_id).with_for_update(skip_locked=True))
        ).scalar_one_or_none()
        if rule is None or not rule.enabled:
            return  # another process holds it this round, or it was disabled or deleted meanwhile
        company = await session.get(Company, rule.company_id)
        reads_in = reader_zone(None, company.time_zone if company is not None else None)
        for subject_id, seen, row, decision in await self.decisions(session, rule, now):
            match decision.step:
                case Step.NOTHING:
                    pass
                case Step.WATCH | Step.RAISE:
                    assert decision.since is not None and seen is not None
                    if row is None:
                        row = Alert(
                            rule_id=rule.id,
                            company_id=rule.company_id,
                            kind=rule.kind,
                            subject_id=subject_id,
                            subject=seen.subject[:300],
                        )
                        session.add(row)
                    row.since = decision.since
                    if decision.step is Step.RAISE:
                        row.raised_at = now
                        await session.flush()
                        self._queue(session, rule, row, MailKind.RAISED, now, reads_in)
                        log.info("alert raised", extra={"fields": {"rule": rule.id, "subject": subject_id}})
                case Step.FORGET:
                    assert row is not None
                    await session.execute(delete(Alert).where(Alert.id == row.id))
                case Step.GONE:
                    assert row is not None
                    row.gone_since = now
                case Step.BACK:
                    assert row is not None
                    row.gone_since = None
                case Step.CLEAR:
                    assert row is not None
                    row.cleared_at = now
                    self._queue(session, rule, row, MailKind.CLEARED, now, reads_in)
                    log.info("alert cleared", extra={"fields": {"rule": rule.id, "subject": subject_id}})
        await session.flush()

    def _queue(
        self, session: AsyncSession, rule: AlertRule, alert: Alert, mail: MailKind, now: datetime, reads_in: LocalTime
    ) -> None:
        text = rules.mail_text(
            rules.RuleKind(rule.kind),
            alert.subject,
            mail,
            since=alert.since,
            at=now,
            minutes=rule.threshold_minutes,
            reads_in=reads_in,
        )
        session.add(
            AlertMail(
                alert_id=alert.id,
                company_id=rule.company_id,
                kind=mail.value,
                recipients=rule.recipients,
                subject=text.subject,
                body=text.body,
                queued_at=now,
                attempts=0,
                next_attempt_at=now,
            )
        )
