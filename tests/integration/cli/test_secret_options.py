"""Secrets given to the real `chargenet` command line on standard input or in a file, never as an argument: they
reach what uses them, and every way of giving one wrongly is a usage error (exit 2) naming the option."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus

from chargenet.cli.main import main
from tests.integration.cli.helpers import company_and_site
from tests.integration.edge.conftest import Served
from tests.support.receiver import run_receiver

pytestmark = pytest.mark.sqlite_only(reason="how the command line takes secrets")

NEW_KEY = "a-new-authorization-key-42"


def secret_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "secret"
    path.write_text(text)
    return str(path)


async def test_a_station_authenticates_with_the_key_from_a_file(cli, served: Served, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = secret_file(tmp_path, NEW_KEY + "\n")
    updated = await cli("admin", "station", "update", "CS-1", "--password-file", path, "--json")
    assert updated.code == 0, updated.err
    station = served.station("CS-1", password=NEW_KEY)
    await station.connect()
    try:
        assert (await station.boot())["status"] == "Accepted"
    finally:
        await station.close()


async def test_a_station_created_with_its_key_on_stdin_refuses_another_key(  # type: ignore[no-untyped-def]
    cli,
    served: Served,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(NEW_KEY + "\n"))
    created = await cli("admin", "station", "create", "--site", served.tenant.site_id, "CS-2", "--password-stdin")
    assert created.code == 0, created.err
    with pytest.raises(InvalidStatus) as refused:
        await served.station("CS-2", password=NEW_KEY + "x").connect()
    assert refused.value.response.status_code == 401
    accepted = served.station("CS-2", password=NEW_KEY)
    await accepted.connect()
    await accepted.close()


async def test_a_webhook_sends_the_basic_password_given_on_stdin(  # type: ignore[no-untyped-def]
    cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CHARGENET_WEBHOOK_ALLOW_PRIVATE", "1")
    _, site = await company_and_site(cli)
    async with run_receiver() as receiver:
        monkeypatch.setattr("sys.stdin", io.StringIO("pass word:with colon\n"))
        created = await cli(
            "admin", "webhook", "create", "--site", site, "--url", receiver.url, "--events", "Authorize",
            "--auth", "basic", "--username", "partner", "--password-stdin", "--json",
        )  # fmt: skip
        assert created.code == 0, created.err
        tested = await cli("admin", "webhook", "test", created.json()["id"], "--json")
    assert tested.json()["delivered"] is True
    expected = base64.b64encode(b"partner:pass word:with colon").decode()
    assert receiver.received[0].headers["authorization"] == f"Basic {expected}"


async def test_a_webhook_sends_the_static_token_from_a_file(  # type: ignore[no-untyped-def]
    cli,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("CHARGENET_WEBHOOK_ALLOW_PRIVATE", "1")
    _, site = await company_and_site(cli)
    async with run_receiver() as receiver:
        created = await cli(
            "admin", "webhook", "create", "--site", site, "--url", receiver.url, "--events", "Authorize",
            "--auth", "token", "--token-file", secret_file(tmp_path, "tok-123\n"), "--json",
        )  # fmt: skip
        assert created.code == 0, created.err
        await cli("admin", "webhook", "test", created.json()["id"], "--json")
    assert receiver.received[0].headers["authorization"] == "Token tok-123"


def test_a_secret_both_as_argument_and_in_a_file_is_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = secret_file(tmp_path, "S3cret-upstream")
    with pytest.raises(SystemExit) as exited:
        main(["admin", "site", "update", "site_x", "--upstream-password", "x", "--upstream-password-file", path])
    error = capsys.readouterr().err
    assert exited.value.code == 2
    assert "argument --upstream-password-file: not allowed with argument --upstream-password" in error


async def test_an_empty_secret_on_stdin_is_refused_naming_the_option(  # type: ignore[no-untyped-def]
    cli,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, site = await company_and_site(cli)
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    refused = await cli("admin", "site", "update", site, "--upstream-password-stdin")
    assert (refused.code, refused.err) == (2, "chargenet: error: --upstream-password-stdin: is empty\n")


async def test_a_missing_secret_file_is_refused_naming_the_option_and_the_path(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    missing = str(tmp_path / "no-such-key")
    refused = await cli("admin", "station", "update", "CS-1", "--password-file", missing)
    assert refused.code == 2
    assert "--password-file" in refused.err and missing in refused.err


def test_the_database_url_comes_from_a_file_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'from-file.db'}"
    flags = ["--database-url-file", secret_file(tmp_path, url + "\n"), "--data-dir", str(tmp_path / "data")]
    assert main(["migrate", *flags]) == 0
    assert (tmp_path / "from-file.db").exists()


def test_the_database_url_comes_from_the_file_its_variable_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'from-env-file.db'}"
    monkeypatch.delenv("CHARGENET_DATABASE_URL", raising=False)
    monkeypatch.setenv("CHARGENET_DATABASE_URL_FILE", secret_file(tmp_path, url + "\n"))
    assert main(["migrate", "--data-dir", str(tmp_path / "data")]) == 0
    assert (tmp_path / "from-env-file.db").exists()


def test_stations_and_the_database_url_cannot_both_come_on_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("sqlite:///x.db\nid\nST-1\n"))
    argv = ["admin", "station", "import", "--site", "site_x", "-", "--database-url-stdin", "--data-dir", str(tmp_path)]
    assert main(argv) == 2
    assert "--database-url-stdin: standard input holds the stations" in capsys.readouterr().err
