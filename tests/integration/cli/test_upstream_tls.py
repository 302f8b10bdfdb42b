"""`chargenet admin site upstream-tls` as an operator types it: the profile towards the upstream, the client
certificate (its key kept in the keys folder, never in the database or the audit log) and the CA bundle."""

from __future__ import annotations

from pathlib import Path

import pytest

from chargenet.services import audit
from chargenet.services.callers import OPERATOR
from chargenet.services.pages import PageRequest
from chargenet.store.db import Store
from tests.integration.cli.helpers import Cli, company_and_site
from tests.support.certificates import issue, make_ca

pytestmark = pytest.mark.sqlite_only(reason="the command line's arguments, output and exit codes")


async def test_a_sites_upstream_tls_is_set_shown_audited_and_cleared(
    cli: Cli, database_url: str, tmp_path: Path
) -> None:
    company, site = await company_and_site(cli)
    ca = make_ca("Upstream CA")
    certificate, key = issue(ca, "Depot").write(tmp_path / "tls", "client")
    bundle = tmp_path / "tls" / "ca.pem"
    bundle.write_bytes(ca.certificate_pem)
    assert (await cli("admin", "site", "update", site, "--upstream-url", "ws://cpo.example/ocpp")).code == 0

    over_ws = await cli("admin", "site", "upstream-tls", "set", site, "--profile", "2")
    assert over_ws.code == 2 and "needs a wss:// upstream URL" in over_ws.err
    assert (await cli("admin", "site", "update", site, "--upstream-url", "wss://cpo.example/ocpp")).code == 0
    without_certificate = await cli("admin", "site", "upstream-tls", "set", site, "--profile", "3")
    assert without_certificate.code == 2 and "client certificate" in without_certificate.err

    tls = "admin", "site", "upstream-tls", "set", site, "--profile", "3", "--client-cert", str(certificate)
    result = await cli(*tls, "--client-key", str(key), "--ca-bundle", str(bundle), "--json")
    assert result.code == 0, result.err
    shown = (await cli("admin", "site", "upstream-tls", "show", site, "--json")).json()
    assert shown["securityProfile"] == 3 and shown["caBundleCertificates"] == 1
    assert shown["clientCertificate"]["subject"] == "CN=Depot"
    assert (await cli("admin", "site", "show", site, "--json")).json()["upstreamSecurityProfile"] == 3
    back_to_ws = await cli("admin", "site", "update", site, "--upstream-url", "ws://cpo.example/ocpp")
    assert back_to_ws.code == 2 and "needs a wss:// upstream URL" in back_to_ws.err

    cleared = (await cli("admin", "site", "upstream-tls", "clear", site, "--json")).json()
    assert cleared["securityProfile"] == 1 and cleared["clientCertificate"] is None
    assert not (tmp_path / "data" / "keys" / "upstream-tls" / site).exists()

    store = Store(database_url)
    try:
        async with store.transaction() as session:
            found = await audit.list_records(session, OPERATOR, PageRequest(50), company_id=company)
    finally:
        await store.dispose()
    changes = [entry.detail for entry in reversed(found.items) if entry.action == "site.upstream_tls"]
    assert [change["changed"] for change in changes] == ["client certificate, CA bundle, profile", "cleared"]
    assert "PRIVATE KEY" not in repr(found)
