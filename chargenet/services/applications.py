"""Client applications: create under a company, disable, enable, delete, rotate the secret, register the public
keys of private_key_jwt (RFC 7523), set the rate limit of its API requests.

The secret is returned once, by `create_application` and `rotate_secret`, and only its keyed hash is
stored. Every change here reaches tokens already issued through the bearer check, which reloads an
application's state at least every PRINCIPAL_TTL seconds (chargenet.auth.principals).

Applications belong to a company, so only a company-level `applications:write` grant manages them (403
otherwise); an application of another company is reported as not found, exactly like one that does not exist.
The local operator names the company it creates in, and reaches every application.

Public keys are a JWKS document (public keys only) or the URL of one. A URL is checked like a webhook's target
(decisions.md §4): one that resolves now to a private address is refused unless private targets are allowed, and
the authorization server checks the address again at every fetch. Registering keys therefore takes the store's
`transaction` factory: the name is resolved outside any unit of work, and the change is written in a short one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field
from sqlalchemy import delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.auth.client_assertions import public_key_set
from chargenet.auth.errors import InsufficientScope, InvalidClientAssertion
from chargenet.auth.secrets import new_client_id, new_client_secret
from chargenet.domain.rate_limits import MAX_REQUESTS
from chargenet.domain.scopes import Scope
from chargenet.domain.tenants import validate_name
from chargenet.errors import InvalidInput, NotFound
from chargenet.keys import SecretHasher
from chargenet.services import audit
from chargenet.services.callers import Caller, OperatorCaller
from chargenet.services.pages import Page, PageRequest
from chargenet.services.versions import check_version
from chargenet.services.views import Instant, View, like_escaped
from chargenet.store.db import Transactions
from chargenet.store.models import Application, Company, GroupMember
from chargenet.webhooks.outbound_auth import check_url
from chargenet.webhooks.transport import HostUnresolvable, OutboundAddressRefused, Resolver, checked_addresses, resolve


class ApplicationView(View):
    client_id: str = Field(alias="client_id")
    company_id: str
    name: str
    enabled: bool
    group_ids: list[str]
    created_at: Instant
    version: int
    # The public keys of private_key_jwt: the registered JWKS document, or the URL it is read from.
    jwks: dict[str, Any] | None = None
    jwks_url: str | None = None
    # API requests a minute the application may make; None: the default (domain/rate_limits.py, DEFAULT_REQUESTS).
    rate_limit: int | None = None


class Credentials(View):
    """An application's id and secret: the secret is shown in this answer only."""

    client_id: str = Field(alias="client_id")
    client_secret: str = Field(alias="client_secret")


def _company(caller: Caller, company_id: str | None = None, *, reading: bool = False) -> str:
    """The company whose applications the caller manages: its own, with a company-level grant; the local
    operator names one. Partners have no read-only grant for applications (managing them is one scope), but a
    console viewer sees its company's applications without changing them."""
    if caller.company_id is None:
        if company_id is None:
            raise InvalidInput("name the company", field="company")
        return company_id
    seeing = reading and isinstance(caller, OperatorCaller)
    if not seeing and not caller.allows(Scope.APPLICATIONS_WRITE, caller.company_id):
        raise InsufficientScope(Scope.APPLICATIONS_WRITE.value)
    return caller.company_id


async def _get(
    session: AsyncSession,
    caller: Caller,
    client_id: str,
    *,
    reading: bool = False,
    expected_version: int | None = None,
) -> Application:
    company_id = _company(caller, reading=reading) if caller.company_id is not None else None
    app = await session.get(Application, client_id)
    if app is None or (company_id is not None and app.company_id != company_id):
        raise NotFound("application", client_id)
    check_version("application", repr(app.name), app.version, expected_version)
    return app


async def _changed(
    session: AsyncSession,
    caller: Caller,
    app: Application,
    action: str,
    now: datetime,
    detail: dict[str, str] | None = None,
) -> None:
    app.version += 1
    app.updated_at = now
    await audit.record_change(session, caller, f"application.{action}", app, now=now, detail=detail)


