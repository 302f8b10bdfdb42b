"""Webhook changes resolve their addresses outside any unit of work: a slow resolver holds no connection and, on
SQLite, not the one writer lock, while what is stored is still what was checked."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from chargenet.clock import ManualClock
from chargenet.errors import StaleChange
from chargenet.keys import KeyStore
from chargenet.services import companies, webhooks
from chargenet.services.callers import OPERATOR
from chargenet.services.webhooks import AuthForm, WebhookView
from chargenet.store.db import Store
from chargenet.store.models import Webhook
from chargenet.webhooks.outbound_auth import AuthType, NoAuth, OAuth2ClientCredentials, from_document
from tests.factories import make_tenant
from tests.support.processes import WITHIN

PUBLIC = "93.184.215.14"


class SlowResolver:
    """Answers every name with a public address, but a name in `slow` only once released, as a slow DNS server
    would; `asked` is set when it starts waiting."""

    def __init__(self, *slow: str) -> None:
        self.slow = set(slow)
        self.asked = asyncio.Event()
        self.released = asyncio.Event()

    async def __call__(self, host: str, _port: int) -> list[str]:
        if host in self.slow:
            self.asked.set()
            await self.released.wait()
        return [PUBLIC]


@dataclass
class Hooks:
    store: Store
    clock: ManualClock
    keys: KeyStore
    site_id: str

    async def create(self, url: str, resolver: SlowResolver, **auth: str) -> WebhookView:
        return await webhooks.create_webhook(
            self.store.transaction,
            OPERATOR,
            self.keys.credential_cipher(),
            site_id=self.site_id,
            url=url,
            event_types=["Authorize"],
            auth=OAuth2ClientCredentials(**auth) if auth else NoAuth(),
            now=self.clock.now(),
            allow_private=False,
            resolver=resolver,
        )

    async def with_token_url(self) -> WebhookView:
        """A webhook whose OAuth2 token URL is https://auth.example/token."""
        return await self.create(
            "https://partner.example/hook", SlowResolver(), token_url="https://auth.example/token", client_id="c",
            client_secret="s",
        )  # fmt: skip

    async def update(self, webhook_id: str, resolver: SlowResolver, **changes: Any) -> WebhookView:
        return await webhooks.update_webhook(
            self.store.transaction,
            OPERATOR,
            self.keys.credential_cipher(),
            webhook_id,
            now=self.clock.now(),
            allow_private=False,
            resolver=resolver,
            **changes,
        )

    async def stored_token_url(self, webhook_id: str) -> str:
        async with self.store.read() as session:
            row = await session.get(Webhook, webhook_id)
        assert row is not None and row.credentials is not None
        auth = from_document(json.loads(self.keys.credential_cipher().decrypt(row.credentials)))
        assert isinstance(auth, OAuth2ClientCredentials)
        return auth.token_url


@pytest.fixture
async def hooks(store: Store, clock: ManualClock, tmp_path: Path) -> Hooks:
    keys = KeyStore(tmp_path / "keys")
    keys.ensure()
    tenant = await make_tenant(store, keys, clock.now())
    return Hooks(store, clock, keys, tenant.site_id)


async def _meanwhile_a_write_commits(hooks: Hooks, resolver: SlowResolver, change: asyncio.Task[WebhookView]) -> None:
    """While `change` waits for the resolver: no connection is taken from the pool, and another unit of work that
    writes commits (on SQLite it would wait for the writer lock of a unit left open)."""
    async with asyncio.timeout(WITHIN):
        await resolver.asked.wait()
    assert hooks.store.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    async with asyncio.timeout(WITHIN), hooks.store.transaction() as session:
        await companies.create_company(session, OPERATOR, name="Meanwhile", now=hooks.clock.now())
    assert not change.done()
    resolver.released.set()


async def test_a_webhook_is_created_once_its_slow_name_has_resolved_with_no_unit_of_work_open_meanwhile(
    hooks: Hooks,
) -> None:
    resolver = SlowResolver("partner.example")
    creating = asyncio.create_task(hooks.create("https://partner.example/hook", resolver))
    await _meanwhile_a_write_commits(hooks, resolver, creating)
    created = await creating
    async with hooks.store.read() as session:
        shown = await webhooks.get_webhook(session, OPERATOR, created.id)
    assert shown.url == "https://partner.example/hook"


async def test_a_webhook_moved_to_a_slow_name_holds_no_unit_of_work_while_it_resolves(hooks: Hooks) -> None:
    created = await hooks.create("https://old.example/hook", SlowResolver())
    resolver = SlowResolver("new.example")
    moving = hooks.update(created.id, resolver, url="https://new.example/hook", expected_version=created.version)
    updating = asyncio.create_task(moving)
    await _meanwhile_a_write_commits(hooks, resolver, updating)
    updated = await updating
    assert (updated.url, updated.version) == ("https://new.example/hook", created.version + 1)


async def test_a_form_keeping_the_stored_token_url_resolves_it_outside_any_unit_of_work(hooks: Hooks) -> None:
    created = await hooks.with_token_url()
    resolver = SlowResolver("auth.example")
    form = AuthForm(AuthType.OAUTH2, client_secret="new secret")  # the token URL left blank: the stored one is kept
    updating = asyncio.create_task(hooks.update(created.id, resolver, auth=form))
    await _meanwhile_a_write_commits(hooks, resolver, updating)
    updated = await updating
    assert updated.version == created.version + 1
    assert await hooks.stored_token_url(created.id) == "https://auth.example/token"


async def test_a_token_url_changed_while_the_form_resolved_the_one_it_kept_is_refused_as_stale(hooks: Hooks) -> None:
    created = await hooks.with_token_url()
    resolver = SlowResolver("auth.example")
    form = AuthForm(AuthType.OAUTH2, client_secret="new secret")
    updating = asyncio.create_task(hooks.update(created.id, resolver, auth=form))
    async with asyncio.timeout(WITHIN):
        await resolver.asked.wait()
    # Meanwhile someone else moves the token endpoint: the form's blank token URL now stands for one not checked.
    moved = OAuth2ClientCredentials(token_url="https://other.example/token", client_id="c", client_secret="s")
    await hooks.update(created.id, resolver, auth=moved)
    resolver.released.set()
    with pytest.raises(StaleChange):
        await updating
    assert await hooks.stored_token_url(created.id) == "https://other.example/token"
