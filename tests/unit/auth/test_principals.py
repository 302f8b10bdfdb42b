from __future__ import annotations

from chargenet.auth.principals import _principal
from chargenet.domain.scopes import Scope

APP = ("co_a", True, 3, "hs256$x", None, None)


def test_no_rows_is_no_principal() -> None:
    assert _principal("app_1", []) is None


def test_application_without_groups_has_no_grants() -> None:
    principal = _principal("app_1", [(*APP, None, None, None)])
    assert principal is not None
    assert (principal.company_id, principal.enabled, principal.secret_generation) == ("co_a", True, 3)
    assert principal.permissions.grants == ()


def test_each_group_row_becomes_a_grant() -> None:
    principal = _principal(
        "app_1", [(*APP, "co_a", None, "sites:read"), (*APP, "co_a", "site_1", "charge-points:read sites:read")]
    )
    assert principal is not None
    assert principal.permissions.allows(Scope.CHARGE_POINTS_READ, "co_a", "site_1")
    assert not principal.permissions.allows(Scope.CHARGE_POINTS_READ, "co_a", "site_2")


def test_scopes_no_longer_known_are_ignored() -> None:
    principal = _principal("app_1", [(*APP, "co_a", None, "sites:read retired:scope")])
    assert principal is not None and principal.permissions.scopes == {Scope.SITES_READ}


def test_grants_of_another_company_are_dropped() -> None:
    principal = _principal("app_1", [(*APP, "co_b", None, "sites:read")])
    assert principal is not None and principal.permissions.grants == ()
