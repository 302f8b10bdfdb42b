"""Sessions started over the API, followed by their request (decisions.md §5 "Partner API").

`POST /sessions` stores a request before it asks the station, records the station's answer after, and
`GET /sessions/requests/{requestId}` reads it back for 7 days (`KEPT`). The StartTransaction that follows an
accepted remote start names no request in OCPP 1.6, so the edge links it by these rules (docs/decisions.md):

- Rule 1: a start follows a request made on the same station and the same (station-numbered) connector, for
  the same idTag, at most `MATCH_WINDOW` before the start reached the edge. The window is the edge's clock, not
  the station's timestamp: a station's clock may be off, and a start resent after a reconnect arrives late.
- Rule 2: only a request the station may have acted on counts: one still waiting for its answer (the station
  may send StartTransaction before its answer is recorded), accepted, or unanswered in time (a late station).
  Rejected, refused with an error or never sent (station not connected) requests are never linked.
- Rule 3: a request is linked to one transaction at most; among several candidates the newest wins, as the
  station acts on the last command it accepted.
- Rule 4: a start that names its request (OCPP 2.0.1's `remoteStartId`) is linked to that request alone, by the
  same station; Rules 1-3 are for starts that name none.

A request still `Pending` long after any answer could have come (its process stopped while waiting) reads as
`Timeout` (`shown_status`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

KEPT = timedelta(days=7)
MATCH_WINDOW = timedelta(minutes=10)
# Longer than any command waits for a station's answer (30 s): a request pending past this was left unanswered.
ANSWER_WAIT = timedelta(minutes=2)


class RequestStatus(StrEnum):
    """How a request ended: the station's answer (`Accepted`, `Rejected`), or what the edge saw instead."""

    PENDING = "Pending"
    ACCEPTED = "Accepted"
    REJECTED = "Rejected"
    NOT_CONNECTED = "NotConnected"
    TIMEOUT = "Timeout"
    FAILED = "Failed"  # a CALLERROR, or an answer that breaks its schema


# Rule 2: requests a station may have acted on.
LINKABLE = frozenset({RequestStatus.PENDING, RequestStatus.ACCEPTED, RequestStatus.TIMEOUT})


@dataclass(frozen=True, slots=True)
class OpenRequest:
    """A request not yet linked to a transaction, on the station and connector of a start."""

    request_id: str
    id_tag: str
    requested_at: datetime
    status: RequestStatus
    remote_start_id: int | None = None


def matching_request(
    candidates: Sequence[OpenRequest], *, id_tag: str, now: datetime, remote_start_id: int | None = None
) -> str | None:
    """The request a start of `id_tag` reaching the edge at `now` follows, among the unlinked requests of its
    station and connector (Rules 1-4); None for a start nobody asked for over the API."""
    if remote_start_id is not None:
        named = [c for c in candidates if c.remote_start_id == remote_start_id]
        return named[0].request_id if named else None
    eligible = [
        c
        for c in candidates
        if c.status in LINKABLE and c.id_tag == id_tag and now - MATCH_WINDOW <= c.requested_at <= now
    ]
    if not eligible:
        return None
    return max(eligible, key=lambda c: c.requested_at).request_id


def shown_status(status: RequestStatus, requested_at: datetime, now: datetime) -> RequestStatus:
    """The status a request reads as: one left pending past any answer (its process stopped) is a timeout."""
    if status is RequestStatus.PENDING and now - requested_at > ANSWER_WAIT:
        return RequestStatus.TIMEOUT
    return status
