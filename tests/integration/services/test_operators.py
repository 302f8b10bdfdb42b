"""Operators, console sessions and the audit log at the service layer, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from chargenet.auth.permissions import Grant, Permissions
from chargenet.clock import ManualClock
from chargenet.domain.operators import Role
from chargenet.domain.scopes import Scope
from chargenet.errors import Conflict, EmailTaken, Forbidden, InvalidCredentials, InvalidInput, NotFound, StaleChange
from chargenet.services import audit, companies, console_sessions, operators
from chargenet.services.callers import OPERATOR, ApiApplication, OperatorCaller
from chargenet.services.pages import PageRequest
from chargenet.services.views import rendered
from chargenet.store.db import Store
from tests.support.operators import add_operator, cheap_passwords

ADDRESS = "192.0.2.1"  # the browser of every operator acting here


@pytest.fixture(scope="module")
def passwords() -> operators.Passwords:
    return cheap_passwords()


async def company(store: Store, clock: ManualClock, name: str = "Acme") -> str:
    async with store.transaction() as session:
        return (await companies.create_company(session, OPERATOR, name=name, now=clock.now())).id


async def make(
    store: Store, passwords: operators.Passwords, clock: ManualClock, company_id: str, email: str, role: str = "owner"
) -> operators.OperatorView:
    return await add_operator(store.transaction, passwords, clock.now(), company_id=company_id, email=email, role=role)


def caller(view: operators.OperatorView) -> OperatorCaller:
    return OperatorCaller(view.id, view.company_id, view.email, view.role, ADDRESS)


async def owner_and_viewer(
    store: Store, passwords: operators.Passwords, clock: ManualClock
) -> tuple[str, OperatorCaller, operators.OperatorView]:
    """Company Acme, its owner acting as the caller, and a viewer of it."""
    acme = await company(store, clock)
    owner = caller(await make(store, passwords, clock, acme, "owner@acme.test"))
    viewer = await make(store, passwords, clock, acme, "viewer@acme.test", "viewer")
    return acme, owner, viewer


async def signed_in_twice(
    store: Store, passwords: operators.Passwords, clock: ManualClock
) -> tuple[operators.OperatorView, console_sessions.StartedSession, console_sessions.StartedSession]:
    """Ana, owner of Acme, with two console sessions started now."""
    ana = await make(store, passwords, clock, await company(store, clock), "ana@acme.test")
    async with store.transaction() as session:
        first = await console_sessions.start(session, ana, now=clock.now())
        second = await console_sessions.start(session, ana, now=clock.now())
    return ana, first, second


async def test_an_operator_signs_in_with_the_password_given_at_creation(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    acme = await company(store, clock)
    created = await make(store, passwords, clock, acme, "Ana@Acme.test")
    assert created.email == "ana@acme.test" and created.role is Role.OWNER
    signed = await operators.sign_in(
        store.transaction, passwords, email=" ANA@acme.test ", password="correct horse battery"
    )
    assert signed.id == created.id


@pytest.mark.parametrize("email,password", [("ana@acme.test", "wrong password!"), ("nobody@acme.test", "x" * 12)])
async def test_a_wrong_password_and_an_unknown_email_fail_alike(
    store: Store, clock: ManualClock, passwords: operators.Passwords, email: str, password: str
) -> None:
    acme = await company(store, clock)
    await make(store, passwords, clock, acme, "ana@acme.test")
    with pytest.raises(InvalidCredentials) as failure:
        await operators.sign_in(store.transaction, passwords, email=email, password=password)
    assert failure.value.message == "the e-mail address or the password is wrong"


async def test_the_password_hash_is_argon2id_and_never_the_password(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    from sqlalchemy import select

    from chargenet.store.models import Operator

    acme = await company(store, clock)
    await make(store, passwords, clock, acme, "ana@acme.test")
    async with store.transaction() as session:
        stored = await session.scalar(select(Operator.password_hash))
    assert stored is not None and stored.startswith("$argon2id$") and "correct horse" not in stored


async def test_short_passwords_bad_emails_and_unknown_roles_are_refused_by_field(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    acme = await company(store, clock)
    for email, role, password, field in (
        ("ana@acme.test", "owner", "short", "password"),
        ("not an email", "owner", "long enough password", "email"),
        ("ana@acme.test", "root", "long enough password", "role"),
    ):
        with pytest.raises(InvalidInput) as refused:
            await operators.create_operator(
                store.transaction,
                passwords,
                OPERATOR,
                company_id=acme,
                email=email,
                role=role,
                password=password,
                now=clock.now(),
            )
        assert refused.value.field == field


async def test_an_email_signs_in_to_one_account_only(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    acme, other = await company(store, clock), await company(store, clock, "Other")
    await make(store, passwords, clock, acme, "ana@acme.test")
    with pytest.raises(EmailTaken):
        await make(store, passwords, clock, other, "ANA@acme.test")


async def test_only_an_owner_manages_operators_and_only_in_its_company(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    acme, other = await company(store, clock), await company(store, clock, "Other")
    owner = caller(await make(store, passwords, clock, acme, "owner@acme.test"))
    admin = caller(await make(store, passwords, clock, acme, "admin@acme.test", "admin"))
    foreign = await make(store, passwords, clock, other, "x@other.test")
    async with store.transaction() as session:
        with pytest.raises(Forbidden):
            await operators.list_operators(session, admin, PageRequest(), company_id=acme)
        with pytest.raises(NotFound):
            await operators.list_operators(session, owner, PageRequest(), company_id=other)
        with pytest.raises(NotFound):
            await operators.set_enabled(session, owner, foreign.id, enabled=False, now=clock.now())
        with pytest.raises(Forbidden):
            await operators.set_role(session, admin, owner.operator_id, role="viewer", now=clock.now())


async def test_operators_page_by_email_with_an_opaque_cursor_and_render_as_views(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    acme = await company(store, clock)
    for name in ("cy", "ana", "bo"):
        await make(store, passwords, clock, acme, f"{name}@acme.test", "viewer")
    async with store.read() as session:
        first = await operators.list_operators(session, OPERATOR, PageRequest(2), company_id=acme)
        rest = await operators.list_operators(session, OPERATOR, PageRequest.of(2, first.next), company_id=acme)
    assert [o.email for o in first.items + rest.items] == ["ana@acme.test", "bo@acme.test", "cy@acme.test"]
    assert first.next is not None and "@" not in first.next and rest.next is None
    shown = rendered(first.items[0])
    assert shown == {
        "id": first.items[0].id,
        "companyId": acme,
        "email": "ana@acme.test",
        "role": "viewer",
        "enabled": True,
        "version": 1,
        "createdAt": clock.now().isoformat(),
        "updatedAt": clock.now().isoformat(),
    }


async def test_no_application_manages_operators(store: Store, clock: ManualClock) -> None:
    acme = await company(store, clock)
    application = ApiApplication("app_1", Permissions.of(acme, [Grant(acme, None, frozenset(Scope))]))
    async with store.read() as session:
        with pytest.raises(Forbidden):
            await operators.list_operators(session, application, PageRequest(), company_id=acme)


async def test_disabling_an_operator_ends_their_sessions_in_the_same_transaction(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    _, owner, viewer = await owner_and_viewer(store, passwords, clock)
    async with store.transaction() as session:
        started = await console_sessions.start(session, viewer, now=clock.now())
    async with store.transaction() as session:
        assert await console_sessions.resume(session, started.token, now=clock.now()) is not None
        await operators.set_enabled(session, owner, viewer.id, enabled=False, now=clock.now())
    async with store.transaction() as session:
        assert await console_sessions.resume(session, started.token, now=clock.now()) is None
    with pytest.raises(InvalidCredentials):
        await operators.sign_in(
            store.transaction, passwords, email="viewer@acme.test", password="correct horse battery"
        )


async def test_a_company_keeps_an_enabled_owner(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    acme = await company(store, clock)
    owner = await make(store, passwords, clock, acme, "owner@acme.test")
    async with store.transaction() as session:
        with pytest.raises(Conflict):
            await operators.set_enabled(session, OPERATOR, owner.id, enabled=False, now=clock.now())
        with pytest.raises(Conflict):
            await operators.set_role(session, caller(owner), owner.id, role="viewer", now=clock.now())


async def test_a_change_made_against_an_older_version_is_refused(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    _, owner, viewer = await owner_and_viewer(store, passwords, clock)
    async with store.transaction() as session:
        await operators.set_role(session, owner, viewer.id, role="admin", now=clock.now())
    async with store.transaction() as session:
        with pytest.raises(StaleChange):
            await operators.set_role(
                session, owner, viewer.id, role="owner", now=clock.now(), expected_version=viewer.version
            )


async def test_a_session_ends_when_idle_for_30_minutes_or_after_12_hours(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    _, idle, busy = await signed_in_twice(store, passwords, clock)
    for _ in range(24):  # 24 x 29 minutes: 11 h 36 min, never idle for 30 minutes
        clock.advance(29 * 60)
        async with store.transaction() as session:
            assert await console_sessions.resume(session, busy.token, now=clock.now()) is not None
    clock.advance(24 * 60)
    async with store.transaction() as session:
        # Kept busy, it still ends 12 hours after signing in.
        assert await console_sessions.resume(session, busy.token, now=clock.now()) is None
    async with store.transaction() as session:
        assert await console_sessions.resume(session, idle.token, now=clock.now()) is None


async def test_changing_ones_password_ends_every_other_session(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    ana, here, elsewhere = await signed_in_twice(store, passwords, clock)
    with pytest.raises(InvalidInput) as wrong:
        await operators.change_own_password(
            store.transaction,
            passwords,
            caller(ana),
            current="not it at all",
            new="a new password!",
            now=clock.now(),
        )
    assert wrong.value.field == "current_password"
    await operators.change_own_password(
        store.transaction,
        passwords,
        caller(ana),
        current="correct horse battery",
        new="a new password!",
        now=clock.now(),
        keep_session=console_sessions.id_hash(here.token),
    )
    async with store.transaction() as session:
        assert await console_sessions.resume(session, here.token, now=clock.now()) is not None
        assert await console_sessions.resume(session, elsewhere.token, now=clock.now()) is None
    assert await operators.sign_in(store.transaction, passwords, email="ana@acme.test", password="a new password!")


async def test_every_change_is_audited_newest_first_without_a_secret(
    store: Store, clock: ManualClock, passwords: operators.Passwords
) -> None:
    acme, owner, viewer = await owner_and_viewer(store, passwords, clock)
    async with store.transaction() as session:
        await operators.set_role(session, owner, viewer.id, role="admin", now=clock.now())
        await operators.set_enabled(session, owner, viewer.id, enabled=False, now=clock.now())
    async with store.transaction() as session:
        page = await audit.list_records(session, OPERATOR, PageRequest(), company_id=acme)
        only_roles = await audit.list_records(
            session, OPERATOR, PageRequest(), company_id=acme, where=audit.AuditFilter(action="operator.set-role")
        )
        first = await audit.list_records(session, OPERATOR, PageRequest(2), company_id=acme)
        rest = await audit.list_records(session, OPERATOR, PageRequest.of(3, first.next), company_id=acme)
    assert [e.action for e in page.items] == [
        "operator.disable",
        "operator.set-role",
        "operator.create",
        "operator.create",
        "company.create",
    ]
    assert page.items[1].detail == {"email": "viewer@acme.test", "from": "viewer", "to": "admin"}
    assert page.items[0].actor == "operator owner@acme.test" and page.items[0].address == ADDRESS
    assert [e.action for e in only_roles.items] == ["operator.set-role"]
    assert [e.id for e in first.items + rest.items] == [e.id for e in page.items] and rest.next is None
    assert all("correct horse" not in str(e) for e in page.items)


async def test_the_audit_log_refuses_a_detail_that_names_a_secret(store: Store, clock: ManualClock) -> None:
    async with store.transaction() as session:
        with pytest.raises(ValueError, match="secret"):
            await audit.record(
                session,
                OPERATOR.actor,
                company_id=None,
                action="app.rotate",
                object_type="application",
                object_id="x",
                now=clock.now(),
                detail={"client_secret": "s3cr3t"},
            )
