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


async def _overview(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    company_id = signed.caller.company_id
    local = signed.reads_in

    async def compute() -> overview.Overview:
        async with console.reading() as session:
            return await overview.company_overview(session, company_id, now=console.clock.now(), local=local)

    # Kept per company and zone: two operators of one company reading in two zones have two sets of days.
    figures, as_of = await console.overviews.get(f"{company_id} {local.name}", compute)
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
            title=f"Energy delivered per day ({local.name} days), the last {len(days)} days, in kWh",
            unit="kWh",
            height=180,
            label_every=7,
        ),
        # The day's bounds as instants with their offsets: a day of a DST change has a start and an end whose
        # offsets differ, and the sessions list reads each one exactly.
        "day_url": lambda day: address(
            sessions,
            since=local.iso(day.since, timespec="seconds"),
            until=local.iso(day.until, timespec="seconds"),
            state="completed",
        ),
        "kwh": kwh,
        "upstream_down": upstream_down,
    }
    return render(request, "overview.html", values, signed=signed, active="overview")


def routes() -> list[Route]:
    return [Route("/", page(_overview), methods=["GET"])]
