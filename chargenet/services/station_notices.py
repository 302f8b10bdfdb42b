"""What OCPP 2.0.1 stations report of themselves beyond their charging (NotifyEvent, NotifyReport,
SecurityEventNotification, firmware, log and reservation status), as the edge stored it: the latest for the
station page (`charge-points:read`)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.edge.ocpp201 import device_model
from chargenet.errors import NotFound
from chargenet.services.callers import Caller
from chargenet.services.reach import reachable_station
from chargenet.services.views import Instant, View
from chargenet.store.models import StationNotice

SHOWN = 20
MAX_REPORT_PARTS = 1000  # the NotifyReport parts read to assemble one report
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


class ReportedVariableView(View):
    component: str
    component_instance: str | None = None
    evse_id: int | None = None
    connector_id: int | None = None
    variable: str
    variable_instance: str | None = None
    values: dict[str, str | None]
    mutability: dict[str, str]
    unit: str | None = None
    data_type: str | None = None


class DeviceModelReportView(View):
    """The station's latest device model report (GetBaseReport), assembled from its NotifyReport parts."""

    request_id: int
    received_at: Instant  # when its latest part arrived
    parts: int
    complete: bool
    missing_parts: list[int]
    variables: list[ReportedVariableView]


async def device_model_report(session: AsyncSession, caller: Caller, station_id: str) -> DeviceModelReportView:
    """The report of the latest NotifyReport the station sent, from every part of it that is stored; `NotFound`
    when the station has sent none (in the 30 days its notices are kept)."""
    await reachable_station(session, caller, Scope.CHARGE_POINTS_READ, station_id)
    reports = select(StationNotice).where(
        StationNotice.station_id == station_id, StationNotice.action == "NotifyReport"
    )
    latest = (await session.scalars(reports.order_by(StationNotice.id.desc()).limit(1))).first()
    if latest is None:
        raise NotFound("device model report", station_id)
    request_id = int(json.loads(latest.payload)["requestId"])
    # The parts of one report arrive together; a station's earlier reports with the same id are rare enough to
    # read through (assembly keeps the first of each part).
    rows = list(await session.scalars(reports.order_by(StationNotice.id.desc()).limit(MAX_REPORT_PARTS)))
    report = device_model.assemble(request_id, [json.loads(row.payload) for row in reversed(rows)])
    return DeviceModelReportView(
        request_id=report.request_id,
        received_at=latest.received_at,
        parts=report.parts,
        complete=report.complete,
        missing_parts=report.missing_parts,
        variables=[
            ReportedVariableView.model_validate(variable, from_attributes=True) for variable in report.variables
        ],
    )
