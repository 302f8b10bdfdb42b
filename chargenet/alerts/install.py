"""The alerts' install hook: the evaluator, the mailer and the history's retention, in every serving process (they
share the work through the store's row locks and leases), and the mails' health."""

from __future__ import annotations

from chargenet.alerts.evaluator import AlertEvaluator
from chargenet.alerts.health import health_check
from chargenet.alerts.mailer import AlertMailer
from chargenet.alerts.retention import AlertRetention
from chargenet.context import AppContext
from chargenet.ids import process_owner


def install(context: AppContext) -> None:
    context.workers.append(AlertEvaluator(context.store, context.clock))
    context.workers.append(AlertMailer(context.store, context.clock, context.keys.credential_cipher(), process_owner()))
    context.workers.append(AlertRetention(context.store, context.clock))
    context.health_checks.append(health_check(context.store))
