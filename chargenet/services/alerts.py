"""The alerts of a company as the console shows them: the list with their history, how many are open (the
navigation's badge), and an operator's acknowledgement (audited).

Each alert shows how its mails fared: sent, waiting for the SMTP server (with the last error), or not due yet;
a failure stays visible until a retry succeeds (docs/alerts.md)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.alerts import RuleKind
from chargenet.errors import Conflict, NotFound
from chargenet.services import audit
from chargenet.services.alert_rules import alerting_company
from chargenet.services.callers import ApiApplication, Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.views import Instant, View, optional
from chargenet.store.models import Alert, AlertMail


class MailState(View):
    kind: str  # raised or cleared
    attempts: int
    sent_at: Instant | None = optional()
    next_attempt_at: Instant | None = optional()
    last_error: str | None = optional()


class AlertView(View):
    id: int
    rule_id: str
    kind: RuleKind
    kind_label: str
    subject: str
    since: Instant
    raised_at: Instant
    cleared_at: Instant | None = optional()
    acknowledged_by: str | None = optional()
    acknowledged_at: Instant | None = optional()
    mails: tuple[MailState, ...] = ()

    @property
    def is_open(self) -> bool:
        return self.cleared_at is None

    @property
    def mail_failing(self) -> bool:
        return any(mail.sent_at is None and mail.last_error for mail in self.mails)


def _view(row: Alert, mails: list[AlertMail]) -> AlertView:
    assert row.raised_at is not None
    kind = RuleKind(row.kind)
    return AlertView(
        id=row.id,
        rule_id=row.rule_id,
        kind=kind,
        kind_label=kind.label,
        subject=row.subject,
        since=row.since,
        raised_at=row.raised_at,
        cleared_at=row.cleared_at,
        acknowledged_by=row.acknowledged_by,
        acknowledged_at=row.acknowledged_at,
        mails=tuple(
            MailState(
                kind=mail.kind,
                attempts=mail.attempts,
                sent_at=mail.sent_at,
                next_attempt_at=mail.next_attempt_at,
                last_error=mail.last_error,
            )
            for mail in mails
        ),
    )


async def list_alerts(
    session: AsyncSession, caller: Caller, page: PageRequest, *, company_id: str, open_only: bool = False
) -> Page[AlertView]:
    """The company's raised alerts, newest first, cleared ones included (the history) unless `open_only`."""
    await alerting_company(session, caller, company_id)
    query = select(Alert).where(Alert.company_id == company_id, Alert.raised_at.is_not(None))
    if open_only:
        query = query.where(Alert.cleared_at.is_(None))
    before = page.after_number()
    if before is not None:
        query = query.where(Alert.id < before)
    rows = list(await session.scalars(query.order_by(Alert.id.desc()).limit(page.fetch)))
    mails: dict[int, list[AlertMail]] = {}
    if rows:
        found = await session.scalars(
            select(AlertMail).where(AlertMail.alert_id.in_([row.id for row in rows])).order_by(AlertMail.id)
        )
        for mail in found:
            mails.setdefault(mail.alert_id, []).append(mail)
    return page.page([_view(row, mails.get(row.id, [])) for row in rows], lambda alert: str(alert.id))


async def count_open(session: AsyncSession, caller: Caller, *, company_id: str) -> int:
    """How many of the company's alerts are raised and not cleared."""
    await alerting_company(session, caller, company_id)
    count = await session.scalar(
        select(func.count())
        .select_from(Alert)
        .where(Alert.company_id == company_id, Alert.raised_at.is_not(None), Alert.cleared_at.is_(None))
    )
    return int(count or 0)


async def acknowledge(session: AsyncSession, caller: Caller, alert_id: int, *, now: datetime) -> AlertView:
    """Note that `caller` has seen the alert (once: a second acknowledgement is a `Conflict`); audited."""
    row = await session.get(Alert, alert_id)
    if (
        row is None
        or row.raised_at is None
        or isinstance(caller, ApiApplication)
        or caller.company_id not in (None, row.company_id)
    ):
        raise NotFound("alert", str(alert_id))
    await alerting_company(session, caller, row.company_id, change="acknowledge alerts")
    if row.acknowledged_at is not None:
        raise Conflict(f"alert {alert_id} was acknowledged already, by {row.acknowledged_by}")
    row.acknowledged_by = caller.actor.who[:300]
    row.acknowledged_at = now
    await session.flush()
    await audit.record_change(
        session,
        caller,
        "alert.acknowledge",
        row,
        now=now,
        detail={"alert": f"{RuleKind(row.kind).label}: {row.subject}"},
    )
    mails = list(await session.scalars(select(AlertMail).where(AlertMail.alert_id == row.id).order_by(AlertMail.id)))
    return _view(row, mails)
