"""`chargenet serve`, `chargenet migrate` and `chargenet demo`: their options, and the functions that run them.

What serving takes (uvicorn, the app, every part) is in `chargenet.cli.server`, imported when `serve` or `demo`
runs: building this parser (`--help`, the completion script) loads none of it.
"""

from __future__ import annotations

import argparse

from chargenet.cli.common import add_store_flags, emit, settings_flags


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
        "--certificate-renewal-days",
        dest="certificate_renewal_days",
        help="ask a station for a new CSR this many days before its certificate expires (default 30, env "
        "CHARGENET_CERTIFICATE_RENEWAL_DAYS)",
    )
    group.add_argument(
        "--upload-url",
        dest="upload_url",
        help="the base URL stations upload logs to, https or http on loopback (default: the public URL, env "
        "CHARGENET_UPLOAD_URL)",
    )
    group.add_argument(
        "--log-retention-days",
        dest="log_retention_days",
        help="days a station's uploaded log is kept (default 30, env CHARGENET_LOG_RETENTION_DAYS)",
    )
    group.add_argument(
        "--grid-meter-silent",
        dest="grid_meter_silent_s",
        help="seconds without an answer after which a grid meter is silent and its circuit falls back to its limit "
        "(default 5, env CHARGENET_GRID_METER_SILENT_S)",
    )
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
    from chargenet.cli import server

    server.run_serve(args)


def _demo(args: argparse.Namespace) -> None:
    from chargenet.cli import server

    server.run_demo(args)


def _migrate(args: argparse.Namespace) -> None:
    import asyncio

    from chargenet.config import load_settings
    from chargenet.store import schema
    from chargenet.store.db import Store

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
