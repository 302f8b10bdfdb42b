"""What every console view shares: the signed-in operator, the protections a change must pass, rendering, and
the one mapping from chargenet's errors to HTML answers.

A view is `async def view(request, signed) -> Response` wrapped by `page(...)`, which resolves the session
(none: 303 to the sign-in page), refuses a change that fails `protection` (403) or a role too low for it (403),
and hands the view the operator. Views parse, call `chargenet.services`, render; they decide nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from jinja2 import Environment, FileSystemLoader, StrictUndefined, pass_context
from jinja2.runtime import Context
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from chargenet.auth.limiter import FailureLimiter
from chargenet.clock import Clock
from chargenet.console import protection
from chargenet.console.fresh import Fresh
from chargenet.console.live import LiveFeed
from chargenet.domain import operators as rules
from chargenet.domain.local_time import LocalTime, reader_zone
from chargenet.domain.operators import Role
from chargenet.errors import Conflict, Forbidden, InvalidInput, NotFound
from chargenet.keys import CredentialCipher, SecretHasher
from chargenet.outbox import Outbox
from chargenet.ports import StationCommands, WebhookTests
from chargenet.services import console_sessions, overview
from chargenet.services.callers import OperatorCaller
from chargenet.services.operators import Passwords
from chargenet.store.db import Transactions

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
# The overview's figures are reused this long (and dropped at once when this process commits events): counting
# 10,000 stations on every view of the most visited page cost more than the rest of the console's pages together.
OVERVIEW_FRESH_SECONDS = 5.0

NAVIGATION = (
    ("overview", "Overview", ""),
    ("sites", "Sites", "/sites"),
    ("connectors", "Live status", "/connectors"),
    ("sessions", "Sessions", "/sessions"),
    ("applications", "Applications", "/applications"),
    ("groups", "Groups", "/groups"),
    ("webhooks", "Webhooks", "/webhooks"),
    ("meters", "Meters", "/meters"),
    ("operators", "Operators", "/operators"),
    ("alerts", "Alerts", "/alerts"),
    ("audit", "Audit log", "/audit"),
)


def login_limiter() -> FailureLimiter:
    """Rule 4 of chargenet.domain.operators, with the authorization server's sliding-window limiter."""
    return FailureLimiter(
        max_per_client=rules.MAX_FAILURES_PER_ACCOUNT,
        max_per_address=rules.MAX_FAILURES_PER_ADDRESS,
        window=rules.FAILURE_WINDOW.total_seconds(),
    )


@dataclass
class Console:
    """What the console needs from the process: narrow parts, not the whole application context."""

    transaction: Transactions
    clock: Clock
    public_url: str
    passwords: Passwords
    secret_hasher: SecretHasher | None = None  # client secrets of applications (keyed hash, keys folder)
    credential_cipher: CredentialCipher | None = None  # upstream passwords, webhook credentials (keys folder)
    stations: StationCommands | None = None  # which stations hold a connection to this process
    limiter: FailureLimiter = field(default_factory=login_limiter)
    # Units of work that only read (`Store.read`): a page view does not queue behind the stations' writes.
    read: Transactions | None = None
    webhook_allow_private: bool = False  # CHARGENET_WEBHOOK_ALLOW_PRIVATE
    event_retention_days: int = 7  # CHARGENET_EVENT_RETENTION_DAYS: how far back a webhook's events can be recovered
    webhook_tests: WebhookTests | None = None  # sends test events (installed with the lanes)
    live: LiveFeed | None = None  # the process's live connector feed (`console.live`); None: pages without it
    outbox: Outbox | None = None  # publishes what a change raises (a meter deleted mid-session stops it)
    upload_url: str = ""  # CHARGENET_UPLOAD_URL: where stations upload the logs asked of them ("": the public URL)
    data_dir: Path | None = None  # where the logs stations uploaded are kept (None: no downloads)
    grid_meter_silent_s: int = 5  # CHARGENET_GRID_METER_SILENT_S: when a grid meter counts as silent

    def reading(self) -> AbstractAsyncContextManager[AsyncSession]:
        """A unit of work for reading only; `transaction` where the console was given no separate reads."""
        return (self.read or self.transaction)()

    def __post_init__(self) -> None:
        self.origin = protection.origin_of(self.public_url)
        self.cookies = protection.CookiePolicy.for_public_url(self.public_url)
        self.base = self.cookies.path  # the console's path under the public URL, e.g. /console
        self.templates = Environment(
            loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined, trim_blocks=True
        )
        self.templates.filters.update(when=_when, clock=_clock)
        self.overviews: Fresh[overview.Overview] = Fresh(self.clock, OVERVIEW_FRESH_SECONDS)
        self.events = self.outbox or Outbox(self.clock)

    def url(self, path: str = "") -> str:
        return f"{self.base}{path}"


