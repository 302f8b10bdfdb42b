"""Which time windows of a webhook's events an operator may recover (send again).

Rules:
- Rule 1: a window is `since` (included) to `until` (excluded), `since` before `until`.
- Rule 2: no part of it lies in the future: `until` is at most now.
- Rule 3: it lies within the retention of delivered events (decisions.md §4, 7 days by default): `since` is not
  older than now minus the retention, since older events are purged and could not all be sent again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from chargenet.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class RecoveryWindow:
    since: datetime
    until: datetime


def check_window(since: datetime, until: datetime, *, now: datetime, retention: timedelta) -> RecoveryWindow:
    """The window if it may be recovered; InvalidInput naming `since` or `until` otherwise."""
    if until > now:
        raise InvalidInput("the window ends in the future", field="until")
    if since >= until:
        raise InvalidInput("the window starts at or after its end", field="since")
    if since < now - retention:
        days = retention / timedelta(days=1)
        raise InvalidInput(f"the window starts before the retention of delivered events ({days:g} days)", field="since")
    return RecoveryWindow(since, until)
