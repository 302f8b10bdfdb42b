from __future__ import annotations

import pytest

from chargenet.domain.scopes import Scope, format_scopes, parse_scope
from chargenet.errors import InvalidInput


def test_known_scope_parses() -> None:
    assert parse_scope("charge-points:write") is Scope.CHARGE_POINTS_WRITE


def test_unknown_scope_is_refused_with_the_field() -> None:
    with pytest.raises(InvalidInput) as info:
        parse_scope("admin")
    assert info.value.field == "scope" and "sites:read" in info.value.detail


def test_scopes_format_sorted_and_space_separated() -> None:
    assert format_scopes({Scope.SITES_READ, Scope.CHARGE_POINTS_READ}) == "charge-points:read sites:read"
