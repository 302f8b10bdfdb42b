"""Operator rules: roles, e-mail and password policy, session lifetimes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chargenet.domain.operators import (
    Role,
    SessionState,
    normalize_email,
    parse_role,
    session_state,
    validate_password,
)
from chargenet.errors import InvalidInput

T0 = datetime(2026, 7, 1, 12, tzinfo=UTC)


def test_each_role_includes_the_ones_below_it() -> None:
    assert Role.OWNER.includes(Role.ADMIN) and Role.ADMIN.includes(Role.VIEWER)
    assert not Role.VIEWER.includes(Role.ADMIN) and not Role.ADMIN.includes(Role.OWNER)


def test_an_unknown_role_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_role("root")
    assert refused.value.field == "role"


def test_emails_are_compared_trimmed_and_in_lower_case() -> None:
    assert normalize_email("  Ana@Example.ORG ") == "ana@example.org"
    for bad in ("", "ana", "ana@", "a b@example.org", "ana@example"):
        with pytest.raises(InvalidInput):
            normalize_email(bad)


def test_a_password_has_12_to_1024_characters() -> None:
    assert validate_password("x" * 12)
    for bad in ("x" * 11, "x" * 1025):
        with pytest.raises(InvalidInput):
            validate_password(bad)


@pytest.mark.parametrize(
    "since_sign_in,since_last,state",
    [
        (timedelta(minutes=5), timedelta(minutes=5), SessionState.ALIVE),
        (timedelta(hours=2), timedelta(minutes=29, seconds=59), SessionState.ALIVE),
        (timedelta(hours=2), timedelta(minutes=30), SessionState.IDLE),
        (timedelta(hours=11, minutes=59), timedelta(0), SessionState.ALIVE),
        (timedelta(hours=12), timedelta(0), SessionState.EXPIRED),
        (timedelta(hours=13), timedelta(hours=1), SessionState.EXPIRED),
    ],
)
def test_a_session_ends_30_minutes_idle_or_12_hours_after_sign_in(
    since_sign_in: timedelta, since_last: timedelta, state: SessionState
) -> None:
    now = T0 + since_sign_in
    assert session_state(created_at=T0, last_seen_at=now - since_last, now=now) is state
