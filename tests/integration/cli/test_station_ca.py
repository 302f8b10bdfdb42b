"""`chargenet admin station-ca`, a station's `--security-profile` and its certificates, as an operator types them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.cli.helpers import Cli, company_and_site
from tests.support.certificates import issue, make_ca

pytestmark = pytest.mark.sqlite_only(reason="the command line's arguments, output and exit codes")


async def test_a_station_ca_is_imported_shown_and_a_bad_import_is_refused_naming_the_file(
    cli: Cli, tmp_path: Path
) -> None:
    company, _ = await company_and_site(cli)
    own = make_ca("Acme's own CA")
    cert, key = own.write(tmp_path / "ca", "own")
    _, leaf_key = issue(own, "CS-1").write(tmp_path / "ca", "leaf")

    missing = await cli("admin", "station-ca", "show", "--company", company)
    assert missing.code == 4 and "station CA" in missing.err
    refused = await cli(
        "admin", "station-ca", "import", "--company", company, "--cert", str(cert), "--key-file", str(leaf_key)
    )
    assert refused.code == 2 and "--key-file" in refused.err and "not the certificate's private key" in refused.err

    imported = await cli(
        "admin", "station-ca", "import", "--company", company, "--cert", str(cert), "--key-file", str(key), "--json"
    )
    assert imported.code == 0, imported.err
    shown = (await cli("admin", "station-ca", "show", "--company", company, "--json")).json()
    assert shown["subject"] == "CN=Acme's own CA" and shown["fingerprint"] == imported.json()["fingerprint"]
    assert shown["certificate"] == own.certificate_pem.decode()


async def test_a_stations_profile_is_raised_and_a_profile_needing_a_key_is_refused_without_one(cli: Cli) -> None:
    _, site = await company_and_site(cli)
    await cli("admin", "station", "create", "--site", site, "ST-OPEN")
    needs_key = await cli("admin", "station", "update", "ST-OPEN", "--security-profile", "2")
    assert needs_key.code == 2 and "needs an authorization key" in needs_key.err
    raised = await cli("admin", "station", "update", "ST-OPEN", "--security-profile", "3", "--json")
    assert raised.code == 0 and raised.json()["securityProfile"] == 3
    lowered = await cli("admin", "station", "update", "ST-OPEN", "--security-profile", "0", "--json")
    assert lowered.code == 0 and lowered.json()["securityProfile"] == 0  # the local operator holds the keys anyway


async def test_the_certificates_cn_may_be_a_serial_number_and_its_o_the_companys_organisation_name(cli: Cli) -> None:
    company, site = await company_and_site(cli)
    await cli("admin", "station", "create", "--site", site, "ST-1")
    serial = await cli("admin", "station", "update", "ST-1", "--serial-number", "SN-0042", "--json")
    assert serial.code == 0 and serial.json()["serialNumber"] == "SN-0042"
    named = await cli("admin", "company", "update", company, "--organisation-name", "Acme Charging NV", "--json")
    assert named.code == 0 and named.json()["organisationName"] == "Acme Charging NV"
    nothing = await cli("admin", "company", "update", company)
    assert nothing.code == 2 and "--organisation-name" in nothing.err


async def test_a_stations_certificates_are_listed_and_its_sites_csrs_relayed_only_with_an_upstream_whose_ca_it_trusts(
    cli: Cli, tmp_path: Path
) -> None:
    _, site = await company_and_site(cli)
    await cli("admin", "station", "create", "--site", site, "ST-1")
    assert (await cli("admin", "station", "certificates", "ST-1", "--json")).json() == {"items": []}
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate")
    refused = await cli(
        "admin",
        "station",
        "install-certificate",
        "ST-1",
        "--type",
        "ManufacturerRootCertificate",
        "--cert",
        str(garbage),
    )
    assert refused.code == 2 and "not a PEM certificate" in refused.err

    no_upstream = await cli("admin", "site", "station-csrs", site, "relay")
    assert no_upstream.code == 2 and "upstream" in no_upstream.err
    await cli("admin", "site", "update", site, "--upstream-url", "wss://cpo.example/ocpp")
    relayed = await cli("admin", "site", "station-csrs", site, "relay", "--json")
    assert relayed.code == 0 and relayed.json() == {"site_id": site, "station_csrs": "relay"}
    kept = await cli("admin", "station", "request-csr", "ST-1")
    assert kept.code != 0 and "relays its CSRs" in kept.err
    upstream = make_ca("Upstream CPO CA")
    ca_file, _ = upstream.write(tmp_path / "upstream", "ca")
    leaf_file, _ = issue(upstream, "ST-1").write(tmp_path / "upstream", "leaf")
    not_a_ca = await cli("admin", "station-ca", "import-upstream", "--site", site, "--cert", str(leaf_file))
    assert not_a_ca.code == 2 and "not a CA certificate" in not_a_ca.err
    trusted = await cli("admin", "station-ca", "import-upstream", "--site", site, "--cert", str(ca_file), "--json")
    assert trusted.code == 0 and trusted.json()["subject"] == "CN=Upstream CPO CA"
