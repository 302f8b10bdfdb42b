"""A page rendered from its views' kept JSON is the page FastAPI renders."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
from fastapi import FastAPI

from chargenet.api.rendering import RenderedPages
from chargenet.services import meters
from chargenet.services.charge_points import ChargePointMeterView, ChargePointView, ConnectorView
from chargenet.services.pages import Page

AT = datetime(2026, 7, 1, 12, 0, 30, 250000, tzinfo=UTC)


def view(charge_point_id: str, status: str | None = "Available") -> ChargePointView:
    return ChargePointView(
        id=charge_point_id,
        site_id="site_1",
        station_id=charge_point_id,
        connectors=[
            ConnectorView(connector_id=1, status=status, error_code="NoError", info='a "quoted" ü', status_at=AT),
            ConnectorView(connector_id=2, status=None, error_code=None, info=None, status_at=None),
        ],
        connection="meter",
        last_heartbeat=AT,
        meters=[
            ChargePointMeterView(
                id="meter_1",
                connector_id=1,
                enabled=True,
                charging=True,
                transaction_id=7,
                last_reading=meters.MeterReading(energy_kwh=12.5, max_current=16.0, power=7000.0, read_at=AT),
            )
        ],
    )


async def fastapi_renders(page: Page[ChargePointView]) -> bytes:
    app = FastAPI()

    @app.get("/page", response_model=Page[ChargePointView])
    async def listed() -> Page[ChargePointView]:
        return page

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        return (await client.get("/page")).content


async def test_a_page_is_rendered_as_fastapi_renders_it() -> None:
    for page in (
        Page[ChargePointView](items=[view("CP-1"), view("CP-2", None)], next="Q1AtMg"),
        Page[ChargePointView](items=[], next=None),
    ):
        assert RenderedPages[ChargePointView]().body(page) == await fastapi_renders(page)


def test_a_view_is_rendered_once_while_it_is_kept() -> None:
    rendered = RenderedPages[ChargePointView]()
    shown = view("CP-1")
    first = rendered.body(Page[ChargePointView](items=[shown], next=None))
    object.__setattr__(shown, "id", "CP-CHANGED")  # a kept view is never changed: were it, its old JSON would show
    assert rendered.body(Page[ChargePointView](items=[shown], next=None)) == first


def test_another_view_is_rendered_anew() -> None:
    rendered = RenderedPages[ChargePointView]()
    rendered.body(Page[ChargePointView](items=[view("CP-1")], next=None))
    assert b"Charging" in rendered.body(Page[ChargePointView](items=[view("CP-1", "Charging")], next=None))


def test_past_its_bound_the_cache_starts_again() -> None:
    rendered = RenderedPages[ChargePointView](kept=2)
    for n in range(5):
        rendered.body(Page[ChargePointView](items=[view(f"CP-{n}")], next=None))
    assert len(rendered._rendered) <= 2
