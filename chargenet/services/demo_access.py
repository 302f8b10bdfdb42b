"""The demo's partner application: one application in a group over the demo company, with a fresh secret
on every `make demo` (a secret is shown once, so a restarted demo cannot show the old one)."""

from __future__ import annotations

import secrets
import shlex
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from chargenet.domain.scopes import Scope
from chargenet.keys import SecretHasher
from chargenet.services import applications, groups, operators
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Transactions
from chargenet.store.models import Application, Group, Operator

DEMO_APP = "demo partner"
DEMO_GROUP = "demo partners"
DEMO_SCOPES = (Scope.SITES_READ, Scope.CHARGE_POINTS_READ, Scope.TRANSACTIONS_READ, Scope.EVENTS_READ)


async def ensure_demo_application(
    session: AsyncSession, hasher: SecretHasher, *, company_id: str, now: datetime
) -> applications.Credentials:
    client_id = await session.scalar(
        select(Application.client_id).where(Application.company_id == company_id, Application.name == DEMO_APP)
    )
    if client_id is None:
        credentials = await applications.create_application(
            session, OPERATOR, hasher, company_id=company_id, name=DEMO_APP, now=now
        )
    else:
        credentials = await applications.rotate_secret(session, OPERATOR, hasher, client_id, now=now)
    group_id = await session.scalar(
        select(Group.id).where(Group.company_id == company_id, Group.name == DEMO_GROUP, Group.site_id.is_(None))
    )
    if group_id is None:
        group = await groups.create_group(
            session, OPERATOR, company_id=company_id, name=DEMO_GROUP, scopes=[s.value for s in DEMO_SCOPES], now=now
        )
        group_id = group.id
    await groups.add_app(session, OPERATOR, group_id, credentials.client_id, now=now)
    return credentials


def curl_command(public_url: str, credentials: applications.Credentials) -> str:
    """A shell command that gets a token and lists the charge points with it."""
    user = shlex.quote(f"{credentials.client_id}:{credentials.client_secret}")
    extract = shlex.quote('import json,sys; print(json.load(sys.stdin)["access_token"])')
    return (
        f"TOKEN=$(curl -s -u {user} -d grant_type=client_credentials {public_url}/auth/oauth2/token"
        f' | python3 -c {extract}) && curl -s -H "Authorization: Bearer $TOKEN" {public_url}/api/v1/charge-points'
    )


DEMO_OPERATOR = "operator@demo.test"


async def ensure_demo_operator(
    transaction: Transactions, passwords: operators.Passwords, *, company_id: str, now: datetime
) -> tuple[str, str]:
    """The demo company's owner in the console, with a new generated password on every start (printed once,
    like the partner's secret); returns the e-mail and the password."""
    password = secrets.token_urlsafe(12)
    async with transaction() as session:
        existing = await session.scalar(select(Operator.id).where(Operator.email == DEMO_OPERATOR))
    if existing is None:
        await operators.create_operator(
            transaction,
            passwords,
            OPERATOR,
            company_id=company_id,
            email=DEMO_OPERATOR,
            role="owner",
            password=password,
            now=now,
        )
    else:
        await operators.set_password(transaction, passwords, OPERATOR, existing, password=password, now=now)
    return DEMO_OPERATOR, password
