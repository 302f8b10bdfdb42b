from __future__ import annotations

from chargenet.auth.permissions import Grant, Permissions
from chargenet.domain.scopes import Scope

READ = Scope.SITES_READ
CP = Scope.CHARGE_POINTS_READ


def perms(*grants: Grant) -> Permissions:
    return Permissions.of("co_a", grants)


def test_company_grant_reaches_every_site_of_the_company() -> None:
    p = perms(Grant("co_a", None, frozenset({READ})))
    assert p.allows(READ, "co_a", "site_1") and p.allows(READ, "co_a", "site_2")


def test_company_grant_reaches_the_company_itself() -> None:
    assert perms(Grant("co_a", None, frozenset({READ}))).allows(READ, "co_a")


def test_site_grant_reaches_its_site_only() -> None:
    p = perms(Grant("co_a", "site_1", frozenset({READ})))
    assert p.allows(READ, "co_a", "site_1") and not p.allows(READ, "co_a", "site_2")


def test_site_grant_does_not_reach_the_company() -> None:
    assert not perms(Grant("co_a", "site_1", frozenset({READ}))).allows(READ, "co_a")


def test_grant_of_another_scope_does_not_allow() -> None:
    assert not perms(Grant("co_a", None, frozenset({CP}))).allows(READ, "co_a", "site_1")


def test_other_company_is_never_reached() -> None:
    assert not perms(Grant("co_a", None, frozenset(Scope))).allows(READ, "co_b", "site_9")


def test_grants_of_another_company_are_dropped() -> None:
    p = perms(Grant("co_b", None, frozenset({READ})))
    assert p.grants == () and not p.allows(READ, "co_b", "site_9") and not p.anywhere(READ)


def test_scopes_are_the_union_of_grants() -> None:
    p = perms(Grant("co_a", None, frozenset({READ})), Grant("co_a", "site_1", frozenset({CP})))
    assert p.scopes == {READ, CP}


def test_anywhere_sees_site_grants() -> None:
    assert perms(Grant("co_a", "site_1", frozenset({CP}))).anywhere(CP)


def test_reach_collects_companies_and_sites_for_one_scope() -> None:
    p = perms(
        Grant("co_a", None, frozenset({READ})),
        Grant("co_a", "site_1", frozenset({CP})),
        Grant("co_a", "site_2", frozenset({READ, CP})),
    )
    reach = p.reach(CP)
    assert reach.companies == frozenset() and reach.sites == {"site_1", "site_2"}
    assert reach.covers_site("co_a", "site_1") and not reach.covers_site("co_a", "site_3")


def test_reach_is_empty_without_the_scope() -> None:
    assert perms(Grant("co_a", None, frozenset({READ}))).reach(CP).empty
