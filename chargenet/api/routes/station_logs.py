"""A station's logs: asked of it (`POST /stations/{id}/request-log`, scope charge-points:write: GetDiagnostics to a 1.6
station, GetLog to a 2.0.1 one, with a one-time upload location), listed (`GET /stations/{id}/logs`,
charge-points:read) and downloaded (`GET /stations/{id}/logs/{logId}`, charge-points:read).

Asking answers 200 with the station's answer and the request's id (2.0.1's `requestId`), 503/504/502 as the other
station commands, and 409 when the upload base URL is plain http on a host that is not loopback.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path
from fastapi.responses import FileResponse

from chargenet.api.dependencies import Context
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.domain.text import INT32_MAX
from chargenet.services import station_logs
from chargenet.services.callers import ApiApplication
from chargenet.services.station_logs import LogRequestAnswer, StationLogs

router = APIRouter(tags=["station logs"])

Commander = Annotated[ApiApplication, Depends(require(Scope.CHARGE_POINTS_WRITE))]
Reader = Annotated[ApiApplication, Depends(require(Scope.CHARGE_POINTS_READ))]
LogId = Annotated[int, Path(ge=1, le=INT32_MAX, description="The log's id, as the list gives it")]


@router.post("/stations/{station_id}/request-log", response_model=LogRequestAnswer)
async def request_log(station_id: str, context: Context, caller: Commander) -> LogRequestAnswer:
    """Asks the station for its diagnostics log; it uploads the file to the location given, once."""
    settings = context.settings
    return await station_logs.request_log(
        context.store.read,
        context.store.transaction,
        context.stations,
        caller,
        station_id=station_id,
        upload_base=settings.upload_url or settings.public_url,
        now=context.clock.now(),
    )


@router.get("/stations/{station_id}/logs", response_model=StationLogs)
async def logs(station_id: str, context: Context, caller: Reader) -> StationLogs:
    """The log files the station uploaded, the latest first (kept 30 days by default)."""
    async with context.store.read() as session:
        return await station_logs.list_logs(session, caller, station_id)


@router.get(
    "/stations/{station_id}/logs/{log_id}",
    response_class=FileResponse,
    responses={
        200: {
            "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
            "description": "The file as the station sent it",
        }
    },
)
async def download(station_id: str, log_id: LogId, context: Context, caller: Reader) -> FileResponse:
    async with context.store.read() as session:
        found = await station_logs.log_file(session, caller, context.settings.data_dir, station_id, log_id)
    return FileResponse(
        found.path,
        media_type="application/octet-stream",
        filename=found.view.file_name,
        headers={"X-Content-Type-Options": "nosniff"},
    )
