"""The overview: the company at a glance, each figure linked to the filtered list behind it."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.charts import bar_chart
from chargenet.console.forms import address
from chargenet.console.pages import Signed, console_of, page, render
from chargenet.console.views.sessions import kwh
from chargenet.services import overview

DAY = "%Y-%m-%dT%H:%M:%S"  # how the sessions list's time filters read an instant (UTC)


async def _overview(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    company_id = signed.caller.company_id

    async def compute() -> overview.Overview:
        async with console.reading() as session:
            return await overview.company_overview(session, company_id, now=console.clock.now())

    figures, as_of = await console.overviews.get(company_id, compute)
    counts, connectors, days, upstream_down = (
        figures.counts,
        figures.connectors,
        figures.days,
        figures.upstream_down,
    )
    sessions = console.url("/sessions")
    values = {
        "as_of": as_of,
        "counts": counts,
        "connectors": connectors,
        "days": days,
        "today": days[-1],
        "total_wh": sum(day.energy_wh for day in days),
        "chart": bar_chart(
            [(day.day.strftime("%d %b"), day.energy_wh / 1000) for day in days],
            title=f"Energy delivered per day (UTC), the last {len(days)} days, in kWh",
            unit="kWh",
            height=180,
            label_every=7,
        ),
        "day_url": lambda day: address(
            sessions, since=day.since.strftime(DAY), until=day.until.strftime(DAY), state="completed"
        ),
        "kwh": kwh,
        "upstream_down": upstream_down,
    }
    return render(request, "overview.html", values, signed=signed, active="overview")


def routes() -> list[Route]:
    return [Route("/", page(_overview), methods=["GET"])]
