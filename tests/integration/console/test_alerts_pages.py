"""The Alerts pages: rules created and changed by admins with their thresholds and recipients checked, the mail
server set with its password kept write-only, the list with each alert's history and mail failure, the badge of
open alerts, and acknowledging one, audited."""

from __future__ import annotations

import re

from chargenet.alerts.evaluator import AlertEvaluator
from chargenet.alerts.mailer import AlertMailer
from chargenet.services import alert_rules
from chargenet.services.callers import OPERATOR
from chargenet.store.models import AlertRule, MailSettings, StationPresence
from tests.integration.console.conftest import ORIGIN, ConsoleHarness, post, records, site_with_station
from tests.support.ports import free_port


async def test_an_admin_creates_a_rule_which_is_listed_and_audited(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("admin@acme.test")
    data = {"kind": "station_offline", "threshold": "60", "recipients": "ops@acme.test, night@acme.test"}
    response = await post(client, "/console/alerts/rules", data)
    assert response.status_code == 303
    page = (await client.get("/console/alerts/rules")).text
    assert "Station offline" in page and "60 min" in page and "ops@acme.test, night@acme.test" in page
    (record,) = await records(harness, action="alert_rule.create")
    assert record.actor == "operator admin@acme.test" and record.detail["threshold minutes"] == "60"


async def test_a_threshold_that_is_negative_or_longer_than_a_week_is_refused_naming_the_field(
    harness: ConsoleHarness,
) -> None:
    client = await harness.signed_in("admin@acme.test")
    for threshold in ("-5", "0", "10081", "99999999"):
        data = {"kind": "connector_faulted", "threshold": threshold, "recipients": "ops@acme.test"}
        response = await post(client, "/console/alerts/rules", data)
        assert response.status_code == 422, threshold
        assert 'id="threshold-error"' in response.text and "1 to 10080" in response.text
        assert f'value="{threshold}"' in response.text  # the input is kept
    assert await records(harness, action="alert_rule.create") == []


async def test_recipients_with_a_line_break_are_refused_as_header_injection(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("admin@acme.test")
    data = {"kind": "station_offline", "threshold": "10", "recipients": "ops@acme.test\r\nBcc: everyone@acme.test"}
    response = await post(client, "/console/alerts/rules", data)
    assert response.status_code == 422
    assert 'id="recipients-error"' in response.text and "line break" in response.text


async def test_a_viewer_reads_the_rules_and_alerts_but_changes_nothing(harness: ConsoleHarness) -> None:
    async with harness.store.transaction() as session:
        rule = await alert_rules.create_rule(
            session,
            OPERATOR,
            company_id=harness.team.company_id,
            kind="meter_silent",
            threshold_minutes=15,
            recipients="ops@acme.test",
            now=harness.clock.now(),
        )
    client = await harness.signed_in("viewer@acme.test")
    assert (await client.get("/console/alerts")).status_code == 200
    shown = await client.get("/console/alerts/rules")
    assert "Meter silent" in shown.text and "New rule" not in shown.text
    assert (await client.get("/console/alerts/mail-server")).status_code == 403
    refused = await post(client, f"/console/alerts/rules/{rule.id}/disable", {})
    assert refused.status_code == 403
    async with harness.store.read() as session:
        assert (await session.get(AlertRule, rule.id)).enabled  # type: ignore[union-attr]


async def test_a_rule_is_changed_and_disabled_from_its_page_and_a_stale_form_is_refused(
    harness: ConsoleHarness,
) -> None:
    client = await harness.signed_in("owner@acme.test")
    await post(
        client, "/console/alerts/rules", {"kind": "upstream_down", "threshold": "5", "recipients": "a@acme.test"}
    )
    async with harness.store.read() as session:
        (rule_id,) = [
            rule.id for rule in await alert_rules.list_rules(session, OPERATOR, company_id=harness.team.company_id)
        ]
    changed = await post(
        client, f"/console/alerts/rules/{rule_id}", {"threshold": "30", "recipients": "b@acme.test", "version": "1"}
    )
    assert changed.status_code == 303
    stale = await post(
        client, f"/console/alerts/rules/{rule_id}", {"threshold": "40", "recipients": "c@acme.test", "version": "1"}
    )
    assert stale.status_code == 409
    assert (await post(client, f"/console/alerts/rules/{rule_id}/disable", {"version": "2"})).status_code == 303
    page = (await client.get(f"/console/alerts/rules/{rule_id}")).text
    assert "longer than 30 min" in page and "disabled" in page and "b@acme.test" in page
    assert [entry.action for entry in await records(harness, object_type="alert rule")] == [
        "alert_rule.disable",
        "alert_rule.update",
        "alert_rule.create",
    ]


async def test_the_mail_server_is_set_its_password_never_shown_and_a_sender_with_a_line_break_refused(
    harness: ConsoleHarness,
) -> None:
    client = await harness.signed_in("admin@acme.test")
    form = {
        "host": "smtp.acme.test",
        "port": "587",
        "tls": "starttls",
        "sender": "alerts@acme.test",
        "username": "alerts",
        "password": "s3cret-smtp-password",
    }
    assert (await post(client, "/console/alerts/mail-server", form)).status_code == 303
    page = (await client.get("/console/alerts/mail-server")).text
    assert "smtp.acme.test" in page and "Set; leave blank to keep it." in page
    assert "s3cret-smtp-password" not in page
    async with harness.store.read() as session:
        stored = await session.get(MailSettings, harness.team.company_id)
    assert stored is not None and stored.password is not None and b"s3cret" not in stored.password
    refused = await post(client, "/console/alerts/mail-server", {**form, "sender": "alerts@acme.test\r\nBcc: x@y.test"})
    assert refused.status_code == 422 and 'id="sender-error"' in refused.text
    (record,) = await records(harness, action="mail_settings.set")
    assert record.detail == {
        "host": "smtp.acme.test:587",
        "login": "set",
        "sender": "alerts@acme.test",
        "tls": "starttls",
    }


async def test_a_raised_alert_is_listed_with_its_mail_failure_counted_in_the_badge_and_acknowledged_once(
    harness: ConsoleHarness,
) -> None:
    await site_with_station(harness, harness.team.company_id, "ST-7")
    async with harness.store.transaction() as session:
        await alert_rules.create_rule(
            session,
            OPERATOR,
            company_id=harness.team.company_id,
            kind="station_offline",
            threshold_minutes=10,
            recipients="ops@acme.test",
            now=harness.clock.now(),
        )
        session.add(
            MailSettings(
                company_id=harness.team.company_id,
                host="127.0.0.1",
                port=free_port(),
                tls="none",
                sender="alerts@acme.test",
                version=1,
                updated_at=harness.clock.now(),
            )
        )
        session.add(
            StationPresence(
                station_id="ST-7",
                connected=False,
                connected_at=harness.clock.now(),
                disconnected_at=harness.clock.now(),
            )
        )
    harness.clock.advance(600)
    await AlertEvaluator(harness.store, harness.clock).run_once()
    cipher = harness.console.credential_cipher
    assert cipher is not None
    await AlertMailer(harness.store, harness.clock, cipher, "process-1", timeout=30.0).run_once()

    client = await harness.signed_in("admin@acme.test")
    assert (await client.get("/console/alerts/badge")).text.strip() == '<span class="badge">1 open</span>'
    page = (await client.get("/console/alerts")).text
    assert "Station offline: station ST-7 at Depot" in page
    assert "not sent</span> after 1 attempt: could not reach 127.0.0.1:" in page
    alert_id = re.search(r'action="/console/alerts/(\d+)/acknowledge"', page)
    assert alert_id is not None
    assert (await post(client, f"/console/alerts/{alert_id.group(1)}/acknowledge")).status_code == 303
    assert "admin@acme.test" in (await client.get("/console/alerts")).text
    again = await post(client, f"/console/alerts/{alert_id.group(1)}/acknowledge")
    assert again.status_code == 409
    (record,) = await records(harness, action="alert.acknowledge")
    assert record.object_id == alert_id.group(1) and record.actor == "operator admin@acme.test"

    stranger = await harness.signed_in("owner@other.test")
    assert (await post(stranger, f"/console/alerts/{alert_id.group(1)}/acknowledge")).status_code == 404
    assert "ST-7" not in (await stranger.get("/console/alerts")).text


async def test_an_alert_change_without_the_csrf_token_is_refused(harness: ConsoleHarness) -> None:
    client = await harness.signed_in("owner@acme.test")
    data = {"kind": "station_offline", "threshold": "10", "recipients": "ops@acme.test"}
    for path in ("/console/alerts/rules", "/console/alerts/mail-server", "/console/alerts/1/acknowledge"):
        refused = await client.post(path, data=data, headers=ORIGIN)
        assert refused.status_code == 403, path
    assert await records(harness, action="alert_rule.create") == []
