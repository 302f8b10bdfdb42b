"""The audit log holds the API's changes as it holds the console's: who (the application), from where, what, and
never a secret; over the real app, on SQLite."""

from __future__ import annotations

import pytest

from chargenet.services import audit
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from tests.integration.api.test_admin_parity import Api, api

pytestmark = pytest.mark.sqlite_only(
    reason="what the API records of its caller; the audit log's store has its own tests"
)

__all__ = ["api"]


async def test_an_api_change_is_audited_with_the_calling_application_and_its_address(api: Api) -> None:
    headers = await api.as_("applications:write")
    created = await api.client.post("/applications", json={"name": "Fleet partner"}, headers=headers)
    assert created.status_code == 201, created.text
    client_id, secret = created.json()["client_id"], created.json()["client_secret"]
    assert (await api.client.post(f"/applications/{client_id}/disable", headers=headers)).status_code == 200
    async with api.context.store.transaction() as session:
        where = audit.AuditFilter(object_id=client_id)
        page = await audit.list_records(session, OPERATOR, PageRequest(), company_id=api.tenant.company_id, where=where)
    made, disabled = page.items[1], page.items[0]
    assert (made.action, made.face, disabled.action) == ("application.create", "api", "application.disable")
    assert made.actor.startswith("application app_") and made.address == "127.0.0.1"
    assert secret not in repr(page)


async def test_a_refused_api_change_leaves_no_audit_record(api: Api) -> None:
    headers = await api.as_("applications:write")
    async with api.context.store.transaction() as session:
        before = await audit.list_records(session, OPERATOR, PageRequest(), company_id=api.tenant.company_id)
    assert (await api.client.post(f"/applications/app_{'x' * 20}/disable", headers=headers)).status_code == 404
    assert (await api.client.post("/applications", json={"name": ""}, headers=headers)).status_code == 422
    async with api.context.store.transaction() as session:
        assert await audit.list_records(session, OPERATOR, PageRequest(), company_id=api.tenant.company_id) == before
