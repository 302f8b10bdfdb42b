"""Session requests (decisions.md §5 "Partner API"): a session started over the API is followed by its request,
`GET /sessions/requests/{requestId}`, for 7 days: the station's answer, and once the transaction started, its id.

`charge_point_commands.request_session` opens a request before it asks the station and records the answer after;
the edge links the start that follows (`edge.remote_starts`, rules in `domain.session_requests`). A request is
read with `sessions:write` on its site, the scope that made it: another company's, or one past its 7 days
(`SessionRequestRetention` purges them hourly), is `NotFound` alike.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.domain.session_requests import KEPT, RequestStatus, shown_status
from chargenet.errors import NotFound
from chargenet.ids import new_id
from chargenet.services.callers import Caller
from chargenet.services.reach import reachable_on_site
from chargenet.services.views import Instant, View, optional
from chargenet.store.db import LONG
from chargenet.store.models import SessionRequest
from chargenet.workers import RetentionWorker

log = logging.getLogger(__name__)

REQUEST_ID_PREFIX = "sreq"


class SessionRequestView(View):
    """A session request: where and for which idTag, the station's answer (`status`: `Pending`, `Accepted`,
    `Rejected`, `NotConnected`, `Timeout` or `Failed`) and the transaction that followed, once it started."""

    request_id: str
    charge_point_id: str
    connector_id: int
    id_tag: str
    requested_at: Instant
    status: RequestStatus
    answered_at: Instant | None = optional()
    transaction_id: int | None = optional()


async def open_request(
    session: AsyncSession,
    caller: Caller,
    *,
    site_id: str,
    station_id: str,
    charge_point_id: str,
    connector_id: int,
    ocpp_connector_id: int,
    id_tag: str,
    now: datetime,
    remote_start_id: int | None = None,
) -> str:
    """Store a new pending request, before its station is asked; returns its id. `remote_start_id` is the
    `remoteStartId` a 2.0.1 station is sent, by which the transaction it starts names this request."""
    request_id = new_id(REQUEST_ID_PREFIX, 20)
    session.add(
        SessionRequest(
            id=request_id,
            site_id=site_id,
            station_id=station_id,
            charge_point_id=charge_point_id,
            connector_id=connector_id,
            ocpp_connector_id=ocpp_connector_id,
            id_tag=id_tag,
            requested_by=caller.actor.who[:300],
            requested_at=now,
            status=RequestStatus.PENDING.value,
            remote_start_id=remote_start_id,
        )
    )
    await session.flush()
    return request_id


async def record_answer(session: AsyncSession, request_id: str, status: RequestStatus, *, now: datetime) -> None:
    """The station's answer to a request (or what came instead); the transaction it may already be linked to
    stays."""
    row = await session.get(SessionRequest, request_id, with_for_update=True)
    if row is not None:
        row.status, row.answered_at = status.value, now


async def get_request(session: AsyncSession, caller: Caller, request_id: str, *, now: datetime) -> SessionRequestView:
    """One request, if the caller's `sessions:write` reaches its site and it is at most 7 days old."""
    missing = NotFound("session request", request_id[:60])
    row = await session.get(SessionRequest, request_id) if len(request_id) <= 40 else None
    if row is not None and row.requested_at < now - KEPT:
        row = None
    row = await reachable_on_site(session, caller, Scope.SESSIONS_WRITE, row, missing)
    return SessionRequestView(
        request_id=row.id,
        charge_point_id=row.charge_point_id,
        connector_id=row.connector_id,
        id_tag=row.id_tag,
        requested_at=row.requested_at,
        status=shown_status(RequestStatus(row.status), row.requested_at, now),
        answered_at=row.answered_at,
        transaction_id=row.transaction_id,
    )


async def purge(session: AsyncSession, *, now: datetime) -> int:
    """Delete the requests older than 7 days; returns how many."""
    result = await session.execute(
        delete(SessionRequest).where(SessionRequest.requested_at < now - KEPT).execution_options(**LONG)
    )
    return int(getattr(result, "rowcount", 0) or 0)


class SessionRequestRetention(RetentionWorker):
    """Purges session requests past their 7 days, hourly, like the other retention jobs."""

    name = "session-request-retention"
    what = "old session requests"

    async def purge(self, session: AsyncSession, now: datetime) -> int:
        return await purge(session, now=now)
