"""Console operators for tests: argon2 on its cheapest profile, so that signing in takes milliseconds rather than the
production cost, and an operator made as the platform operator makes one."""

from __future__ import annotations

from datetime import datetime

import argon2

from chargenet.services import operators
from chargenet.services.callers import OPERATOR
from chargenet.store.db import Transactions

PASSWORD = "correct horse battery"


def cheap_passwords() -> operators.Passwords:
    """The operators' password hasher on argon2's cheapest profile."""
    return operators.Passwords(argon2.PasswordHasher.from_parameters(argon2.profiles.CHEAPEST))


async def add_operator(
    transaction: Transactions,
    passwords: operators.Passwords,
    now: datetime,
    *,
    company_id: str,
    email: str,
    role: str = "owner",
    password: str = PASSWORD,
) -> operators.OperatorView:
    """Operator `email` of the company with `role` and `password`, created by the platform operator."""
    return await operators.create_operator(
        transaction,
        passwords,
        OPERATOR,
        company_id=company_id,
        email=email,
        role=role,
        password=password,
        now=now,
    )
