"""A start linked to the API request that asked for it (`domain.session_requests`, Rules 1-4), in the unit that
stores the start, so that its StartTransaction event names the request exactly when the link is committed."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.session_requests import MATCH_WINDOW, OpenRequest, RequestStatus, matching_request
from chargenet.store.models import SessionRequest


async def link_request(
    session: AsyncSession,
    *,
    station_id: str,
    ocpp_connector_id: int,
    id_tag: str,
    transaction_id: int,
    now: datetime,
    remote_start_id: int | None = None,
) -> str | None:
    """Link the new transaction to the request it follows, if any; returns that request's id."""
    query = select(SessionRequest).where(
        SessionRequest.station_id == station_id,
        SessionRequest.transaction_id.is_(None),
    )
    if remote_start_id is None:
        query = query.where(
            SessionRequest.ocpp_connector_id == ocpp_connector_id, SessionRequest.requested_at >= now - MATCH_WINDOW
        )
    else:
        query = query.where(SessionRequest.remote_start_id == remote_start_id)
    rows = {row.id: row for row in await session.scalars(query.with_for_update())}
    candidates = [
        OpenRequest(row.id, row.id_tag, row.requested_at, RequestStatus(row.status), row.remote_start_id)
        for row in rows.values()
    ]
    found = matching_request(candidates, id_tag=id_tag, now=now, remote_start_id=remote_start_id)
    if found is not None:
        rows[found].transaction_id = transaction_id
    return found
