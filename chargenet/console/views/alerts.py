"""Alerts: the list with their history and mail state, acknowledging one (admins and owners, audited), the rules
(everyone reads them, admins and owners change them), the company's mail server (admins and owners), and the
navigation's badge of open alerts, which every page loads as a fragment."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from chargenet.console.forms import address, numbered, page_of, text, version_of, whole_number
from chargenet.console.pages import Signed, console_of, page, redirect, render, submitted
from chargenet.domain import alerts as rules
from chargenet.domain.operators import Role
from chargenet.errors import InvalidInput
from chargenet.services import alert_rules, alerts, mail_settings

PAGE_SIZE = 50


async def _list(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    wanted, after = page_of(request, PAGE_SIZE, key=numbered)
    open_only = request.query_params.get("show") == "open"
    company = signed.caller.company_id
    async with console.reading() as session:
        found = await alerts.list_alerts(session, signed.caller, wanted, company_id=company, open_only=open_only)
        open_count = await alerts.count_open(session, signed.caller, company_id=company)
    show = "open" if open_only else None
    values = {
        "page": found,
        "after": after,
        "open_only": open_only,
        "open_count": open_count,
        "first_url": address(console.url("/alerts"), show=show),
        "next_url": address(console.url("/alerts"), show=show, after=found.next) if found.next else None,
    }
    return render(request, "alerts.html", values, signed=signed, active="alerts")


async def _badge(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    async with console.reading() as session:
        count = await alerts.count_open(session, signed.caller, company_id=signed.caller.company_id)
    return render(request, "_alert_badge.html", {"count": count}, signed=signed)


async def _acknowledge(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    alert_id = request.path_params["alert_id"]
    async with console.transaction() as session:
        await alerts.acknowledge(session, signed.caller, alert_id, now=console.clock.now())
    return redirect(console.url("/alerts"))


def _rule_form(form: dict[str, str]) -> dict[str, str]:
    return {key: form.get(key, "") for key in ("kind", "threshold", "recipients")}


async def _rules(request: Request, signed: Signed, **context: Any) -> Response:
    console = console_of(request)
    async with console.reading() as session:
        found = await alert_rules.list_rules(session, signed.caller, company_id=signed.caller.company_id)
    values = {
        "rules": found,
        "kinds": list(rules.RuleKind),
        "form": {"kind": rules.RuleKind.STATION_OFFLINE.value, "threshold": "10", "recipients": ""},
        "max_threshold": rules.MAX_THRESHOLD_MINUTES,
        **context,
    }
    status = 422 if context.get("errors") else 200
    return render(request, "alert_rules.html", values, status_code=status, signed=signed, active="alerts")


async def _list_rules(request: Request, signed: Signed) -> Response:
    return await _rules(request, signed)


def _threshold(form: dict[str, str]) -> int:
    value = whole_number(form, "threshold", low=-(10**9), high=10**9)
    if value is None:
        raise InvalidInput("give a number of minutes", field="threshold")
    return value


async def _create_rule(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    form = await submitted(request)
    try:
        async with console.transaction() as session:
            await alert_rules.create_rule(
                session,
                signed.caller,
                company_id=signed.caller.company_id,
                kind=text(form, "kind"),
                threshold_minutes=_threshold(form),
                recipients=form.get("recipients", ""),
                now=console.clock.now(),
            )
    except InvalidInput as error:
        return await _rules(request, signed, form=_rule_form(form), errors={error.field or "kind": error.detail})
    return redirect(console.url("/alerts/rules"))


async def _rule(request: Request, signed: Signed, **context: Any) -> Response:
    console = console_of(request)
    async with console.reading() as session:
        shown = await alert_rules.get_rule(session, signed.caller, request.path_params["rule_id"])
    values = {
        "rule": shown,
        "form": {"threshold": str(shown.threshold_minutes), "recipients": ", ".join(shown.recipients)},
        "max_threshold": rules.MAX_THRESHOLD_MINUTES,
        **context,
    }
    status = 422 if context.get("errors") else 200
    return render(request, "alert_rule.html", values, status_code=status, signed=signed, active="alerts")


async def _show_rule(request: Request, signed: Signed) -> Response:
    return await _rule(request, signed)


async def _update_rule(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    form = await submitted(request)
    rule_id = request.path_params["rule_id"]
    try:
        async with console.transaction() as session:
            await alert_rules.update_rule(
                session,
                signed.caller,
                rule_id,
                now=console.clock.now(),
                threshold_minutes=_threshold(form),
                recipients=form.get("recipients", ""),
                expected_version=version_of(form),
            )
    except InvalidInput as error:
        return await _rule(request, signed, form=_rule_form(form), errors={error.field or "threshold": error.detail})
    return redirect(console.url(f"/alerts/rules/{rule_id}"))


def _set_enabled(enabled: bool) -> Any:
    async def view(request: Request, signed: Signed) -> Response:
        console = console_of(request)
        form = await submitted(request)
        rule_id = request.path_params["rule_id"]
        async with console.transaction() as session:
            await alert_rules.set_enabled(
                session,
                signed.caller,
                rule_id,
                enabled=enabled,
                now=console.clock.now(),
                expected_version=version_of(form),
            )
        return redirect(console.url(f"/alerts/rules/{rule_id}"))

    return view


async def _mail_server(request: Request, signed: Signed, **context: Any) -> Response:
    console = console_of(request)
    async with console.reading() as session:
        current = await mail_settings.get_mail_settings(session, signed.caller, company_id=signed.caller.company_id)
    form = {
        "host": current.host if current else "",
        "port": str(current.port) if current else "587",
        "tls": current.tls.value if current else rules.TlsMode.STARTTLS.value,
        "username": (current.username or "") if current else "",
        "sender": current.sender if current else "",
    }
    values = {"current": current, "form": form, "modes": list(rules.TlsMode), **context}
    status = 422 if context.get("errors") else 200
    return render(request, "alert_mail_server.html", values, status_code=status, signed=signed, active="alerts")


async def _show_mail_server(request: Request, signed: Signed) -> Response:
    return await _mail_server(request, signed)


async def _set_mail_server(request: Request, signed: Signed) -> Response:
    console = console_of(request)
    form = await submitted(request)
    assert console.credential_cipher is not None
    try:
        port = whole_number(form, "port", low=1, high=65535)
        if port is None:
            raise InvalidInput("give the server's port", field="port")
        async with console.transaction() as session:
            await mail_settings.set_mail_settings(
                session,
                signed.caller,
                console.credential_cipher,
                company_id=signed.caller.company_id,
                host=text(form, "host"),
                port=port,
                tls=text(form, "tls"),
                sender=form.get("sender", ""),
                username=text(form, "username") or None,
                password=form.get("password") or None,
                clear_password=form.get("clear_password") == "on",
                now=console.clock.now(),
                expected_version=version_of(form),
            )
    except InvalidInput as error:
        kept = {key: form.get(key, "") for key in ("host", "port", "tls", "username", "sender")}
        return await _mail_server(request, signed, form=kept, errors={error.field or "host": error.detail})
    return redirect(console.url("/alerts/mail-server"))


def routes() -> list[Route]:
    admin = Role.ADMIN
    return [
        Route("/alerts", page(_list), methods=["GET"]),
        Route("/alerts/badge", page(_badge), methods=["GET"]),
        Route("/alerts/rules", page(_list_rules), methods=["GET"]),
        Route("/alerts/rules", page(_create_rule, role=admin), methods=["POST"]),
        Route("/alerts/rules/{rule_id}", page(_show_rule), methods=["GET"]),
        Route("/alerts/rules/{rule_id}", page(_update_rule, role=admin), methods=["POST"]),
        Route("/alerts/rules/{rule_id}/disable", page(_set_enabled(False), role=admin), methods=["POST"]),
        Route("/alerts/rules/{rule_id}/enable", page(_set_enabled(True), role=admin), methods=["POST"]),
        Route("/alerts/mail-server", page(_show_mail_server, role=admin), methods=["GET"]),
        Route("/alerts/mail-server", page(_set_mail_server, role=admin), methods=["POST"]),
        Route("/alerts/{alert_id:int}/acknowledge", page(_acknowledge, role=admin), methods=["POST"]),
    ]
