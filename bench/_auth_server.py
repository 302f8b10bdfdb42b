"""The server half of bench_auth: chargenet's real app plus two baselines, in one uvicorn process (one core).

Baselines: `/bench/token` signs the same RFC 9068 JWT with the same key in a bare Starlette endpoint (no
parsing, no client authentication, no database), and `/api/v1/bench/charge-points` is the same FastAPI route as
`/api/v1/charge-points` without the bearer check.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
from datetime import UTC, datetime
from typing import Annotated

import uvicorn
from fastapi import FastAPI, Query
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from chargenet.api.dependencies import Context, Directory
from chargenet.api.pagination import PageParams
from chargenet.api.routes.charge_points import RENDERED
from chargenet.app import create_app, open_context
from chargenet.auth.permissions import Grant, Permissions
from chargenet.collector import freeze_startup_heap, tune_for_serving
from chargenet.config import load_settings
from chargenet.domain.scopes import Scope
from chargenet.edge.transport import StationWebSocketProtocol
from chargenet.services import charge_points
from chargenet.services.callers import ApiApplication
from chargenet.services.charge_points import ChargePointView
from chargenet.services.pages import Page


async def main(data_dir: str, port: int, company_id: str, database_url: str | None) -> None:
    values: dict[str, object] = {"data_dir": data_dir, "port": port, "log_level": "warning"}
    if database_url:
        values["database_url"] = database_url
    settings = load_settings(values, environ={})
    context = await open_context(settings)
    assert context.auth is not None
    kid, key = context.auth.signing_keys.token_signing_key(datetime.now(UTC))
    from chargenet.auth.tokens import TokenIssuer

    issuer = TokenIssuer(issuer=settings.auth_url, audience=settings.base_url, key=key, kid=kid)
    caller = ApiApplication(
        "app_baseline", Permissions.of(company_id, [Grant(company_id, None, frozenset({Scope.CHARGE_POINTS_READ}))])
    )

    async def baseline_token(_: Request) -> JSONResponse:
        issued = issuer.issue(
            client_id="app_baseline",
            scopes=["charge-points:read"],
            now=datetime.now(UTC),
            jti=secrets.token_urlsafe(16),
            secret_generation=1,
        )
        return JSONResponse({"access_token": issued.access_token, "token_type": "Bearer", "expires_in": 900})

    context.routes.append(Route("/bench/token", baseline_token, methods=["POST"]))
    app = create_app(context)
    # The same FastAPI route as GET /api/v1/charge-points, minus the bearer dependency.
    api = next(r.app for r in app.routes if isinstance(r, Mount) and r.path == "/api/v1")
    assert isinstance(api, FastAPI)

    async def unprotected_charge_points(
        context: Context,
        page: PageParams,
        directory: Directory,
        site_id: Annotated[str | None, Query(alias="siteId", max_length=64)] = None,
    ) -> Response:
        listed = await charge_points.list_charge_points(
            context.store.read_statement, caller, context.edge, page, site_id=site_id, directory=directory
        )
        return RENDERED.response(listed)

    api.add_api_route(
        "/bench/charge-points", unprotected_charge_points, methods=["GET"], response_model=Page[ChargePointView]
    )
    # As `chargenet serve` configures it: the stations of bench_auth's background connect to this process.
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        ws=StationWebSocketProtocol,
        ws_max_size=settings.ocpp_max_frame,
    )
    freeze_startup_heap()  # as `chargenet serve` does
    try:
        await uvicorn.Server(config).serve()
    finally:
        await context.close()


if __name__ == "__main__":
    tune_for_serving()
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None))