# --- times, in the reader's zone -------------------------------------------------------------------------
# Every template shows an instant through these filters, in `reads_in` (the signed-in operator's zone, else their
# company's): `{{ at | when }}` is date and time (`when(seconds=False)`, `when(millis=True)`), `{{ at | clock }}`
# the time of day alone; either carries the UTC offset on the day of a DST change (`domain.local_time`).


def reads_in_of(context: Context) -> LocalTime:
    found = context.get("reads_in")
    return found if isinstance(found, LocalTime) else reader_zone(None, None)


@pass_context
def _when(context: Context, instant: datetime, *, seconds: bool = True, millis: bool = False) -> str:
    return reads_in_of(context).text(instant, seconds=seconds, millis=millis)


@pass_context
def _clock(context: Context, instant: datetime) -> str:
    return reads_in_of(context).text(instant, date_part=False)


@dataclass(frozen=True, slots=True)
class Signed:
    caller: OperatorCaller
    session_hash: str
    csrf_token: str
    reads_in: LocalTime  # the zone this operator reads times in


class SignInRequired(Exception):
    pass


def console_of(request: Request) -> Console:
    console: Console = request.app.state.console
    return console


def client_address(request: Request) -> str | None:
    # uvicorn has already replaced it with the forwarded address when the proxy is trusted (--forwarded-allow-ips).
    return request.client.host if request.client else None


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


async def submitted(request: Request) -> dict[str, str]:
    """The form fields of a POST (the last value of each), as plain strings."""
    form = await request.form()
    return {key: value for key, value in form.items() if isinstance(value, str)}


async def version_of(request: Request) -> int | None:
    """The version of the object the submitted form was rendered from (its hidden `version` field), so the
    service can refuse the change if the object moved on meanwhile; None when the form carries none."""
    value = (await submitted(request)).get("version", "")
    return int(value) if value.isdigit() and len(value) <= 9 else None


def render(
    request: Request,
    template: str,
    context: Mapping[str, Any] | None = None,
    *,
    status_code: int = 200,
    signed: Signed | None = None,
    active: str | None = None,
) -> HTMLResponse:
    console = console_of(request)
    # A fragment rendered without the frame (`signed` None) still reads in the signed-in operator's zone.
    reader: Signed | None = signed or getattr(request.state, "signed", None)
    reads_in = reader.reads_in if reader is not None else reader_zone(None, None)
    values = {
        "base": console.base,
        "reads_in": reads_in,
        "tz": reads_in.name,
        "navigation": NAVIGATION,
        "active": active,
        "signed": signed,
        "csrf_token": signed.csrf_token if signed else None,
        "Role": Role,
        "errors": {},
        **(context or {}),
    }
    html = console.templates.get_template(template).render(values)
    return HTMLResponse(html, status_code=status_code)


View = Callable[[Request, Signed], Awaitable[Response]]


