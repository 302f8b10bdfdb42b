"""`chargenet serve`, `chargenet migrate` and `chargenet demo`."""

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
from chargenet.cli.common import add_store_flags, emit, run_with_context, settings_flags
from chargenet.collector import freeze_startup_heap, tune_for_serving
from chargenet.config import Settings, load_settings
from chargenet.edge.transport import StationWebSocketProtocol
from chargenet.observability.logging import configure_logging
from chargenet.services import applications, companies, demo_access, sites
from chargenet.services.callers import OPERATOR
from chargenet.services.operators import Passwords
from chargenet.services.pages import every_page
from chargenet.simulators.demo import add_demo_partner
from chargenet.store import schema
from chargenet.store.db import Store
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


def add_server_flags(parser: argparse.ArgumentParser) -> None:
    add_store_flags(parser)
    group = parser.add_argument_group("server")
    group.add_argument("--host", help="listen address (env CHARGENET_HOST, default 127.0.0.1)")
    group.add_argument("--port", help="listen port (env CHARGENET_PORT, default 8080)")
    group.add_argument("--public-url", dest="public_url", help="address clients use (env CHARGENET_PUBLIC_URL)")
    group.add_argument("--tls-cert", dest="tls_cert", help="PEM certificate for HTTPS/WSS (env CHARGENET_TLS_CERT)")
    group.add_argument("--tls-key", dest="tls_key", help="PEM private key for HTTPS/WSS (env CHARGENET_TLS_KEY)")
    group.add_argument(
        "--forwarded-allow-ips",
        dest="forwarded_allow_ips",
        help="proxies whose X-Forwarded-* headers are trusted (env CHARGENET_FORWARDED_ALLOW_IPS)",
    )
    group.add_argument("--log-format", dest="log_format", help="plain or json (env CHARGENET_LOG_FORMAT)")
    group.add_argument("--log-level", dest="log_level", help="debug, info, warning, error")
    group.add_argument(
        "--no-access-log",
        dest="access_log",
        action="store_const",
        const=False,
        help="no line per HTTP request (env CHARGENET_ACCESS_LOG=0)",
    )
    group.add_argument(
        "--webhook-allow-private",
        dest="webhook_allow_private",
        action="store_const",
        const=True,
        help="allow webhooks to loopback and private addresses (env CHARGENET_WEBHOOK_ALLOW_PRIVATE=1)",
    )
    group.add_argument("--event-retention-days", dest="event_retention_days")
    group.add_argument("--ocpp-max-frame", dest="ocpp_max_frame")
    group.add_argument(
        "--database-pool-size",
        dest="database_pool_size",
        help="PostgreSQL connections this process keeps, and never exceeds (env CHARGENET_DATABASE_POOL_SIZE)",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser("serve", help="run the service (HTTP, WebSocket, workers) on one port")
    add_server_flags(serve)
    serve.add_argument("--migrate", action="store_true", help="upgrade an older store before serving")
    serve.set_defaults(_run=_serve)

    migrate = subparsers.add_parser("migrate", help="upgrade the store to this version's schema")
    add_store_flags(migrate)
    migrate.add_argument("--json", action="store_true")
    migrate.set_defaults(_run=_migrate)

    demo = subparsers.add_parser("demo", help="set up a demo company and site, then serve")
    add_server_flags(demo)
    demo.set_defaults(_run=_demo)


def _serve(args: argparse.Namespace) -> None:
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


def _migrate(args: argparse.Namespace) -> None:
    settings = load_settings(settings_flags(args))

    async def run() -> tuple[str | None, schema.SchemaAction]:
        store = Store(settings.database_url)
        try:
            before = await schema.current_revision(store)
            action = await schema.prepare_schema(store, migrate=True)
            return before, action
        finally:
            await store.dispose()

    before, action = asyncio.run(run())
    head = schema.head_revision()
    emit(
        args,
        {"from": before, "to": head, "action": action.value},
        f"store schema {action.value}: {before or 'empty'} -> {head}",
    )


def _demo(args: argparse.Namespace) -> None:
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
        from chargenet.simulators import fleet_demo, meter_demo

        context = await open_context(settings)
        try:
            fleet = await fleet_demo.install(context, site_id)
            sys.stdout.write(f"  upstream CPO    {fleet.central.url} (simulated; stations DEMO-1 and DEMO-2)\n")
            await meter_demo.install(context, site_id)
            partner_url = await add_demo_partner(context, site_id)
            sys.stdout.write(f"  partner         {partner_url} (prints every verified webhook event)\n")
        except BaseException:
            await context.close()
            raise
        await serve(settings, context=context)

    asyncio.run(run_demo())
