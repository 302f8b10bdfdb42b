"""How the audit log names each kind of object a change is made to, and whose log holds its record."""

from __future__ import annotations

import pytest

from chargenet.services.audit import Audited, Target, target
from chargenet.store import models


@pytest.mark.parametrize(
    ("row", "named"),
    [
        (models.Company(id="co_1"), Target("company", "co_1", "co_1")),
        (models.Site(id="site_1", company_id="co_1"), Target("site", "site_1", "co_1")),
        (models.Station(id="ST-1", site_id="site_1"), Target("station", "ST-1", site_id="site_1")),
        (models.Meter(id="meter_1", site_id="site_1"), Target("meter", "meter_1", site_id="site_1")),
        (
            models.LocalAuthEntry(site_id="site_1", id_tag="TAG"),
            Target("local list entry", "site_1/TAG", site_id="site_1"),
        ),
        (models.Application(client_id="app_1", company_id="co_1"), Target("application", "app_1", "co_1")),
        (models.Group(id="grp_1", company_id="co_1"), Target("group", "grp_1", "co_1")),
        (models.Operator(id="op_1", company_id="co_1"), Target("operator", "op_1", "co_1")),
        (models.Webhook(id="wh_1", site_id="site_1"), Target("webhook", "wh_1", site_id="site_1")),
        (models.AlertRule(id="arule_1", company_id="co_1"), Target("alert rule", "arule_1", "co_1")),
        (models.Alert(id=7, company_id="co_1"), Target("alert", "7", "co_1")),
        (models.MailSettings(company_id="co_1"), Target("mail settings", "co_1", "co_1")),
    ],
)
def test_each_audited_object_is_named_once(row: Audited, named: Target) -> None:
    assert target(row) == named
