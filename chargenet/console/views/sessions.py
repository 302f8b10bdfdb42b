"""Sessions: OCPP transactions and meter sessions alike, filtered by site, station, idTag, time and state (GET
parameters), newest first and paged by keyset, with energy in kWh, duration and reasons; any filtered list
exported as CSV, streamed; one session with its meter values (a chart of the energy it delivered over time, and
the numbers in a table) and its OCPP messages in order (its timeline from the message log)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar, cast

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.charts import line_chart
from chargenet.console.exports import Cell, csv_chunks, download
from chargenet.console.forms import address, local_instant, numbered, page_of, time_filters
from chargenet.console.pages import Signed, console_of, page, render
from chargenet.console.views.message_log import ARROWS
from chargenet.domain.energy import wh_to_kwh
from chargenet.domain.local_time import LocalTime
from chargenet.errors import InvalidInput, NotFound
from chargenet.services import companies, sites
from chargenet.services import sessions as session_service
from chargenet.services.sessions import EnergySample, SessionFilter, SessionSamples, SessionView, State
from chargenet.services.transactions import Source

PER_PAGE = 50
CHART_POINTS = 600  # more would draw nothing a 640-unit wide chart can show
TABLE_SAMPLES = 48  # the rows of the samples' table, spread over the session when it has more
TIME_FIELDS = ("since", "until")  # wall-clock times in the reader's zone, each with its `_offset` choice
FILTER_FIELDS = ("site", "station", "id_tag", "since", "since_offset", "until", "until_offset", "state", "source")
STATE_CHOICES = (("", "Any state"), ("active", "In progress"), ("completed", "Completed"))
SOURCE_CHOICES = (("", "OCPP and meters"), ("ocpp", "OCPP stations"), ("meter", "Meters"))
CSV_HEADER = (
    "transactionId",
    "source",
    "siteId",
    "stationId",
    "chargePointId",
    "connectorId",
    "idTag",
    "state",
    "startedAt",
    "stoppedAt",
    "durationSeconds",
    "meterStartKwh",
    "meterStopKwh",
    "energyKwh",
    "startReason",
    "stopReason",
)


def kwh(wh: int | None) -> str:
    """Watt-hours as kWh with three decimals, never float noise: 12345 -> "12.345"."""
    return "" if wh is None else f"{Decimal(wh) / 1000:.3f}"


def duration(span: timedelta) -> str:
    seconds = max(int(span.total_seconds()), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {seconds:02d} s"
    return f"{seconds} s"


def _filters(values: Mapping[str, str]) -> dict[str, str]:
    return {name: values.get(name, "").strip() for name in FILTER_FIELDS}


def _filter_of(typed: Mapping[str, str], reads_in: LocalTime) -> SessionFilter:
    state = typed["state"] or None
    source = typed["source"] or None
    if state not in (None, "active", "completed"):
        raise InvalidInput("choose in progress or completed", field="state")
    if source not in (None, "ocpp", "meter"):
        raise InvalidInput("choose OCPP stations or meters", field="source")
    return SessionFilter(
        site_id=typed["site"] or None,
        station_id=typed["station"] or None,
        id_tag=typed["id_tag"] or None,
        since=local_instant(typed, "since", reads_in),
        until=local_instant(typed, "until", reads_in),
        state=cast(State | None, state),
        source=cast(Source | None, source),
    )


FIELD_NAMES = {"site_id": "site", "station_id": "station", "id_tag": "id_tag"}


async def _list(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    typed = _filters(request.query_params)
    wanted, after = page_of(request, PER_PAGE, key=numbered)
    errors: dict[str, str] = {}
    listed = None
    path = console.url("/sessions")
    times = time_filters(typed, TIME_FIELDS, signed.reads_in, path)
    try:
        where = _filter_of(typed, signed.reads_in)
    except InvalidInput as error:
        errors = {FIELD_NAMES.get(error.field or "", error.field or "state"): error.detail}
        where = None
    errors.update(times.errors)  # a time filter's own words for its field
    async with console.reading() as session:
        company = await companies.get_company(session, signed.caller, signed.caller.company_id)
        if where is not None:
            listed = await session_service.list_sessions(session, signed.caller, wanted, where)
    typed = times.shown
    values = {
        "company": company,
        "items": listed.items if listed else [],
        "filters": typed,
        "time_notes": times.notes,
        "filtered": any(typed.values()),
        "errors": errors,
        "state_choices": STATE_CHOICES,
        "source_choices": SOURCE_CHOICES,
        "now": console.clock.now(),
        "kwh": kwh,
        "duration": duration,
        "after": after,
        "first_url": address(path, **typed),
        "next_url": address(path, **typed, after=listed.next) if listed and listed.next else None,
        "csv_url": address(f"{path}.csv", **typed),
    }
    return render(
        request, "sessions.html", values, status_code=422 if errors else 200, signed=signed, active="sessions"
    )


def _csv_row(view: SessionView, now: datetime) -> Sequence[Cell]:
    return (
        view.transaction_id,
        view.source,
        view.site_id,
        view.station_id,
        view.charge_point_id,
        view.connector_id,
        view.id_tag,
        "active" if view.active else "completed",
        view.started_at,
        view.stopped_at,
        int(view.duration(now).total_seconds()),
        wh_to_kwh(view.meter_start_wh),
        None if view.meter_stop_wh is None else wh_to_kwh(view.meter_stop_wh),
        None if view.energy_wh is None else wh_to_kwh(view.energy_wh),
        view.start_reason,
        view.stop_reason,
    )


async def _export(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    where = _filter_of(_filters(request.query_params), signed.reads_in)  # a bad filter: the 422 page, not a file
    now = console.clock.now()
    exported = session_service.export_sessions(console.reading, signed.caller, where)

    async def rows() -> AsyncIterator[Sequence[Cell]]:
        async for view in exported:
            yield _csv_row(view, now)

    name = f"sessions-{now.strftime('%Y%m%dT%H%M%SZ')}.csv"
    return download(csv_chunks(CSV_HEADER, rows(), reads_in=signed.reads_in), name, "text/csv; charset=utf-8")


T = TypeVar("T")


def spread(items: Sequence[T], most: int) -> list[T]:
    """At most `most` of `items`, evenly spread, the first and the last always among them."""
    if len(items) <= most:
        return list(items)
    last = len(items) - 1
    return [items[round(index * last / (most - 1))] for index in range(most)]


def _chart(view: SessionView, found: SessionSamples, reads_in: LocalTime) -> Markup:
    samples = found.samples
    if len(samples) < 2:
        return Markup()
    delivered = samples[-1].delivered_wh
    first, last = samples[0].at, samples[-1].at
    return line_chart(
        [(sample.at, sample.delivered_wh / 1000) for sample in spread(samples, CHART_POINTS)],
        "kWh",
        title=f"Energy delivered by session {view.transaction_id} over time",
        description=(
            f"{len(samples)} meter readings from {reads_in.text(first)} to {reads_in.text(last)} ({reads_in.name}); "
            f"{kwh(delivered)} kWh delivered at the last. The table below gives the numbers."
        ),
        reads_in=reads_in,
        name="energy",
    )


def _power(sample: EnergySample) -> str:
    return "" if sample.power_w is None else f"{sample.power_w / 1000:.2f}"


async def _show(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    raw = request.path_params["transaction_id"]
    if not raw.isdigit() or len(raw) > 10:
        raise NotFound("transaction", raw)
    now = console.clock.now()
    async with console.reading() as session:
        view = await session_service.get_session(session, signed.caller, int(raw))
        company = await companies.get_company(session, signed.caller, signed.caller.company_id)
        timeline = await session_service.session_timeline(session, signed.caller, view, now)
        samples = await session_service.session_samples(session, view)
        site_names = await sites.site_names(session, signed.caller, [view.site_id])
    log_url = address(
        console.url(f"/stations/{view.station_id}/messages"),
        since=signed.reads_in.iso(timeline.since, timespec="seconds"),
        until=signed.reads_in.iso(timeline.until + timedelta(seconds=1), timespec="seconds"),
    )
    values: dict[str, Any] = {
        "company": company,
        "session": view,
        "site_name": site_names.get(view.site_id, view.site_id),
        "timeline": timeline,
        "samples": samples,
        "chart": _chart(view, samples, signed.reads_in),
        "table_samples": spread(samples.samples, TABLE_SAMPLES),
        "power": _power,
        "log_url": log_url,
        "now": now,
        "kwh": kwh,
        "duration": duration,
        "arrows": ARROWS,
    }
    return render(request, "session.html", values, signed=signed, active="sessions")


def routes() -> list[Route]:
    return [
        Route("/sessions", page(_list), methods=["GET"]),
        Route("/sessions.csv", page(_export), methods=["GET"]),
        Route("/sessions/{transaction_id}", page(_show), methods=["GET"]),
    ]