def page(view: View, *, role: Role = Role.VIEWER) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a view: signed in, protected when it may change state, and held to `role` at least."""

    async def endpoint(request: Request) -> Response:
        console = console_of(request)
        signed = await resume(request)
        if signed is None:
            raise SignInRequired()
        if request.method not in protection.SAFE_METHODS:
            protection.check_origin(request.method, request.headers, console.origin)
            given = request.headers.get(protection.CSRF_HEADER)
            if given is None:
                given = (await submitted(request)).get(protection.CSRF_FIELD)
            protection.check_csrf_token(signed.csrf_token, given)
        # Known before the role check, so a refusal is shown in the console's frame, with its navigation.
        request.state.signed = signed
        if not signed.caller.role.includes(role):
            raise Forbidden(f"this needs the {role.value} role; you are {signed.caller.role.value}")
        return await view(request, signed)

    return endpoint


async def resume(request: Request) -> Signed | None:
    console = console_of(request)
    token = request.cookies.get(protection.COOKIE_NAME)
    if not token:
        return None
    now = console.clock.now()
    async with console.reading() as session:
        resumed, stale = await console_sessions.look_up(session, token, now=now)
    if stale:
        async with console.transaction() as session:
            resumed = await console_sessions.resume(session, token, now=now)
    if resumed is None:
        return None
    caller = replace(resumed.caller, address=client_address(request))
    return Signed(caller, resumed.id_hash, resumed.csrf_token, resumed.reads_in)


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def go_to(request: Request, url: str) -> Response:
    """After a change, show `url`: a 303 for a plain form; for htmx, which would follow a redirect inside the
    page and swap in the whole next page, `HX-Redirect`, so the browser loads it as a page."""
    if is_htmx(request):
        return Response(status_code=200, headers={"HX-Redirect": url})
    return redirect(url)


def safe_next(console: Console, value: str | None) -> str:
    """Where to go after signing in: only a path inside the console, never another site (open redirect)."""
    if value:
        parts = urlsplit(value)
        if not parts.scheme and not parts.netloc and value.startswith(console.base + "/") and "\\" not in value:
            return value
    return console.url("/")


# --- the one mapping from errors to answers -------------------------------------------------------------


def _error_page(request: Request, status: int, title: str, message: str) -> Response:
    signed: Signed | None = getattr(request.state, "signed", None)
    response = render(request, "error.html", {"title": title, "message": message}, status_code=status, signed=signed)
    return response


async def sign_in_required(request: Request, _: Exception) -> Response:
    console = console_of(request)
    target = console.url("/login")
    if request.method == "GET":
        target += "?next=" + quote(request.url.path + (f"?{request.url.query}" if request.url.query else ""), safe="")
    response = redirect(target)
    response.delete_cookie(protection.COOKIE_NAME, path=console.cookies.path)
    if is_htmx(request):
        # A fragment request cannot follow to a whole page; htmx loads this address instead.
        response.headers["HX-Redirect"] = target
    return response


async def refused(request: Request, exc: Exception) -> Response:
    reason = exc.reason if isinstance(exc, protection.RequestRefused) else str(exc)
    log.warning("console request refused", extra={"fields": {"path": request.url.path, "reason": reason}})
    return _error_page(
        request, 403, "Request refused", "The request did not come from this console's own page. Reload and retry."
    )


async def forbidden(request: Request, exc: Exception) -> Response:
    message = exc.message if isinstance(exc, Forbidden) else "You may not do this."
    return _error_page(request, 403, "Not allowed", message)


async def not_found(request: Request, exc: Exception) -> Response:
    return _error_page(request, 404, "Not found", "There is nothing here, or it belongs to another company.")


async def conflict(request: Request, exc: Exception) -> Response:
    message = exc.message if isinstance(exc, Conflict) else "The request conflicts with the current state."
    return _error_page(request, 409, "Not done", message)


async def invalid(request: Request, exc: Exception) -> Response:
    message = exc.message if isinstance(exc, InvalidInput) else "The request is not valid."
    return _error_page(request, 422, "Not valid", message)


async def http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 404:
        return await not_found(request, exc)
    return _error_page(request, status, "Not possible", "This address does not take this kind of request.")


async def internal_error(request: Request, exc: Exception) -> Response:
    log.exception("console view failed", exc_info=exc)
    return _error_page(request, 500, "Something went wrong", "The change was not made. Try again in a moment.")


EXCEPTION_HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    SignInRequired: sign_in_required,
    protection.RequestRefused: refused,
    Forbidden: forbidden,
    NotFound: not_found,
    Conflict: conflict,
    InvalidInput: invalid,
    HTTPException: http_error,
    Exception: internal_error,
}
