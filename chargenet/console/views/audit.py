"""The audit log: newest first, narrowed by GET parameters (so a view can be bookmarked), pages by keyset."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.forms import numbered
from chargenet.console.pages import Signed, console_of, page, render
from chargenet.errors import InvalidInput
from chargenet.services import audit

FILTERS = ("action", "object_type", "object_id", "actor", "since", "until")


def _day(value: str, field: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidInput("is not a date such as 2026-07-01", field=field) from None


def parse_filter(params: dict[str, str]) -> audit.AuditFilter:
    """The filter the query string asks for; `since` and `until` are whole days (UTC), `until` included."""
    since, until = _day(params.get("since", ""), "since"), _day(params.get("until", ""), "until")
    return audit.AuditFilter(
        action=params.get("action") or None,
        object_type=params.get("object_type") or None,
        object_id=params.get("object_id") or None,
        actor=params.get("actor") or None,
        since=datetime.combine(since, time(), UTC) if since else None,
        until=datetime.combine(until, time(), UTC) + timedelta(days=1) if until else None,
    )


async def _list(request: Request, signed: Signed) -> Response:
    params = {key: request.query_params.get(key, "").strip() for key in FILTERS}
    context: dict[str, object] = {"params": params, "page": None}
    try:
        where = parse_filter(params)
        # A position we never gave out (an edited address) is the newest page, as on every list.
        before_text = request.query_params.get("before", "")
        before_text = before_text if numbered(before_text) else ""
        async with console_of(request).reading() as session:
            context["page"] = await audit.list_records(
                session,
                company_id=signed.caller.company_id,
                where=where,
                before=int(before_text) if before_text else None,
            )
    except InvalidInput as error:
        context["errors"] = {error.field or "action": error.detail}
        return render(request, "audit.html", context, status_code=422, signed=signed, active="audit")
    return render(request, "audit.html", context, signed=signed, active="audit")


def routes() -> list[Route]:
    return [Route("/audit", page(_list), methods=["GET"])]
