"""Alerts: when a watched condition becomes an alert, and when that alert ends (docs/alerts.md).

A rule of a company watches one kind of condition (a station offline, a connector Faulted...) for longer than its
threshold. For each subject of the rule (a station, a connector...) the store keeps at most one tracked alert that
has not ended: pending while the condition has held for less than the threshold, raised once it has held that
long, cleared once it has been gone for `CLEAR_HOLD`. So a condition shorter than the threshold never mails, and a
station that drops and comes back within the hold does not mail twice.

Everything here is a function of plain values and `now`; the shell reads the conditions and writes the outcome.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from chargenet.domain.local_time import LocalTime
from chargenet.errors import InvalidInput

MIN_THRESHOLD_MINUTES = 1
MAX_THRESHOLD_MINUTES = 7 * 24 * 60  # a week: an alert later than that is a report, not an alert
CLEAR_HOLD = timedelta(minutes=2)
"""How long a condition must stay gone before its alert clears: a station that reconnects and drops again
within it keeps its one alert."""

MAX_RECIPIENTS = 20
MAX_ADDRESS = 254
# A plain address: no display name, no comments, no quoting, nothing a mail header could be split at.
_ADDRESS = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$"
)
_HOST = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$|^\[[0-9A-Fa-f:.]+\]$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class RuleKind(StrEnum):
    STATION_OFFLINE = "station_offline"
    CONNECTOR_FAULTED = "connector_faulted"
    WEBHOOK_LANE_UNHEALTHY = "webhook_lane_unhealthy"
    UPSTREAM_DOWN = "upstream_down"
    METER_SILENT = "meter_silent"

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    RuleKind.STATION_OFFLINE: "Station offline",
    RuleKind.CONNECTOR_FAULTED: "Connector Faulted",
    RuleKind.WEBHOOK_LANE_UNHEALTHY: "Webhook lane in alert or critical",
    RuleKind.UPSTREAM_DOWN: "Upstream link down",
    RuleKind.METER_SILENT: "Meter silent",
}


class TlsMode(StrEnum):
    NONE = "none"  # plain SMTP, for a relay on the same machine or network
    STARTTLS = "starttls"
    TLS = "tls"  # implicit TLS (port 465)


def parse_kind(value: str) -> RuleKind:
    try:
        return RuleKind(value)
    except ValueError:
        raise InvalidInput(f"{value!r} is not a kind of alert rule", field="kind") from None


def validate_threshold(minutes: int) -> int:
    if not MIN_THRESHOLD_MINUTES <= minutes <= MAX_THRESHOLD_MINUTES:
        raise InvalidInput(
            f"must be {MIN_THRESHOLD_MINUTES} to {MAX_THRESHOLD_MINUTES} minutes (a week), got {minutes}",
            field="threshold",
        )
    return minutes


def validate_address(value: str, *, field: str = "recipients") -> str:
    """One plain e-mail address; a line break or any control character is refused first, whatever follows it,
    since it is what would add a header to the mail."""
    if _CONTROL.search(value):
        raise InvalidInput("holds a line break or control character, which no e-mail address has", field=field)
    address = value.strip()
    if len(address) > MAX_ADDRESS or not _ADDRESS.match(address):
        raise InvalidInput(f"{address!r} is not a plain e-mail address (name@example.org)", field=field)
    return address


def validate_recipients(value: str) -> tuple[str, ...]:
    """Addresses separated by commas: at least one, at most MAX_RECIPIENTS, each plain, without repeats."""
    if _CONTROL.search(value):
        raise InvalidInput("holds a line break or control character, which no e-mail address has", field="recipients")
    parts = [part.strip() for part in value.split(",") if part.strip()]
    if not parts:
        raise InvalidInput("give at least one e-mail address", field="recipients")
    if len(parts) > MAX_RECIPIENTS:
        raise InvalidInput(f"at most {MAX_RECIPIENTS} addresses, got {len(parts)}", field="recipients")
    addresses = tuple(dict.fromkeys(validate_address(part) for part in parts))
    return addresses


def validate_host(value: str) -> str:
    host = value.strip()
    if _CONTROL.search(value) or not _HOST.match(host):
        raise InvalidInput(f"{host!r} is not a host name or address", field="host")
    return host


def validate_port(port: int) -> int:
    if not 1 <= port <= 65535:
        raise InvalidInput(f"must be 1 to 65535, got {port}", field="port")
    return port


def parse_tls_mode(value: str) -> TlsMode:
    try:
        return TlsMode(value)
    except ValueError:
        raise InvalidInput(f"{value!r} is not one of none, starttls, tls", field="tls") from None


# --- raise and clear -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Holding:
    """The condition holds now. `since` is when it began as the store knows it (a station's disconnection); None
    when the source does not say, and then the first time it was seen counts."""

    since: datetime | None = None


@dataclass(frozen=True, slots=True)
class Tracked:
    """A subject's alert that has not ended: pending while `raised_at` is None."""

    since: datetime
    raised_at: datetime | None
    gone_since: datetime | None  # when the condition was first seen gone since the raise


class Step(StrEnum):
    NOTHING = "nothing"
    WATCH = "watch"  # start or move the pending alert to `since`
    RAISE = "raise"  # raise it now (mail); from nothing, or from pending
    FORGET = "forget"  # the condition ended before the threshold: drop the pending alert, nothing was mailed
    GONE = "gone"  # the raised condition is gone: remember since when, clear after CLEAR_HOLD
    BACK = "back"  # the condition came back within the hold: the alert stays raised, as if never gone
    CLEAR = "clear"  # gone for CLEAR_HOLD: clear it (mail)


@dataclass(frozen=True, slots=True)
class Decision:
    step: Step
    since: datetime | None = None  # for WATCH and RAISE: since when the condition held


def decide(
    observed: Holding | None,
    tracked: Tracked | None,
    *,
    threshold: timedelta,
    now: datetime,
    clear_hold: timedelta = CLEAR_HOLD,
) -> Decision:
    """What to do about one subject at `now`, given whether its condition holds and its alert as tracked."""
    if tracked is None or tracked.raised_at is None:
        if observed is None:
            return Decision(Step.FORGET if tracked is not None else Step.NOTHING)
        since = observed.since or (tracked.since if tracked is not None else now)
        if tracked is not None:
            # Held since the last round: a later start is a repeated report (a connector saying Faulted again), or
            # an end and a new start between two rounds that nobody saw; the first start seen counts.
            since = min(since, tracked.since)
        if now - since >= threshold:
            return Decision(Step.RAISE, since)
        if tracked is None or tracked.since != since:
            return Decision(Step.WATCH, since)
        return Decision(Step.NOTHING)
    if observed is not None:
        return Decision(Step.BACK if tracked.gone_since is not None else Step.NOTHING)
    if tracked.gone_since is None:
        return Decision(Step.CLEAR if clear_hold <= timedelta(0) else Step.GONE)
    if now - tracked.gone_since >= clear_hold:
        return Decision(Step.CLEAR)
    return Decision(Step.NOTHING)


# --- mails ---------------------------------------------------------------------------------------------------


class MailKind(StrEnum):
    RAISED = "raised"
    CLEARED = "cleared"


MAIL_RETRY_DELAY = timedelta(minutes=1)
"""A mail that failed is tried again this long after, as long as it takes: an alert is worth more late than lost."""


@dataclass(frozen=True, slots=True)
class MailText:
    subject: str
    body: str


def mail_text(
    kind: RuleKind, subject: str, mail: MailKind, *, since: datetime, at: datetime, minutes: int, reads_in: LocalTime
) -> MailText:
    """The mail of an alert raised or cleared: fixed when it is queued, so every attempt sends the same text.
    Instants are in the company's zone, as its console shows them, with their offset and the zone's name."""

    def _shown(instant: datetime) -> str:
        # Always with the offset: a mail is read later, perhaps across a DST change, perhaps somewhere else.
        return f"{reads_in.local(instant):%Y-%m-%d %H:%M} {reads_in.offset_text(instant)} ({reads_in.name})"

    what = kind.label
    if mail is MailKind.RAISED:
        return MailText(
            f"[chargenet] {what}: {subject}",
            f"{what}: {subject}\n\nSince {_shown(since)}, longer than {minutes} minutes (alert raised {_shown(at)}).\n",
        )
    return MailText(
        f"[chargenet] Cleared: {what}: {subject}",
        f"Cleared: {what}: {subject}\n\nThe condition ended; the alert cleared at {_shown(at)}.\n",
    )
