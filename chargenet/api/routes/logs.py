"""What the console shows and partners may read too: a station's OCPP message log (`ocpp-messages:read`), paged
or exported whole as NDJSON, and the caller's company's audit log (`audit-log:read`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query
from starlette.responses import Response, StreamingResponse

from chargenet.api.dependencies import Context
from chargenet.api.fields import DateTime
from chargenet.api.pagination import PageParams
from chargenet.api.security import require
from chargenet.domain.scopes import Scope
from chargenet.services import audit, message_log
from chargenet.services.audit import AuditEntry, AuditFilter
from chargenet.services.callers import ApiApplication
from chargenet.services.message_log import MessageFilter, MessageView
from chargenet.services.pages import Page

router = APIRouter()

MessageReader = Annotated[ApiApplication, Depends(require(Scope.OCPP_MESSAGES_READ))]
AuditReader = Annotated[ApiApplication, Depends(require(Scope.AUDIT_LOG_READ))]

NDJSON = "application/x-ndjson"
EXPORT_CHUNK = 64 * 1024  # bytes of lines sent together

StationPath = Annotated[str, Path(min_length=1, max_length=48, description="The station's id (`{stationId}`)")]
Direction = Literal["from-station", "to-station", "from-upstream", "to-upstream"]
Since = Annotated[DateTime | None, Query(description="Only what happened at or after this instant (RFC 3339)")]
Until = Annotated[DateTime | None, Query(description="Only what happened before this instant (RFC 3339)")]

_EXPORT: dict[int | str, dict[str, Any]] = {
    200: {
        "description": (
            "A page of the log, newest first; with `format=ndjson` the whole filtered log instead, oldest first,"
            " one JSON object (a MessageView) a line, `limit` and `cursor` aside."
        ),
        "content": {NDJSON: {"schema": {"type": "string"}}},
    }
}


async def _lines(rows: AsyncIterator[MessageView]) -> AsyncIterator[bytes]:
    chunk = bytearray()
    async for row in rows:
        chunk += row.__pydantic_serializer__.to_json(row, by_alias=True) + b"\n"
        if len(chunk) >= EXPORT_CHUNK:
            yield bytes(chunk)
            chunk.clear()
    yield bytes(chunk)


@router.get("/stations/{station_id}/messages", response_model=Page[MessageView], responses=_EXPORT, tags=["stations"])
async def list_station_messages(
    station_id: StationPath,
    context: Context,
    caller: MessageReader,
    page: PageParams,
    action: Annotated[str | None, Query(pattern=r"^[A-Za-z0-9]{1,64}$", description="An OCPP action")] = None,
    direction: Direction | None = None,
    message_id: Annotated[str | None, Query(alias="messageId", min_length=1, max_length=64)] = None,
    since: Since = None,
    until: Until = None,
    output: Annotated[
        Literal["json", "ndjson"], Query(alias="format", description="`ndjson`: the whole filtered log")
    ] = "json",
) -> Page[MessageView] | Response:
    where = MessageFilter(action=action, direction=direction, message_id=message_id, since=since, until=until)
    if output == "ndjson":
        async with context.store.read() as session:
            await message_log.check_station(session, caller, station_id)  # 404 before any byte is sent
        rows = message_log.export_messages(context.store.read, caller, station_id, where)
        return StreamingResponse(_lines(rows), media_type=NDJSON)
    async with context.store.read() as session:
        return await message_log.list_messages(session, caller, station_id, page, where)


@router.get("/audit-log", response_model=Page[AuditEntry], tags=["audit"])
async def list_audit_records(
    context: Context,
    caller: AuditReader,
    page: PageParams,
    action: Annotated[str | None, Query(min_length=1, max_length=64, description="e.g. `site.create`")] = None,
    object_type: Annotated[str | None, Query(alias="objectType", min_length=1, max_length=64)] = None,
    object_id: Annotated[str | None, Query(alias="objectId", min_length=1, max_length=200)] = None,
    actor: Annotated[str | None, Query(min_length=1, max_length=300, description="Part of who acted")] = None,
    since: Since = None,
    until: Until = None,
) -> Page[AuditEntry]:
    where = AuditFilter(action, object_type, object_id, actor, since, until)
    company_id = caller.company_id
    assert company_id is not None, "an application belongs to a company"
    async with context.store.read() as session:
        return await audit.list_records(session, caller, page, company_id=company_id, where=where)
