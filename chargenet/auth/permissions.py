"""Who may do what where (sans-IO).

The model: a group is anchored at a company or at one of its sites and grants scopes over that node
and everything below it. An application holds the union of its groups' grants. The tenant tree is
company > site > station > charge point > connector; everything under a site is reached through the site,
so a resource is addressed by the pair (company, site) it lives in, with `site=None` for things that
belong to the company itself (applications, groups, the list of sites).

Rule 1: a company-level grant reaches the company and every site of it.
Rule 2: a site-level grant reaches that site only, never its company's other sites nor the company itself.
Rule 3: grants of a company other than the application's own reach nothing (tenant isolation holds
        even if a bad row ever linked an application to another company's group).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from chargenet.domain.scopes import Scope


@dataclass(frozen=True, slots=True)
class Grant:
    company_id: str
    site_id: str | None
    scopes: frozenset[Scope]


@dataclass(frozen=True, slots=True)
class Reach:
    """Where one scope applies, as a filter for list queries: every site of `companies`, plus `sites`; or, for
    the operator of the whole store, `everything`."""

    companies: frozenset[str]
    sites: frozenset[str]
    everything: bool = False

    @property
    def empty(self) -> bool:
        return not self.everything and not self.companies and not self.sites

    def covers_site(self, company_id: str, site_id: str) -> bool:
        return self.everything or company_id in self.companies or site_id in self.sites

    def covers_company(self, company_id: str) -> bool:
        """Every site of `company_id`, and the company itself."""
        return self.everything or company_id in self.companies


@dataclass(frozen=True, slots=True)
class Permissions:
    company_id: str
    grants: tuple[Grant, ...]

    @classmethod
    def of(cls, company_id: str, grants: Iterable[Grant]) -> Permissions:
        return cls(company_id, tuple(g for g in grants if g.company_id == company_id))

    @property
    def scopes(self) -> frozenset[Scope]:
        """Every scope granted somewhere, for the informational `scope` claim of a token."""
        return frozenset(s for g in self.grants for s in g.scopes)

    def anywhere(self, scope: Scope) -> bool:
        return any(scope in g.scopes for g in self.grants)

    def allows(self, scope: Scope, company_id: str, site_id: str | None = None) -> bool:
        """Whether `scope` holds on the node (company_id, site_id); `site_id=None` is the company itself."""
        if company_id != self.company_id:
            return False
        for grant in self.grants:
            if scope not in grant.scopes:
                continue
            if grant.site_id is None or grant.site_id == site_id:
                return True
        return False

    def reach(self, scope: Scope) -> Reach:
        companies = {g.company_id for g in self.grants if scope in g.scopes and g.site_id is None}
        sites = {g.site_id for g in self.grants if scope in g.scopes and g.site_id is not None}
        return Reach(frozenset(companies), frozenset(s for s in sites if s is not None))
