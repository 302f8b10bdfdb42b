"""A station's OCPP message log: every frame to and from the station and its upstream, filtered by action,
direction, message id and time (GET parameters, so a view can be bookmarked and sent to a vendor), newest first
and paged by keyset; exported whole as NDJSON or CSV, streamed. Where the log dropped frames, the gap is shown
with its count. Frames are station-supplied text: shown escaped, exported as text."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.exports import Cell, csv_chunks, download, ndjson_chunks
from chargenet.console.forms import address, local_instant, numbered, page_of, time_filters
from chargenet.console.pages import Signed, console_of, page, render
from chargenet.domain.local_time import LocalTime
from chargenet.errors import InvalidInput
from chargenet.services import companies, message_log, sites, stations
from chargenet.services.message_log import DIRECTIONS, MessageFilter, MessageView

PER_PAGE = 100
DIRECTION_LABELS = {
    "from-station": "From the station",
    "to-station": "To the station",
    "from-upstream": "From the upstream",
    "to-upstream": "To the upstream",
}
DIRECTION_CHOICES = (("", "Every direction"), *((key, DIRECTION_LABELS[key]) for key in DIRECTIONS))
ARROWS = {
    ("station", "in"): "station → chargenet",
    ("station", "out"): "chargenet → station",
    ("upstream", "in"): "upstream → chargenet",
    ("upstream", "out"): "chargenet → upstream",
}
TIME_FIELDS = ("since", "until")  # wall-clock times in the reader's zone, each with its `_offset` choice
FILTER_FIELDS = ("action", "direction", "message_id", "since", "since_offset", "until", "until_offset")
CSV_HEADER = ("id", "at", "peer", "direction", "messageType", "messageId", "action", "dropped", "frame")


def _filters(values: Mapping[str, str]) -> dict[str, str]:
    return {name: values.get(name, "").strip() for name in FILTER_FIELDS}


def _filter_of(typed: Mapping[str, str], reads_in: LocalTime) -> MessageFilter:
    """The filter the GET parameters ask for; `InvalidInput` naming the field that is not one."""
    return MessageFilter(
        action=typed["action"] or None,
        direction=typed["direction"] or None,
        message_id=typed["message_id"] or None,
        since=local_instant(typed, "since", reads_in),
        until=local_instant(typed, "until", reads_in),
    )


async def _show(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    station_id = request.path_params["station_id"]
    typed = _filters(request.query_params)
    wanted, after = page_of(request, PER_PAGE, key=numbered)
    errors: dict[str, str] = {}
    path = console.url(f"/stations/{station_id}/messages")
    times = time_filters(typed, TIME_FIELDS, signed.reads_in, path)
    try:
        where = _filter_of(typed, signed.reads_in)
    except InvalidInput as error:
        errors = {error.field or "action": error.detail}
        where = None
    errors.update(times.errors)  # a time filter's own words for its field
    async with console.reading() as session:
        station = await stations.get_station(session, signed.caller, station_id)
        site = await sites.get_site(session, signed.caller, station.site_id)
        company = await companies.get_company(session, signed.caller, site.company_id)
        listed = None
        if where is not None:
            listed = await message_log.list_messages(session, signed.caller, station_id, wanted, where)
    typed = times.shown
    values = {
        "time_notes": times.notes,
        "company": company,
        "site": site,
        "station": station,
        "here_label": "OCPP message log",
        "items": listed.items if listed else [],
        "filters": typed,
        "errors": errors,
        "direction_choices": DIRECTION_CHOICES,
        "arrows": ARROWS,
        "after": after,
        "first_url": address(path, **typed),
        "next_url": address(path, **typed, after=listed.next) if listed and listed.next else None,
        "ndjson_url": address(f"{path}.ndjson", **typed),
        "csv_url": address(f"{path}.csv", **typed),
    }
    return render(
        request, "station_messages.html", values, status_code=422 if errors else 200, signed=signed, active="sites"
    )


def _json_row(view: MessageView, reads_in: LocalTime) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": view.id,
        "at": reads_in.iso(view.at),
        "peer": view.peer,
        "direction": view.direction,
    }
    if view.is_gap:
        row["dropped"] = view.dropped
        row["until"] = reads_in.iso(view.gap_until) if view.gap_until else None
        return row
    row.update(messageType=view.message_type, messageId=view.message_id, action=view.action, frame=view.frame)
    return row


def _csv_row(view: MessageView) -> Sequence[Cell]:
    return (
        view.id,
        view.at,
        view.peer,
        view.direction,
        view.message_type,
        view.message_id,
        view.action,
        view.dropped,
        "" if view.is_gap else view.frame,
    )


def _export(kind: str) -> Any:
    async def view(request: Request, signed: Signed) -> Response:
        console = console_of(request)
        station_id = request.path_params["station_id"]
        where = _filter_of(_filters(request.query_params), signed.reads_in)  # a bad filter: the 422 page
        async with console.reading() as session:
            await message_log.check_station(session, signed.caller, station_id)  # 404 before any byte is sent
        rows = message_log.export_messages(console.reading, signed.caller, station_id, where)
        stamp = console.clock.now().strftime("%Y%m%dT%H%M%SZ")
        name = f"ocpp-messages-{station_id}-{stamp}.{kind}"
        if kind == "csv":
            chunks = csv_chunks(CSV_HEADER, _mapped(rows, _csv_row), reads_in=signed.reads_in)
            return download(chunks, name, "text/csv; charset=utf-8")
        shaped = _mapped(rows, lambda row: _json_row(row, signed.reads_in))
        return download(ndjson_chunks(shaped), name, "application/x-ndjson")

    return view


async def _mapped(rows: AsyncIterator[MessageView], shape: Any) -> AsyncIterator[Any]:
    async for row in rows:
        yield shape(row)


def routes() -> list[Route]:
    return [
        Route("/stations/{station_id}/messages", page(_show), methods=["GET"]),
        Route("/stations/{station_id}/messages.ndjson", page(_export("ndjson")), methods=["GET"]),
        Route("/stations/{station_id}/messages.csv", page(_export("csv")), methods=["GET"]),
    ]
