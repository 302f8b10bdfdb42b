"""When the head of a lane is tried again (decisions.md §3, "Retry timing").

The first attempt, then up to 360 retries, each starting 10 s after the previous attempt *ended*. Counting
from the end keeps the spacing fixed even when the receiver is slow, and makes the window about 60 minutes
when it fails fast: a receiver down 59 minutes still gets the event, one down 61 minutes does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

RETRY_INTERVAL = timedelta(seconds=10)
MAX_RETRIES = 360


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    interval: timedelta = RETRY_INTERVAL
    max_retries: int = MAX_RETRIES

    @property
    def max_attempts(self) -> int:
        return 1 + self.max_retries

    def next_attempt_at(self, attempts_made: int, ended_at: datetime) -> datetime | None:
        """When to try again after `attempts_made` failed attempts, the last one ending at `ended_at`;
        None when the retries are used up."""
        if attempts_made < 1:
            raise ValueError("next_attempt_at is asked after at least one failed attempt")
        if attempts_made >= self.max_attempts:
            return None
        return ended_at + self.interval
