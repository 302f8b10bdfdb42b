"""What OCPP 2.0.1 stations report of themselves beyond their charging (NotifyEvent, NotifyReport,
SecurityEventNotification, firmware, log and reservation status), as the edge stored it: the latest for the
station page (`charge-points:read`)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.services.callers import Caller
from chargenet.services.reach import reachable_station
from chargenet.services.views import Instant, View
from chargenet.store.models import StationNotice

SHOWN = 20
MAX_SUMMARY = 300


class StationNoticeView(View):
    action: str
    received_at: Instant
    summary: str  # a line a person reads; the payload as the station sent it beside it
    payload: str


def _events(payload: dict[str, Any]) -> str:
    parts = []
    for event in payload.get("eventData", []):
        component = event.get("component", {}).get("name", "?")
        variable = event.get("variable", {}).get("name", "?")
        parts.append(f"{component}.{variable} = {event.get('actualValue', '')} ({event.get('trigger', '')})")
    return "; ".join(parts)


def summary(action: str, payload: dict[str, Any]) -> str:
    """One line for a notice (station-supplied text, shown escaped)."""
    if action == "SecurityEventNotification":
        text = f"{payload.get('type')}: {payload.get('techInfo', '')}".rstrip(": ")
    elif action == "NotifyEvent":
        text = _events(payload)
    elif action == "NotifyReport":
        count = len(payload.get("reportData", []))
        more = " (more parts follow)" if payload.get("tbc") else ""
        text = f"report {payload.get('requestId')} part {payload.get('seqNo')}: {count} variables{more}"
    elif action == "ReservationStatusUpdate":
        text = f"reservation {payload.get('reservationId')}: {payload.get('reservationUpdateStatus')}"
    else:
        text = str(payload.get("status", ""))
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 3] + "..."


async def recent_notices(
    session: AsyncSession, caller: Caller, station_id: str, limit: int = SHOWN
) -> list[StationNoticeView]:
    """The station's latest notices, newest first."""
    await reachable_station(session, caller, Scope.CHARGE_POINTS_READ, station_id)
    rows = await session.scalars(
        select(StationNotice)
        .where(StationNotice.station_id == station_id)
        .order_by(StationNotice.id.desc())
        .limit(limit)
    )
    return [
        StationNoticeView(
            action=row.action,
            received_at=row.received_at,
            summary=summary(row.action, json.loads(row.payload)),
            payload=row.payload,
        )
        for row in rows
    ]
