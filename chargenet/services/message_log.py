"""A station's OCPP message log as an operator or a partner reads it (`ocpp-messages:read`): every frame to and from the
station and to and from its site's upstream, kept 30 days (decisions.md §4), filtered by action, direction,
message id and time.

A page is newest first; an export reads the whole filtered log oldest first, in batches of its own units of
work, so it never holds the log in memory nor one long transaction open. Where the log had to drop frames (its
buffer is bounded) a `gap` row stands in their place with their count; it is part of every filtered view of
that peer's frames and time, since the frames it stands for may have been any of them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.errors import InvalidInput
from chargenet.services.callers import Caller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.reach import reachable_station
from chargenet.services.views import Instant, View
from chargenet.store.db import Transactions
from chargenet.store.models import OcppMessage, Station

GAP = "gap"  # `chargenet.edge.messagelog.GAP`: the runtime's name, which services may not import
EXPORT_BATCH = 1000

# What an operator calls a direction, and how the log stores it (peer, direction).
DIRECTIONS: dict[str, tuple[str, str]] = {
    "from-station": ("station", "in"),
    "to-station": ("station", "out"),
    "from-upstream": ("upstream", "in"),
    "to-upstream": ("upstream", "out"),
}
MESSAGE_TYPES = {2: "CALL", 3: "CALLRESULT", 4: "CALLERROR"}


class MessageView(View):
    """One logged frame as it was sent or received (`frame`, text as it came), or a gap (`dropped` frames of
    `peer` missing from `at` to `gap_until`)."""

    id: int
    station_id: str
    peer: str
    direction: str
    at: Instant
    message_type: int | None
    message_id: str | None
    action: str | None
    frame: str
    dropped: int | None = None
    gap_until: Instant | None = None

    @property
    def kind(self) -> str:
        return MESSAGE_TYPES.get(self.message_type or 0, "")

    @property
    def is_gap(self) -> bool:
        return self.direction == GAP


@dataclass(frozen=True, slots=True)
class MessageFilter:
    """Which frames: every one given is required; `direction` is a key of DIRECTIONS."""

    action: str | None = None
    direction: str | None = None
    message_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def __post_init__(self) -> None:
        if self.direction is not None and self.direction not in DIRECTIONS:
            raise InvalidInput(f"must be one of {', '.join(DIRECTIONS)}", field="direction")
        if self.action is not None and not (self.action.isascii() and self.action.isalnum() and len(self.action) <= 64):
            raise InvalidInput("an OCPP action is a word of letters, such as StatusNotification", field="action")
        if self.message_id is not None and len(self.message_id) > 64:
            raise InvalidInput("a message id has at most 64 characters", field="message_id")
        if self.since is not None and self.until is not None and self.until < self.since:
            raise InvalidInput("is before the start of the period", field="until")


async def check_station(session: AsyncSession, caller: Caller, station_id: str) -> Station:
    """The station, if the caller's `ocpp-messages:read` reaches it; `NotFound` otherwise."""
    return await reachable_station(session, caller, Scope.OCPP_MESSAGES_READ, station_id)


def _query(station_id: str, where: MessageFilter) -> Select[Any]:
    query = select(OcppMessage).where(OcppMessage.station_id == station_id)
    if where.direction is not None:
        peer, direction = DIRECTIONS[where.direction]
        query = query.where(
            OcppMessage.peer == peer, or_(OcppMessage.direction == direction, OcppMessage.direction == GAP)
        )
    matches = []
    if where.action is not None:
        matches.append(OcppMessage.action == where.action)
    if where.message_id is not None:
        matches.append(OcppMessage.message_id == where.message_id)
    if matches:
        query = query.where(or_(and_(*matches), OcppMessage.direction == GAP))
    if where.since is not None:
        query = query.where(OcppMessage.at >= where.since)
    if where.until is not None:
        query = query.where(OcppMessage.at < where.until)
    return query


def message_view(row: OcppMessage) -> MessageView:
    dropped = gap_until = None
    if row.direction == GAP:
        try:
            note = json.loads(row.frame)
            dropped = int(note["dropped"])
            gap_until = datetime.fromisoformat(note["to"])
        except (ValueError, KeyError, TypeError):
            dropped = 0
    return MessageView(
        id=row.id,
        station_id=row.station_id,
        peer=row.peer,
        direction=row.direction,
        at=row.at,
        message_type=row.message_type,
        message_id=row.message_id,
        action=row.action,
        frame=row.frame,
        dropped=dropped,
        gap_until=gap_until,
    )


async def list_messages(
    session: AsyncSession, caller: Caller, station_id: str, page: PageRequest, where: MessageFilter
) -> Page[MessageView]:
    """A page of the station's log, newest first."""
    await check_station(session, caller, station_id)
    query = _query(station_id, where).order_by(OcppMessage.id.desc()).limit(page.fetch)
    after = page.after_number()
    if after is not None:
        query = query.where(OcppMessage.id < after)
    rows = [message_view(row) for row in await session.scalars(query)]
    return page.page(rows, lambda view: str(view.id))


async def export_messages(
    reading: Transactions, caller: Caller, station_id: str, where: MessageFilter, *, batch: int = EXPORT_BATCH
) -> AsyncIterator[MessageView]:
    """The station's whole filtered log, oldest first, read `batch` rows at a time, each batch in a unit of work
    of its own. Raises `NotFound` (before yielding anything) for a station the caller does not reach."""
    async with reading() as session:
        await check_station(session, caller, station_id)
    last = 0
    while True:
        async with reading() as session:
            query = _query(station_id, where).where(OcppMessage.id > last).order_by(OcppMessage.id).limit(batch)
            rows = [message_view(row) for row in await session.scalars(query)]
        for row in rows:
            yield row
        if len(rows) < batch:
            return
        last = rows[-1].id