async def create_application(
    session: AsyncSession,
    caller: Caller,
    hasher: SecretHasher,
    *,
    name: str,
    now: datetime,
    company_id: str | None = None,
) -> Credentials:
    company_id = _company(caller, company_id)
    name = validate_name(name)
    if await session.get(Company, company_id) is None:
        raise NotFound("company", company_id)
    client_id, secret = new_client_id(), new_client_secret()
    app = Application(
        client_id=client_id,
        company_id=company_id,
        name=name,
        secret_hash=hasher.hash(secret),
        secret_generation=1,
        created_at=now,
        updated_at=now,
    )
    session.add(app)
    await session.flush()
    await audit.record_change(session, caller, "application.create", app, now=now, detail={"name": name})
    return Credentials(client_id=client_id, client_secret=secret)


async def set_enabled(
    session: AsyncSession,
    caller: Caller,
    client_id: str,
    *,
    enabled: bool,
    now: datetime,
    expected_version: int | None = None,
) -> ApplicationView:
    app = await _get(session, caller, client_id, expected_version=expected_version)
    if app.enabled != enabled:
        app.enabled = enabled
        await _changed(session, caller, app, "enable" if enabled else "disable", now)
    await session.flush()
    return await _view(session, app)


async def delete_application(
    session: AsyncSession, caller: Caller, client_id: str, *, now: datetime, expected_version: int | None = None
) -> None:
    app = await _get(session, caller, client_id, expected_version=expected_version)
    await audit.record_change(session, caller, "application.delete", app, now=now, detail={"name": app.name})
    await session.execute(delete(GroupMember).where(GroupMember.client_id == client_id))
    await session.delete(app)
    await session.flush()


async def rotate_secret(
    session: AsyncSession,
    caller: Caller,
    hasher: SecretHasher,
    client_id: str,
    *,
    now: datetime,
    expected_version: int | None = None,
) -> Credentials:
    """A new secret; the old one stops working at once, and tokens it obtained are revoked with it."""
    app = await _get(session, caller, client_id, expected_version=expected_version)
    secret = new_client_secret()
    app.secret_hash = hasher.hash(secret)
    app.secret_generation += 1
    await _changed(session, caller, app, "rotate-secret", now)
    await session.flush()
    return Credentials(client_id=client_id, client_secret=secret)


async def set_rate_limit(
    session: AsyncSession,
    caller: Caller,
    client_id: str,
    *,
    requests: int | None,
    now: datetime,
    expected_version: int | None = None,
) -> ApplicationView:
    """Give the application a rate limit of its own, `requests` API requests a minute (None: back to the default).
    It applies to its requests within the bearer check's PRINCIPAL_TTL."""
    if requests is not None and not 1 <= requests <= MAX_REQUESTS:
        raise InvalidInput(f"a rate limit is 1 to {MAX_REQUESTS} requests a minute", field="rateLimit")
    app = await _get(session, caller, client_id, expected_version=expected_version)
    if app.rate_limit != requests:
        app.rate_limit = requests
        limit = "default" if requests is None else str(requests)
        await _changed(session, caller, app, "set-rate-limit", now, {"rateLimit": limit})
    await session.flush()
    return await _view(session, app)


async def _check_jwks_url(url: str, *, allow_private: bool, resolver: Resolver) -> None:
    """Refuse a key set URL that is not http(s), or whose host resolves now to an address that is not allowed
    (an unresolvable name passes: the authorization server checks again at every fetch)."""
    check_url(url, field="jwksUrl")
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        await checked_addresses(parts.hostname or "", port, allow_private=allow_private, resolver=resolver)
    except OutboundAddressRefused as exc:
        raise InvalidInput(f"key set URL refused: {exc.reason}", field="jwksUrl") from None
    except HostUnresolvable:
        return


def _checked_jwks(jwks: dict[str, Any] | str) -> str:
    """The document as stored: only public keys, compact JSON; InvalidInput saying what is wrong otherwise."""
    try:
        public_key_set(jwks)
    except InvalidClientAssertion as exc:
        raise InvalidInput(exc.reason, field="jwks") from None
    document = json.loads(jwks) if isinstance(jwks, str) else jwks
    return json.dumps(document, separators=(",", ":"), sort_keys=True)


