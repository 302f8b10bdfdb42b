"""A site's power page: what its circuits may carry, what they carry, and how the sessions below share it.

The page reads `services.site_power` (the same figures as `GET /sites/{siteId}/power` and its history) and refreshes
its figures in place every few seconds (htmx polling of `/sites/{id}/power/figures`), as the webhook health does.
The chart is drawn on the server (`charts.lines_chart`), and its figures are also given as a table.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.charts import lines_chart
from chargenet.console.pages import Signed, console_of, page, render
from chargenet.domain.local_time import LocalTime
from chargenet.services import companies, site_power, sites
from chargenet.services.site_power import CircuitHistory

HOURS_SHOWN = 6
TABLE_ROWS = 12  # the chart's figures as text: this many samples, evenly spread

PAUSE_REASONS = {
    "no-room": "no room: the 6 A minimum does not fit on a circuit it uses",
    "safe-default": "its station is offline past the hold, with a safe default of 0 A",
    "waiting-to-resume": "it fits again, but its station was sent a limit too recently",
}
METER_FAULTS = {
    "silent": "is silent",
    "not-a-number": "reads a value that is not a number",
    "negative": "reads a negative current",
    "above-bound": "reads a current no grid connection carries",
    "no-currents": "reads no phase currents",
}


def _chart(history: CircuitHistory, reads_in: LocalTime) -> Markup:
    samples = history.samples
    if len(samples) < 2:
        return Markup()
    return lines_chart(
        [
            ("Limit", [(s.at, s.limit_amps) for s in samples]),
            ("Measured load", [(s.at, s.measured_amps) for s in samples if s.measured_amps is not None]),
            ("Stations' total", [(s.at, s.stations_amps) for s in samples]),
        ],
        "A",
        title=f"Circuit {history.name} over the last {HOURS_SHOWN} hours",
        description=(
            f"{len(samples)} samples, one a minute, from {reads_in.text(samples[0].at)} to "
            f"{reads_in.text(samples[-1].at)} ({reads_in.name}), in amperes on the most loaded phase: the limit, "
            "what the grid meter measured and what the stations drew. The table below gives the numbers."
        ),
        reads_in=reads_in,
        name=f"chart-{history.circuit_id}",
    )


def _spread(items: list[Any], most: int) -> list[Any]:
    if len(items) <= most:
        return items
    last = len(items) - 1
    return [items[round(index * last / (most - 1))] for index in range(most)]


async def _figures_values(request: Request, signed: Signed, site_id: str) -> dict[str, Any]:
    console = console_of(request)
    now = console.clock.now()
    silent_after = timedelta(seconds=console.grid_meter_silent_s)
    async with console.reading() as session:
        site = await sites.get_site(session, signed.caller, site_id)
        view = await site_power.site_power(session, signed.caller, site_id, now=now, silent_after=silent_after)
        history = await site_power.site_power_history(
            session, signed.caller, site_id, since=now - timedelta(hours=HOURS_SHOWN)
        )
    charts = {circuit.circuit_id: _chart(circuit, signed.reads_in) for circuit in history.circuits}
    tables = {circuit.circuit_id: _spread(circuit.samples, TABLE_ROWS) for circuit in history.circuits}
    return {
        "site": site,
        "power": view,
        "charts": charts,
        "tables": tables,
        "names": {circuit.id: circuit.name for circuit in view.circuits},
        "pause_reasons": PAUSE_REASONS,
        "meter_faults": METER_FAULTS,
        "hours": HOURS_SHOWN,
    }


async def _show(request: Request, signed: Signed) -> Response:
    site_id = request.path_params["site_id"]
    values = await _figures_values(request, signed, site_id)
    async with console_of(request).reading() as session:
        values["company"] = await companies.get_company(session, signed.caller, values["site"].company_id)
    values["here_label"] = "Power"
    return render(request, "site_power.html", values, signed=signed, active="sites")


async def _figures(request: Request, signed: Signed) -> Response:
    """The figures alone, for the page to refresh in place (htmx polling)."""
    values = await _figures_values(request, signed, request.path_params["site_id"])
    return render(request, "_site_power.html", values, signed=signed)


def routes() -> list[Route]:
    return [
        Route("/sites/{site_id}/power", page(_show), methods=["GET"]),
        Route("/sites/{site_id}/power/figures", page(_figures), methods=["GET"]),
    ]
