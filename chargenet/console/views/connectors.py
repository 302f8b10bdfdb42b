"""Live connector status: the company's connectors in one table (filters as GET parameters, keyset pages of
100), whose rows change in place as stations report, through a server-sent event stream fed by the process's
one live feed (`console.live`), never by a query per browser.

The page carries the feed's mark of the moment it read the store; its stream resumes from there, so a change
committed between the two is not lost (`domain.live` Rule 5). A stream sends each changed row of the
operator's company as HTML (`event: row`), a comment every `HEARTBEAT` seconds (which also checks that the
console session is still alive: a stream never outlives its sign-in), `event: resync` when it fell behind (the
browser reloads the table), and `event: end` when the operator signed out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Literal, cast

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from chargenet.console import protection
from chargenet.console.forms import address, page_of
from chargenet.console.live import LiveFeed
from chargenet.console.pages import Console, Signed, console_of, page, render
from chargenet.domain.live import ENDED, RESYNC, LiveRow, Mark
from chargenet.domain.local_time import DEFAULT_ZONE
from chargenet.domain.scopes import Scope
from chargenet.errors import InvalidInput, NotFound
from chargenet.services import companies, connector_status, console_sessions, sites

PER_PAGE = 50  # as every other list of the console
HEARTBEAT = 15.0  # seconds between comments on a quiet stream (proxies close idle connections)
RECONNECT_MS = 5_000  # how long a browser waits before reopening a stream that closed
FILTER_FIELDS = ("site", "status", "connection", "station")
STATUS_CHOICES = (("", "Any status"), *((status, status) for status in connector_status.STATUSES))
CONNECTION_CHOICES = (("", "Connected or offline"), ("connected", "Connected"), ("offline", "Offline"))


def _typed(values: Mapping[str, str]) -> dict[str, str]:
    return {name: values.get(name, "").strip() for name in FILTER_FIELDS}


def _filters_of(typed: Mapping[str, str]) -> connector_status.Filters:
    return connector_status.Filters(
        site_id=typed["site"] or None,
        status=typed["status"] or None,
        connection=cast(Literal["connected", "offline"] | None, typed["connection"] or None),
        station=typed["station"] or None,
    )


def _connector_key(key: str) -> bool:
    """Whether a page's key looks like the table's (a charge point id, a space, a connector id)."""
    charge_point_id, _, connector = key.rpartition(" ")
    return bool(charge_point_id) and connector.isdigit() and len(connector) <= 5


def row_id(row: LiveRow) -> str:
    return f"live-{row.connector.charge_point_id}-{row.connector.connector_id}"


async def _list(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    typed = _typed(request.query_params)
    wanted, after = page_of(request, PER_PAGE, key=_connector_key)
    errors: dict[str, str] = {}
    try:
        filters: connector_status.Filters | None = _filters_of(typed)
    except InvalidInput as error:
        errors = {error.field or "status": error.detail}
        filters = None
    # The mark before the read: what the feed publishes after it is sent to the stream, even if the read saw it.
    mark = console.live.mark() if console.live is not None else None
    async with console.reading() as session:
        company = await companies.get_company(session, signed.caller, signed.caller.company_id)
        listed = (
            await connector_status.list_connectors(session, signed.caller, filters, wanted)
            if filters is not None
            else None
        )
        site_names = await sites.site_names(
            session, signed.caller, [row.connector.site_id for row in listed.items] if listed else []
        )
        choices = await sites.site_choices(session, signed.caller, Scope.CHARGE_POINTS_READ)
    if typed["site"] and typed["site"] not in dict(choices):
        choices.append((typed["site"], typed["site"]))  # an address naming a site not offered still shows its filter
    path = console.url("/connectors")
    rows = listed.items if listed else []
    values = {
        "company": company,
        "rows": rows,
        "row_id": row_id,
        "site_names": site_names,
        "site_choices": [("", "Any site"), *choices],
        "filters": typed,
        "filtered": any(typed.values()),
        "errors": errors,
        "status_choices": STATUS_CHOICES,
        "connection_choices": CONNECTION_CHOICES,
        "after": after,
        "first_url": address(path, **typed),
        "next_url": address(path, **typed, after=listed.next) if listed and listed.next else None,
        "stream_url": address(f"{path}/stream", since=mark.encode()) if mark is not None else None,
        "connector_zero": any(row.connector.connector_id == 0 for row in rows),
    }
    return render(
        request, "connectors.html", values, status_code=422 if errors else 200, signed=signed, active="connectors"
    )


class RenderedRows:
    """Each changed row rendered once, however many streams send it: the feed hands every subscriber the same
    `LiveRow` object, so the rows recently rendered are kept by identity (holding the row keeps its id unique)."""

    def __init__(self, size: int = 8192) -> None:
        self._size = size
        self._rendered: OrderedDict[tuple[int, str, str | None, str], tuple[LiveRow, str]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._rendered)

    def event(
        self,
        row: LiveRow,
        base: str,
        render: Callable[[LiveRow], str],
        site_name: str | None = None,
        zone: str = DEFAULT_ZONE,
    ) -> str:
        """The `row` event of `row` as the console at `base` renders it, naming its site `site_name`, its times in
        `zone`."""
        key = (id(row), base, site_name, zone)
        found = self._rendered.get(key)
        if found is not None and found[0] is row:
            return found[1]
        text = _event("row", render(row))
        self._rendered[key] = (row, text)
        if len(self._rendered) > self._size:
            self._rendered.popitem(last=False)
        return text


rendered_rows = RenderedRows()


def _event(name: str, data: str) -> str:
    lines = data.splitlines() or [""]
    return f"event: {name}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"


def _feed_of(console: Console) -> LiveFeed:
    if console.live is None:
        raise NotFound("live status stream", "this console runs without a live feed")
    return console.live


async def _stream(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    feed = _feed_of(console)
    since = Mark.decode(request.query_params.get("since", ""))
    token = request.cookies.get(protection.COOKIE_NAME, "")
    template = console.templates.get_template("_live_row.html")

    # The names of the sites this stream has shown rows of: read once for each site it meets (a site created
    # later, by one small read when its first row comes), not for each row; a rename shows on the next page read.
    site_names: dict[str, str] = {}

    def render(row: LiveRow) -> str:
        # One line: an event's data is sent a line at a time, and HTML needs none of the template's layout.
        text = template.render(
            row=row, row_id=row_id, base=console.base, site_names=site_names, reads_in=signed.reads_in
        )
        return " ".join(line.strip() for line in text.splitlines() if line.strip())

    async def name_sites(rows: list[LiveRow]) -> None:
        missing = {row.connector.site_id for row in rows} - site_names.keys()
        if missing:
            async with console.reading() as session:
                found = await sites.site_names(session, signed.caller, missing)
            site_names.update({site_id: found.get(site_id, "") for site_id in missing})

    subscription = feed.subscribe(signed.caller.company_id, session_hash=signed.session_hash, since=since)
    if since is None:
        subscription.behind = True  # a page without a mark: it reads the table again (domain.live Rule 5)

    async def signed_in() -> bool:
        async with console.reading() as session:
            resumed, _ = await console_sessions.look_up(session, token, now=console.clock.now())
        return resumed is not None and resumed.id_hash == signed.session_hash

    async def events() -> AsyncIterator[str]:
        checked = console.clock.now()
        try:
            yield f"retry: {RECONNECT_MS}\n: live connector status of {signed.caller.company_id}\n\n"
            while True:
                # The session is checked every HEARTBEAT seconds, rows or none: a busy network must not keep an
                # operator who was disabled, or whose session expired, watching it.
                if (console.clock.now() - checked).total_seconds() >= HEARTBEAT:
                    checked = console.clock.now()
                    if not await signed_in():
                        yield _event("end", "signed out")
                        return
                got = await feed.next(subscription, HEARTBEAT)
                if got is ENDED:
                    if not feed.stopped:
                        yield _event("end", "signed out")
                    return  # the process is stopping: the browser reconnects to whichever process serves it
                if got is RESYNC:
                    yield _event("resync", "fell behind: read the table again")
                    return
                if not isinstance(got, list):
                    return
                if not got:
                    checked = console.clock.now()
                    if not await signed_in():
                        yield _event("end", "signed out")
                        return
                    yield ": still here\n\n"
                    continue
                await name_sites(got)
                yield "".join(
                    rendered_rows.event(
                        row, console.base, render, site_names[row.connector.site_id], signed.reads_in.name
                    )
                    for row in got
                )
        finally:
            feed.unsubscribe(subscription)

    return StreamingResponse(events(), media_type="text/event-stream", headers={"x-accel-buffering": "no"})


def routes() -> list[Route]:
    return [
        Route("/connectors", page(_list), methods=["GET"]),
        Route("/connectors/stream", page(_stream), methods=["GET"]),
    ]
