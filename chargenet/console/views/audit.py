"""The audit log: newest first, narrowed by GET parameters (so a view can be bookmarked), pages by keyset."""

from __future__ import annotations

from datetime import date, timedelta

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.forms import address, numbered, page_of
from chargenet.console.pages import Signed, console_of, page, render
from chargenet.domain.local_time import LocalTime
from chargenet.errors import InvalidInput
from chargenet.services import audit

FILTERS = ("action", "object_type", "object_id", "actor", "since", "until")
PAGE_SIZE = 50


def _day(value: str, field: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise InvalidInput("is not a date such as 2026-07-01", field=field) from None


def parse_filter(params: dict[str, str], reads_in: LocalTime) -> audit.AuditFilter:
    """The filter the query string asks for; `since` and `until` are whole days in the reader's zone (23 or 25
    hours long at a DST change), `until` included."""
    since, until = _day(params.get("since", ""), "since"), _day(params.get("until", ""), "until")
    return audit.AuditFilter(
        action=params.get("action") or None,
        object_type=params.get("object_type") or None,
        object_id=params.get("object_id") or None,
        actor=params.get("actor") or None,
        since=reads_in.day_start(since) if since else None,
        until=reads_in.day_start(until + timedelta(days=1)) if until else None,
    )


async def _list(request: Request, signed: Signed) -> Response:
    params = {key: request.query_params.get(key, "").strip() for key in FILTERS}
    context: dict[str, object] = {"params": params, "page": None, "older_url": None}
    # A position we never gave out (an edited address) is the newest page, as on every list.
    wanted, _ = page_of(request, PAGE_SIZE, key=numbered)
    try:
        where = parse_filter(params, signed.reads_in)
        async with console_of(request).reading() as session:
            found = await audit.list_records(
                session, signed.caller, wanted, company_id=signed.caller.company_id, where=where
            )
    except InvalidInput as error:
        context["errors"] = {error.field or "action": error.detail}
        return render(request, "audit.html", context, status_code=422, signed=signed, active="audit")
    context["page"] = found
    if found.next is not None:
        context["older_url"] = address(console_of(request).url("/audit"), **params, after=found.next)
    return render(request, "audit.html", context, signed=signed, active="audit")


def routes() -> list[Route]:
    return [Route("/audit", page(_list), methods=["GET"])]
