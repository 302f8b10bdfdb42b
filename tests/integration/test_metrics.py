"""`GET /metrics` of the real app over ASGI: Prometheus conventions, the process and build, HTTP requests by route
template and status class, and the store's units of work."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet import __version__
from chargenet.app import AppContext
from chargenet.clock import ManualClock
from chargenet.console.pages import STATIC
from chargenet.webhooks import install as webhooks_install
from tests.support.app import app_context, asgi_client
from tests.support.scrape import Scrape

REQUESTS = "chargenet_http_request_duration_seconds_count"
METRICS_DOC = Path(__file__).parents[2] / "docs" / "metrics.md"


@pytest.fixture
async def context(tmp_path: Path, clock: ManualClock) -> AsyncIterator[AppContext]:
    async with app_context(tmp_path, clock) as context:
        yield context


@pytest.fixture
async def client(context: AppContext) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(context, raise_app_exceptions=False) as client:
        yield client


async def _scrape(client: httpx.AsyncClient) -> Scrape:
    response = await client.get("/metrics")
    assert response.status_code == 200
    return Scrape(response.text)


async def test_every_counter_is_exposed_with_the_total_suffix_and_no_gauge_claims_it(
    client: httpx.AsyncClient,
) -> None:
    scrape = await _scrape(client)
    counters = [f for f in scrape.families if f.type == "counter"]
    totals = {"chargenet_ocpp_unexpected_transitions", "chargenet_ocpp_message_log_dropped", "process_cpu_seconds"}
    assert totals <= {f.name for f in counters}
    for family in counters:
        assert all(s.name in (f"{family.name}_total", f"{family.name}_created") for s in family.samples), family.name
    assert [f.name for f in scrape.families if f.type == "gauge" and f.name.endswith("_total")] == []


async def test_build_info_names_the_running_version(client: httpx.AsyncClient) -> None:
    scrape = await _scrape(client)
    assert scrape.value("chargenet_build_info", version=__version__) == 1


async def test_process_metrics_are_on_the_registry_the_app_serves(client: httpx.AsyncClient) -> None:
    scrape = await _scrape(client)
    assert (scrape.value("process_resident_memory_bytes") or 0) > 0
    assert scrape.value("process_cpu_seconds_total") is not None
    assert scrape.value("python_info") == 1


async def test_a_request_lands_in_the_histogram_of_its_route_template_and_status_class(
    client: httpx.AsyncClient,
) -> None:
    assert (await client.get("/api/v1/sites/site_x")).status_code == 401
    assert (await client.get("/api/v1/sites/site_y")).status_code == 401
    assert (await client.get("/health/live")).status_code == 200
    scrape = await _scrape(client)
    assert scrape.value(REQUESTS, method="GET", route="/api/v1/sites/{site_id}", status_class="4xx") == 2
    assert scrape.value(REQUESTS, method="GET", route="/health/live", status_class="2xx") == 1


async def test_auth_server_and_console_requests_are_labelled_by_their_templates(client: httpx.AsyncClient) -> None:
    await client.post("/auth/oauth2/token", data={"grant_type": "client_credentials"})
    await client.get("/console/login")
    scrape = await _scrape(client)
    assert scrape.value(REQUESTS, method="POST", route="/auth/oauth2/token", status_class="4xx") == 1
    assert scrape.value(REQUESTS, method="GET", route="/console/login", status_class="2xx") == 1


async def test_paths_no_route_serves_share_one_label_whatever_the_path(client: httpx.AsyncClient) -> None:
    for path in ("/wp-login.php", "/api/v1/no-such-thing/42", "/console/nowhere"):
        assert (await client.get(path)).status_code == 404
    scrape = await _scrape(client)
    assert scrape.value(REQUESTS, method="GET", route="unmatched", status_class="4xx") == 3
    assert not any("wp-login" in value or "no-such-thing" in value for value in scrape.label_values())


async def test_a_static_file_counts_under_its_mount_template(client: httpx.AsyncClient) -> None:
    name = next(p.name for p in sorted(STATIC.iterdir()) if p.is_file())
    assert (await client.get(f"/console/static/{name}")).status_code == 200
    scrape = await _scrape(client)
    assert scrape.value(REQUESTS, method="GET", route="/console/static/{path}", status_class="2xx") == 1


async def test_a_method_http_does_not_define_counts_as_other(client: httpx.AsyncClient) -> None:
    await client.request("BREW", "/health/live")
    scrape = await _scrape(client)
    assert scrape.value(REQUESTS, method="other", route="/health/live", status_class="4xx") == 1


@pytest.mark.expected_traceback("RuntimeError: a bug of ours")
async def test_a_request_that_raises_counts_as_a_server_error(context: AppContext) -> None:
    async def broken(_: Request) -> Response:
        raise RuntimeError("a bug of ours")

    context.routes.append(Route("/broken", broken))
    async with asgi_client(context, raise_app_exceptions=False) as client:
        assert (await client.get("/broken")).status_code == 500
        scrape = await _scrape(client)
    assert scrape.value(REQUESTS, method="GET", route="/broken", status_class="5xx") == 1


async def test_each_unit_of_work_of_the_store_is_timed_by_its_kind(
    context: AppContext, client: httpx.AsyncClient
) -> None:
    before = await _scrape(client)
    async with context.store.transaction():
        pass
    async with context.store.read():
        pass
    after = await _scrape(client)
    name = "chargenet_store_unit_duration_seconds_count"
    for unit in ("transaction", "read"):
        assert (after.value(name, unit=unit) or 0) - (before.value(name, unit=unit) or 0) == 1


async def test_every_metric_a_serving_process_exposes_is_documented(context: AppContext) -> None:
    webhooks_install.install(context)  # what `chargenet serve` adds
    async with asgi_client(context) as client:
        scrape = await _scrape(client)
    documented = METRICS_DOC.read_text(encoding="utf-8")
    names = {f"{f.name}_total" if f.type == "counter" else f.name for f in scrape.families}
    exposed = {name for name in names if name.startswith("chargenet_") and not name.endswith("_created")}
    assert len(exposed) > 20
    assert sorted(name for name in exposed if f"`{name}`" not in documented) == []
