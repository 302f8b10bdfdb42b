"""What `chargenet serve` and `chargenet demo` run: uvicorn over the app, with every part installed.

Imported only when one of them runs (their options are in `chargenet.cli.serve`): no other command line loads the
server, the API or the edge."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
from types import FrameType

import uvicorn

from chargenet.app import AppContext, create_app, open_context
from chargenet.cli.common import run_with_context, settings_flags
from chargenet.collector import freeze_startup_heap, tune_for_serving
from chargenet.config import Settings, load_settings
from chargenet.edge.tls import station_context_factory
from chargenet.edge.transport import StationWebSocketProtocol
from chargenet.observability.logging import configure_logging
from chargenet.services import applications, companies, demo_access, sites
from chargenet.services.callers import OPERATOR
from chargenet.services.operators import Passwords
from chargenet.services.pages import every_page
from chargenet.simulators.demo import add_demo_partner
from chargenet.webhooks.install import install as install_webhooks

log = logging.getLogger(__name__)


DEMO_COMPANY = "Demo Charging Company"
DEMO_SITE = "Demo Site"


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, context: AppContext) -> None:
        super().__init__(config)
        self._context = context

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for hook in self._context.on_stopping:
            hook()
        await super().shutdown(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # uvicorn re-raises the signal after shutting down, so the process would die by it. The stop was
        # graceful and complete, so chargenet exits 0 instead, which is what supervisors expect.
        self._captured_signals.clear()


def run_serve(args: argparse.Namespace) -> None:
    settings = load_settings(settings_flags(args))
    configure_logging(settings.log_format, settings.log_level)
    tune_for_serving()
    asyncio.run(serve(settings, migrate=args.migrate))


async def serve(settings: Settings, *, migrate: bool = False, context: AppContext | None = None) -> None:
    context = context or await open_context(settings, migrate=migrate)
    install_webhooks(context)
    try:
        config = uvicorn.Config(
            create_app(context),
            host=settings.host,
            port=settings.port,
            ssl_certfile=str(settings.tls_cert) if settings.tls_cert else None,
            ssl_keyfile=str(settings.tls_key) if settings.tls_key else None,
            # Asks stations for a client certificate, and takes any: the edge checks it (`edge.tls`).
            ssl_context_factory=station_context_factory if settings.tls_cert else None,
            proxy_headers=settings.forwarded_allow_ips is not None,
            forwarded_allow_ips=settings.forwarded_allow_ips,
            log_config=None,
            access_log=False,
            ws=StationWebSocketProtocol,
            ws_max_size=settings.ocpp_max_frame,
            timeout_graceful_shutdown=10,
            lifespan="on",
        )
        freeze_startup_heap()
        log.info("serving", extra={"fields": {"url": settings.public_url, "database": context.store.dialect}})
        await _Server(config, context).serve()
    finally:
        await context.close()


def run_demo(args: argparse.Namespace) -> None:
    if args.data_dir is None and not os.environ.get("CHARGENET_DATA_DIR"):
        args.data_dir = ".demo"
    if args.webhook_allow_private is None:
        args.webhook_allow_private = True
    settings = load_settings(settings_flags(args))
    configure_logging(settings.log_format, settings.log_level)
    tune_for_serving()

    async def setup(ctx: AppContext) -> tuple[str, str, applications.Credentials, tuple[str, str]]:
        async with ctx.store.transaction() as session:
            known = await every_page(lambda page: companies.list_companies(session, OPERATOR, page))
            company = next((c for c in known if c.name == DEMO_COMPANY), None)
            if company is None:
                company = await companies.create_company(session, OPERATOR, name=DEMO_COMPANY, now=ctx.clock.now())
            listed = await every_page(lambda page: sites.list_sites(session, OPERATOR, page, company_id=company.id))
            site = next((s for s in listed if s.name == DEMO_SITE), None)
            if site is None:
                site = await sites.create_site(
                    session,
                    OPERATOR,
                    ctx.keys.credential_cipher(),
                    company_id=company.id,
                    name=DEMO_SITE,
                    now=ctx.clock.now(),
                )
            partner = await demo_access.ensure_demo_application(
                session, ctx.keys.secret_hasher(), company_id=company.id, now=ctx.clock.now()
            )
        operator = await demo_access.ensure_demo_operator(
            ctx.store.transaction, Passwords(), company_id=company.id, now=ctx.clock.now()
        )
        return company.id, site.id, partner, operator

    company_id, site_id, partner, (operator_email, operator_password) = run_with_context(args, setup)
    sys.stdout.write(
        "\nchargenet demo\n"
        f"  data folder     {settings.data_dir}\n"
        f"  company         {company_id} ({DEMO_COMPANY})\n"
        f"  site            {site_id} ({DEMO_SITE})\n"
        f"  health          curl {settings.public_url}/health\n"
        f"  API reference   {settings.base_url}/docs\n"
        f"  console         {settings.public_url}/console/\n"
        f"  console sign-in {operator_email} / {operator_password} (owner; a new password on every start)\n"
        f"  partner app     {partner.client_id} (secret shown below, new on every start)\n"
        f"  list charge points as the partner:\n    {demo_access.curl_command(settings.public_url, partner)}\n\n"
    )
    sys.stdout.flush()

    async def run_demo() -> None:
        from chargenet.simulators import fleet_demo, grid_demo, meter_demo

        context = await open_context(settings)
        try:
            fleet = await fleet_demo.install(context, site_id)
            sys.stdout.write(f"  upstream CPO    {fleet.central.url} (simulated)\n")
            sys.stdout.write(f"  stations        {fleet.described()}\n")
            grid = await grid_demo.install(context, site_id, fleet.stations_draw_a)
            sys.stdout.write(f"  grid meter      {grid.described()}\n")
            await meter_demo.install(context, site_id)
            partner_url = await add_demo_partner(context, site_id)
            sys.stdout.write(f"  partner         {partner_url} (prints every verified webhook event)\n")
        except BaseException:
            await context.close()
            raise
        await serve(settings, context=context)

    asyncio.run(run_demo())
