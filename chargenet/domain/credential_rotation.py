"""Rotating a webhook's outbound credentials with an overlap (decisions.md §5, "Partner API").

Rules:
- Rule 1: the new credential is used from the moment it is set.
- Rule 2: until the overlap ends, the previous credential is kept; a request the partner refuses with 401 or 403
  under the new one is sent once more, at once and in the same attempt, with the previous one. Whatever that
  second request gets is the attempt's outcome.
- Rule 3: once the overlap has ended the previous credential is never used, and it is deleted.
- Rule 4: an overlap ends in the future and at most `MAX_OVERLAP` from now.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from chargenet.errors import InvalidInput

MAX_OVERLAP = timedelta(days=30)
REFUSED_STATUSES = frozenset({401, 403})


def in_overlap(now: datetime, overlap_until: datetime | None) -> bool:
    return overlap_until is not None and now < overlap_until


def retry_with_previous(status: int, *, now: datetime, overlap_until: datetime | None, has_previous: bool) -> bool:
    """Whether a request answered `status` under the new credential is sent again with the previous one (Rule 2)."""
    return has_previous and status in REFUSED_STATUSES and in_overlap(now, overlap_until)


def check_overlap_end(overlap_until: datetime, *, now: datetime) -> datetime:
    """Rule 4; InvalidInput naming `overlapUntil` otherwise."""
    if overlap_until <= now:
        raise InvalidInput("the overlap must end in the future", field="overlapUntil")
    if overlap_until - now > MAX_OVERLAP:
        raise InvalidInput(f"the overlap lasts at most {MAX_OVERLAP.days} days", field="overlapUntil")
    return overlap_until
