"""`chargenet admin station-ca` and a station's `--security-profile` as an operator types them."""

from __future__ import annotations

from pathlib import Path

from tests.integration.cli.helpers import Cli, company_and_site
from tests.support.certificates import issue, make_ca


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