async def set_public_keys(
    transaction: Transactions,
    caller: Caller,
    client_id: str,
    *,
    jwks: dict[str, Any] | str | None = None,
    jwks_url: str | None = None,
    now: datetime,
    allow_private: bool,
    resolver: Resolver = resolve,
    expected_version: int | None = None,
) -> ApplicationView:
    """Register the application's public keys for private_key_jwt: a JWKS document or the URL of one (neither:
    remove them, and with them private_key_jwt). Raises InvalidInput for both at once, a key set holding a private
    or symmetric key, or a URL that is not allowed; nothing is stored then."""
    if jwks is not None and jwks_url is not None:
        raise InvalidInput("give a key set or the URL of one, not both", field="jwks")
    if caller.company_id is not None:
        _company(caller)  # the caller's grant, before anything is resolved
    stored = _checked_jwks(jwks) if jwks is not None else None
    if jwks_url is not None:
        await _check_jwks_url(jwks_url, allow_private=allow_private, resolver=resolver)
    async with transaction() as session:
        app = await _get(session, caller, client_id, expected_version=expected_version)
        if (app.jwks, app.jwks_url) != (stored, jwks_url):
            app.jwks, app.jwks_url = stored, jwks_url
            # Public keys are no secret, but the record names only where they come from.
            source = "jwks" if stored is not None else "jwksUrl" if jwks_url is not None else "none"
            detail = {"source": source} if jwks_url is None else {"source": source, "url": jwks_url}
            await _changed(session, caller, app, "set-keys", now, detail)
        await session.flush()
        return await _view(session, app)


async def _view(session: AsyncSession, app: Application) -> ApplicationView:
    groups = await session.scalars(
        select(GroupMember.group_id).where(GroupMember.client_id == app.client_id).order_by(GroupMember.group_id)
    )
    return _make_view(app, groups)


def _make_view(app: Application, group_ids: Iterable[str]) -> ApplicationView:
    return ApplicationView(
        client_id=app.client_id,
        company_id=app.company_id,
        name=app.name,
        enabled=app.enabled,
        group_ids=list(group_ids),
        created_at=app.created_at,
        version=app.version,
        jwks=json.loads(app.jwks) if app.jwks is not None else None,
        jwks_url=app.jwks_url,
        rate_limit=app.rate_limit,
    )


async def get_application(session: AsyncSession, caller: Caller, client_id: str) -> ApplicationView:
    return await _view(session, await _get(session, caller, client_id, reading=True))


async def list_applications(
    session: AsyncSession,
    caller: Caller,
    page: PageRequest,
    *,
    company_id: str | None = None,
    matching: str | None = None,
) -> Page[ApplicationView]:
    """The applications of the caller's company (the local operator: of `company_id`, or all), by `client_id`;
    `matching` narrows to those whose name or client ID holds it (any case)."""
    if caller.company_id is not None:
        company_id = _company(caller, reading=True)
    query = select(Application).order_by(Application.client_id).limit(page.fetch)
    if company_id is not None:
        query = query.where(Application.company_id == company_id)
    if matching:
        pattern = f"%{like_escaped(matching)}%"
        query = query.where(
            or_(Application.name.ilike(pattern, escape="\\"), Application.client_id.ilike(pattern, escape="\\"))
        )
    if page.after is not None:
        query = query.where(Application.client_id > page.after)
    apps = list(await session.scalars(query))
    groups: dict[str, list[str]] = {}
    if apps:
        # One query for the whole page's memberships, not one per application.
        members = await session.execute(
            select(GroupMember.client_id, GroupMember.group_id)
            .where(GroupMember.client_id.in_([a.client_id for a in apps]))
            .order_by(GroupMember.client_id, GroupMember.group_id)
        )
        for client_id, group_id in members:
            groups.setdefault(client_id, []).append(group_id)
    views = [_make_view(a, groups.get(a.client_id, ())) for a in apps]
    return page.page(views, lambda view: view.client_id)
