"""Envelope timestamps: ISO 8601 in Europe/Brussels with a numeric offset, never `Z`.

The offset must be the one Brussels had at that instant (+01:00 in winter, +02:00 in summer, as the
tz database says), so a partner can compare timestamps as text within one season and as instants always.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

BRUSSELS = ZoneInfo("Europe/Brussels")

_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}:\d{2}$")


def brussels_timestamp(instant: datetime) -> str:
    """Format an aware instant as `2026-07-01T14:03:22.123+02:00`."""
    if instant.tzinfo is None:
        raise ValueError("instant must be timezone-aware")
    return instant.astimezone(BRUSSELS).isoformat(timespec="milliseconds")


def parse_brussels_timestamp(text: str) -> datetime:
    """Parse an envelope timestamp, refusing `Z`, missing offsets and offsets Brussels did not have then."""
    if text.endswith(("Z", "z")):
        raise ValueError("must carry a numeric Europe/Brussels offset such as +01:00, not Z")
    if not _PATTERN.match(text):
        raise ValueError("must be an ISO 8601 date-time with a numeric offset, e.g. 2026-07-01T14:03:22.123+02:00")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"is not a valid date-time ({exc})") from None
    expected = parsed.astimezone(BRUSSELS).utcoffset()
    if parsed.utcoffset() != expected:
        raise ValueError(f"offset {text[-6:]} is not the Europe/Brussels offset at that instant")
    return parsed.astimezone(UTC)
