"""`chargenet admin webhook ...` (with `test`, `deliveries`, `recover` and `rotate-credentials`) and `chargenet admin
deadletter ...`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from chargenet.cli.admin import NOUNS
from chargenet.cli.common import (
    add_verb,
    emit,
    emit_views,
    in_read,
    in_transaction,
    instant,
    read_every_item,
    run_with_context,
    show,
)
from chargenet.cli.secret_options import add_secret_option
from chargenet.errors import InvalidInput
from chargenet.webhooks.outbound_auth import AuthType, OutboundAuth, TokenAuthMethod, build_auth

if TYPE_CHECKING:
    from chargenet.context import AppContext
    from chargenet.services.webhook_deliveries import DeliveryView
    from chargenet.services.webhooks import WebhookView

# The signature algorithms and formats (`webhooks.signing`'s SignatureAlgorithm and SignatureFormat), written out so
# that building the parser imports no signing code; a test holds them equal.
ALGORITHMS = ["ed25519", "rsa-pss-sha512", "rsa-pss-sha256"]
SIGNATURE_FORMATS = ["rfc9421", "legacy"]

_AUTH_FIELDS = ("username", "password", "token", "token_url", "client_id", "client_secret", "token_scope")


def register(nouns: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    noun = nouns.add_parser("webhook", help=NOUNS["webhook"][1])
    verbs = noun.add_subparsers(dest="verb", metavar="VERB", required=True)

    create = add_verb(verbs, "create", "create a webhook", _create)
    create.add_argument("--site", required=True, dest="site_id", metavar="ID")
    create.add_argument("--url", required=True)
    create.add_argument("--events", required=True, help="comma-separated event types")
    _add_auth_flags(create)
    create.add_argument("--alg", choices=ALGORITHMS, default="ed25519")
    create.add_argument("--signature-format", dest="signature_format", choices=SIGNATURE_FORMATS, default="rfc9421")
    _add_care_flags(create)

    update = add_verb(verbs, "update", "change a webhook", _update)
    update.add_argument("webhook_id", metavar="WEBHOOK_ID")
    update.add_argument("--url")
    update.add_argument("--events", help="comma-separated event types (a dropped type's lane is deleted)")
    _add_auth_flags(update, default=None)
    update.add_argument("--alg", choices=ALGORITHMS)
    update.add_argument("--signature-format", dest="signature_format", choices=SIGNATURE_FORMATS)
    _add_care_flags(update)
    update.add_argument("--no-headers", dest="no_headers", action="store_true", help="remove every custom header")
    update.add_argument(
        "--no-filter", dest="no_filter", action="store_true", help="take the events of every station again"
    )

    for verb, enabled in (("enable", True), ("disable", False)):
        parser = add_verb(verbs, verb, f"{verb} a webhook", _set_enabled)
        parser.add_argument("webhook_id", metavar="WEBHOOK_ID")
        parser.set_defaults(enabled=enabled)
    add_verb(verbs, "delete", "delete a webhook with its lanes and dead letters", _delete).add_argument(
        "webhook_id", metavar="WEBHOOK_ID"
    )
    add_verb(verbs, "list", "list webhooks", _list).add_argument("--site", dest="site_id", metavar="ID")
    add_verb(verbs, "show", "show a webhook and its lanes", _show).add_argument("webhook_id", metavar="WEBHOOK_ID")
    add_verb(verbs, "test", "send one WebhookTest event now (no retries) and show the attempt", _test).add_argument(
        "webhook_id", metavar="WEBHOOK_ID"
    )
    deliveries = add_verb(verbs, "deliveries", "the delivery log: every attempt, newest first", _deliveries)
    deliveries.add_argument("webhook_id", metavar="WEBHOOK_ID")
    deliveries.add_argument("--event-type", dest="event_type", metavar="TYPE")
    deliveries.add_argument("--event", dest="event_id", metavar="EVENT_ID")
    deliveries.add_argument("--outcome", choices=["delivered", "failed"])
    deliveries.add_argument("--limit", type=int, default=50)

    recover = add_verb(
        verbs, "recover", "send a time window's events again, in lane order, with their original eventIds", _recover
    )
    recover.add_argument("webhook_id", metavar="WEBHOOK_ID")
    recover.add_argument("--since", required=True, type=instant, help="start (included), ISO 8601 with offset")
    recover.add_argument("--until", required=True, type=instant, help="end (excluded), not in the future")
    rotate = add_verb(
        verbs,
        "rotate-credentials",
        "use new credentials at once; retry a 401/403 once with the current ones until --overlap-until",
        _rotate,
    )
    rotate.add_argument("webhook_id", metavar="WEBHOOK_ID")
    _add_auth_flags(rotate, default=None)
    rotate.add_argument("--overlap-until", dest="overlap_until", required=True, type=instant)

    dead = nouns.add_parser("deadletter", help=NOUNS["deadletter"][1])
    dead_verbs = dead.add_subparsers(dest="verb", metavar="VERB", required=True)
    listing = add_verb(dead_verbs, "list", "list dead letters waiting for replay", _dead_list)
    listing.add_argument("--webhook", required=True, dest="webhook_id", metavar="ID")
    listing.add_argument("--all", dest="include_replayed", action="store_true", help="include replayed ones")
    listing.add_argument("--limit", type=int)  # default: the use case's largest page (webhooks.MAX_PAGE)
    replay = add_verb(dead_verbs, "replay", "send dead letters again (all, or one event)", _dead_replay)
    replay.add_argument("--webhook", required=True, dest="webhook_id", metavar="ID")
    replay.add_argument("event_id", nargs="?", metavar="EVENT_ID")


def _add_auth_flags(parser: argparse.ArgumentParser, default: str | None = "none") -> None:
    group = parser.add_argument_group("delivery auth")
    group.add_argument("--auth", choices=[a.value for a in AuthType], default=default)
    group.add_argument("--username", metavar="U")
    add_secret_option(group, "--password", metavar="P", help="Basic auth password")
    add_secret_option(group, "--token", metavar="T", help="static token, sent as `Authorization: Token T`")
    group.add_argument("--token-url", dest="token_url", metavar="URL")
    group.add_argument("--client-id", dest="client_id", metavar="ID")
    add_secret_option(group, "--client-secret", metavar="S", help="OAuth 2.0 client secret")
    group.add_argument(
        "--token-auth-method", dest="token_auth_method", choices=[m.value for m in TokenAuthMethod], default="basic"
    )
    group.add_argument("--token-scope", dest="token_scope", metavar="S")


def _add_care_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("custom headers and filter")
    group.add_argument(
        "--header",
        dest="headers",
        action="append",
        metavar="'NAME: VALUE'",
        help="a custom request header (repeat for more; replaces them all on update); not signed",
    )
    group.add_argument(
        "--station", dest="stations", action="append", metavar="ID", help="only events of this station (repeat)"
    )
    group.add_argument(
        "--charge-point",
        dest="charge_points",
        action="append",
        metavar="ID",
        help="only events of this charge point (repeat)",
    )


def _headers(args: argparse.Namespace) -> list[tuple[str, str]] | None:
    from chargenet.domain.webhook_headers import parse_header_line

    if getattr(args, "no_headers", False):
        return []
    return None if args.headers is None else [parse_header_line(line) for line in args.headers]


def _filter(args: argparse.Namespace) -> tuple[list[str] | None, list[str] | None]:
    if getattr(args, "no_filter", False):
        return [], []
    if args.stations is None and args.charge_points is None:
        return None, None
    return args.stations or [], args.charge_points or []


def _auth(args: argparse.Namespace) -> OutboundAuth | None:
    if args.auth is None:
        if any(getattr(args, name) for name in _AUTH_FIELDS):
            raise InvalidInput("give --auth with the credentials it needs", field="auth")
        return None
    return build_auth(
        AuthType(args.auth),
        username=args.username,
        password=args.password,
        token=args.token,
        token_url=args.token_url,
        client_id=args.client_id,
        client_secret=args.client_secret,
        token_auth_method=TokenAuthMethod(args.token_auth_method),
        scope=args.token_scope,
    )


def _create(args: argparse.Namespace) -> None:
    from chargenet.services import webhooks
    from chargenet.services.callers import OPERATOR
    from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat

    async def action(ctx: AppContext) -> WebhookView:
        auth = _auth(args)
        assert auth is not None
        stations, charge_points = _filter(args)
        return await webhooks.create_webhook(
            ctx.store.transaction,
            OPERATOR,
            ctx.keys.credential_cipher(),
            site_id=args.site_id,
            url=args.url,
            event_types=[args.events],
            auth=auth,
            algorithm=SignatureAlgorithm(args.alg),
            signature_format=SignatureFormat(args.signature_format),
            headers=_headers(args) or (),
            stations=stations or (),
            charge_points=charge_points or (),
            now=ctx.clock.now(),
            allow_private=ctx.settings.webhook_allow_private,
        )

    view = run_with_context(args, action)
    emit(args, {"id": view.id}, f"created webhook {view.id} for site {view.site_id}")


def _update(args: argparse.Namespace) -> None:
    from chargenet.services import webhooks
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered
    from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat

    async def action(ctx: AppContext) -> WebhookView:
        stations, charge_points = _filter(args)
        return await webhooks.update_webhook(
            ctx.store.transaction,
            OPERATOR,
            ctx.keys.credential_cipher(),
            args.webhook_id,
            now=ctx.clock.now(),
            allow_private=ctx.settings.webhook_allow_private,
            url=args.url,
            event_types=[args.events] if args.events else None,
            auth=_auth(args),
            algorithm=SignatureAlgorithm(args.alg) if args.alg else None,
            signature_format=SignatureFormat(args.signature_format) if args.signature_format else None,
            headers=_headers(args),
            stations=stations,
            charge_points=charge_points,
        )

    view = run_with_context(args, action)
    emit(args, rendered(view), f"updated webhook {view.id}")


def _recover(args: argparse.Namespace) -> None:
    from datetime import timedelta

    from chargenet.services import webhook_recovery
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    recovered = in_transaction(
        args,
        lambda ctx, session: webhook_recovery.recover_window(
            session,
            OPERATOR,
            args.webhook_id,
            since=args.since,
            until=args.until,
            now=ctx.clock.now(),
            retention=timedelta(days=ctx.settings.event_retention_days),
        ),
    )
    emit(args, rendered(recovered), f"recovered {recovered.events} event(s) of webhook {args.webhook_id}")


def _rotate(args: argparse.Namespace) -> None:
    from chargenet.services import webhook_rotation
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    async def action(ctx: AppContext) -> WebhookView:
        auth = _auth(args)
        if auth is None:
            raise InvalidInput("give --auth with the new credentials", field="auth")
        return await webhook_rotation.rotate_credentials(
            ctx.store.transaction,
            OPERATOR,
            ctx.keys.credential_cipher(),
            args.webhook_id,
            auth,
            overlap_until=args.overlap_until,
            now=ctx.clock.now(),
            allow_private=ctx.settings.webhook_allow_private,
        )

    view = run_with_context(args, action)
    emit(
        args, rendered(view), f"rotated the credentials of webhook {view.id} (previous ones until {args.overlap_until})"
    )


def _set_enabled(args: argparse.Namespace) -> None:
    from chargenet.services import webhooks
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered

    view = in_transaction(
        args,
        lambda ctx, session: webhooks.set_enabled(
            session, OPERATOR, args.webhook_id, args.enabled, now=ctx.clock.now()
        ),
    )
    emit(args, rendered(view), f"{'enabled' if view.enabled else 'disabled'} webhook {view.id}")


def _delete(args: argparse.Namespace) -> None:
    from chargenet.services import webhooks
    from chargenet.services.callers import OPERATOR

    in_transaction(
        args, lambda ctx, session: webhooks.delete_webhook(session, OPERATOR, args.webhook_id, now=ctx.clock.now())
    )
    emit(args, {"id": args.webhook_id, "deleted": True}, f"deleted webhook {args.webhook_id}")


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import webhooks
    from chargenet.services.callers import OPERATOR

    items = read_every_item(
        args,
        lambda s, page: webhooks.list_webhooks(s, OPERATOR, page, site_id=args.site_id),
    )
    emit_views(args, items, ["id", "siteId", "url", "events", "auth", "enabled"])


def _show(args: argparse.Namespace) -> None:
    from chargenet.services import webhooks
    from chargenet.services.callers import OPERATOR

    show(args, lambda s: webhooks.get_webhook(s, OPERATOR, args.webhook_id))


def _test(args: argparse.Namespace) -> None:
    from chargenet.services import webhook_test_events
    from chargenet.services.callers import OPERATOR
    from chargenet.services.views import rendered
    from chargenet.webhooks import oneshot

    async def action(ctx: AppContext) -> DeliveryView:
        sender = oneshot.standalone(ctx.store, ctx.keys, ctx.clock, allow_private=ctx.settings.webhook_allow_private)
        try:
            return await webhook_test_events.send_test_event(
                ctx.store.transaction, OPERATOR, sender, args.webhook_id, clock=ctx.clock
            )
        finally:
            await sender.aclose()

    attempt = run_with_context(args, action)
    outcome = "delivered" if attempt.delivered else f"failed: {attempt.error}"
    emit(args, rendered(attempt), f"test event {attempt.event_id} to webhook {args.webhook_id}: {outcome}")


def _deliveries(args: argparse.Namespace) -> None:
    from chargenet.services import webhook_deliveries
    from chargenet.services.callers import OPERATOR
    from chargenet.services.pages import PageRequest

    where = webhook_deliveries.DeliveryFilter(
        event_type=args.event_type,
        event_id=args.event_id,
        delivered=None if args.outcome is None else args.outcome == "delivered",
    )
    page = in_read(
        args,
        lambda ctx, session: webhook_deliveries.list_deliveries(
            session, OPERATOR, args.webhook_id, PageRequest.of(args.limit), where=where
        ),
    )
    emit_views(args, page.items, ["at", "eventType", "eventId", "attempt", "status", "error", "durationMs"])


def _dead_list(args: argparse.Namespace) -> None:
    from chargenet.services import webhook_dead_letters, webhooks
    from chargenet.services.callers import OPERATOR
    from chargenet.services.pages import PageRequest

    request = PageRequest.of(webhooks.MAX_PAGE if args.limit is None else args.limit)
    page = in_read(
        args,
        lambda ctx, session: webhook_dead_letters.list_dead_letters(
            session, OPERATOR, args.webhook_id, request, include_replayed=args.include_replayed
        ),
    )
    emit_views(args, page.items, ["id", "eventType", "eventId", "reason", "attempts", "deadAt", "error"])


def _dead_replay(args: argparse.Namespace) -> None:
    from chargenet.services import webhook_dead_letters
    from chargenet.services.callers import OPERATOR

    replayed = in_transaction(
        args,
        lambda ctx, session: webhook_dead_letters.replay_dead_letters(
            session, OPERATOR, args.webhook_id, now=ctx.clock.now(), event_id=args.event_id
        ),
    )
    ids = [d.event_id for d in replayed]
    emit(args, {"replayed": ids}, f"replayed {len(ids)} event(s) of webhook {args.webhook_id}")
