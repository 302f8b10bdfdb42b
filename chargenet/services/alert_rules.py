"""A company's alert rules: list, create, change, enable and disable them (docs/alerts.md).

Alerts are the console's: a company's own operators read its rules, admins and owners change them, and the local
operator reaches every company; no scope grants them to an application, for which they do not exist. Every
change is audited in its transaction and bumps the rule's version; disabling a rule ends its alerts at once,
without a mail (the operator who disabled it knows)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain import alerts as rules
from chargenet.errors import Forbidden, NotFound
from chargenet.ids import new_id
from chargenet.services import audit
from chargenet.services.callers import ApiApplication, Caller, OperatorCaller
from chargenet.services.versions import check_version
from chargenet.services.views import Instant, View
from chargenet.store.models import Alert, AlertRule, Company


class AlertRuleView(View):
    id: str
    company_id: str
    kind: rules.RuleKind
    kind_label: str
    threshold_minutes: int
    enabled: bool
    recipients: tuple[str, ...]
    version: int
    updated_at: Instant


def _view(row: AlertRule) -> AlertRuleView:
    kind = rules.RuleKind(row.kind)
    return AlertRuleView(
        id=row.id,
        company_id=row.company_id,
        kind=kind,
        kind_label=kind.label,
        threshold_minutes=row.threshold_minutes,
        enabled=row.enabled,
        recipients=tuple(row.recipients.split(",")),
        version=row.version,
        updated_at=row.updated_at,
    )


async def alerting_company(session: AsyncSession, caller: Caller, company_id: str, *, change: str | None = None) -> str:
    """The company whose alerts `caller` reads (or, with `change`, changes): its own, for an operator; any, for the
    local operator; none, for an application (`NotFound`). A viewer asking a change is `Forbidden`."""
    if isinstance(caller, ApiApplication) or caller.company_id not in (None, company_id):
        raise NotFound("company", company_id)
    if await session.get(Company, company_id) is None:
        raise NotFound("company", company_id)
    if change is not None and isinstance(caller, OperatorCaller) and not caller.may_change:
        raise Forbidden(f"a viewer may not {change}")
    return company_id


async def list_rules(session: AsyncSession, caller: Caller, *, company_id: str) -> list[AlertRuleView]:
    """Every rule of the company (a handful each), by kind then threshold."""
    await alerting_company(session, caller, company_id)
    found = await session.scalars(
        select(AlertRule)
        .where(AlertRule.company_id == company_id)
        .order_by(AlertRule.kind, AlertRule.threshold_minutes, AlertRule.id)
    )
    return [_view(row) for row in found]


async def _reachable_rule(session: AsyncSession, caller: Caller, rule_id: str, *, change: str | None) -> AlertRule:
    row = await session.get(AlertRule, rule_id)
    if row is None or isinstance(caller, ApiApplication) or caller.company_id not in (None, row.company_id):
        raise NotFound("alert rule", rule_id)
    await alerting_company(session, caller, row.company_id, change=change)
    return row


async def get_rule(session: AsyncSession, caller: Caller, rule_id: str) -> AlertRuleView:
    return _view(await _reachable_rule(session, caller, rule_id, change=None))


def _detail(row: AlertRule) -> dict[str, str]:
    return {
        "kind": row.kind,
        "threshold minutes": str(row.threshold_minutes),
        "recipients": row.recipients,
        "enabled": "yes" if row.enabled else "no",
    }


async def create_rule(
    session: AsyncSession,
    caller: Caller,
    *,
    company_id: str,
    kind: str,
    threshold_minutes: int,
    recipients: str,
    now: datetime,
) -> AlertRuleView:
    await alerting_company(session, caller, company_id, change="create alert rules")
    row = AlertRule(
        id=new_id("arule"),
        company_id=company_id,
        kind=rules.parse_kind(kind).value,
        threshold_minutes=rules.validate_threshold(threshold_minutes),
        recipients=",".join(rules.validate_recipients(recipients)),
        enabled=True,
        version=1,
        created_at=now,
        updated_at=now,
    )
    session.add(row)
    await session.flush()
    await audit.record_change(session, caller, "alert_rule.create", row, now=now, detail=_detail(row))
    return _view(row)


async def update_rule(
    session: AsyncSession,
    caller: Caller,
    rule_id: str,
    *,
    now: datetime,
    threshold_minutes: int | None = None,
    recipients: str | None = None,
    expected_version: int | None = None,
) -> AlertRuleView:
    """Change the threshold or the recipients; the rule's alerts go on, judged by the new threshold."""
    row = await _reachable_rule(session, caller, rule_id, change="change alert rules")
    check_version("alert rule", row.id, row.version, expected_version)
    threshold = rules.validate_threshold(threshold_minutes) if threshold_minutes is not None else None
    addresses = ",".join(rules.validate_recipients(recipients)) if recipients is not None else None
    if threshold is not None:
        row.threshold_minutes = threshold
    if addresses is not None:
        row.recipients = addresses
    row.version += 1
    row.updated_at = now
    await session.flush()
    await audit.record_change(session, caller, "alert_rule.update", row, now=now, detail=_detail(row))
    return _view(row)


async def set_enabled(
    session: AsyncSession,
    caller: Caller,
    rule_id: str,
    *,
    enabled: bool,
    now: datetime,
    expected_version: int | None = None,
) -> AlertRuleView:
    row = await _reachable_rule(session, caller, rule_id, change="enable or disable alert rules")
    check_version("alert rule", row.id, row.version, expected_version)
    if row.enabled == enabled:
        return _view(row)
    row.enabled = enabled
    row.version += 1
    row.updated_at = now
    if not enabled:
        # Pending alerts were never shown; raised ones end now, unmailed.
        await session.execute(delete(Alert).where(Alert.rule_id == row.id, Alert.raised_at.is_(None)))
        await session.execute(
            update(Alert).where(Alert.rule_id == row.id, Alert.cleared_at.is_(None)).values(cleared_at=now)
        )
    await session.flush()
    action = "alert_rule.enable" if enabled else "alert_rule.disable"
    await audit.record_change(session, caller, action, row, now=now)
    return _view(row)
