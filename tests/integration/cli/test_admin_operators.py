"""`chargenet admin operator ...`: the first owner is made from the command line, with the password on stdin."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from chargenet.cli.admin import operators as operator_cli
from chargenet.cli.main import main
from chargenet.services import operators
from chargenet.store.db import Store
from tests.integration.cli.conftest import cli  # noqa: F401 - a fixture
from tests.support import operators as operator_support

pytestmark = pytest.mark.sqlite_only(reason="the command line's arguments, output and exit codes")


@pytest.fixture(autouse=True)
def cheap_passwords(monkeypatch: pytest.MonkeyPatch) -> None:
    cheap = operator_support.cheap_passwords()
    monkeypatch.setattr(operator_cli, "passwords", lambda: cheap)


async def test_an_owner_is_created_listed_demoted_and_disabled(cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    monkeypatch.setattr("sys.stdin", io.StringIO("correct horse battery\n"))
    created = await cli(
        "admin", "operator", "create", "--company", company["id"], "--email", "Ana@Acme.test", "--role", "owner",
        "--password-stdin", "--json",
    )  # fmt: skip
    assert created.code == 0, created.err
    assert set(created.json()) == {"id"}
    monkeypatch.setattr("sys.stdin", io.StringIO("another long password\n"))
    second = (
        await cli(
            "admin", "operator", "create", "--company", company["id"], "--email", "bo@acme.test", "--role", "owner",
            "--password-stdin", "--json",
        )
    ).json()  # fmt: skip
    listing = (await cli("admin", "operator", "list", "--company", company["id"], "--json")).json()
    assert [(o["email"], o["role"], o["enabled"]) for o in listing["items"]] == [
        ("ana@acme.test", "owner", True),
        ("bo@acme.test", "owner", True),
    ]
    assert "password" not in str(listing).lower()
    assert (await cli("admin", "operator", "set-role", second["id"], "viewer", "--json")).json()["role"] == "viewer"
    assert (await cli("admin", "operator", "disable", second["id"], "--json")).json()["enabled"] is False


async def test_a_short_password_is_refused_with_exit_code_2(cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    refused = await cli(
        "admin", "operator", "create", "--company", company["id"], "--email", "a@acme.test", "--role", "owner",
        "--password-stdin",
    )  # fmt: skip
    assert refused.code == 2 and "at least 12 characters" in refused.err


async def test_the_last_enabled_owner_cannot_be_disabled(cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    monkeypatch.setattr("sys.stdin", io.StringIO("correct horse battery\n"))
    owner = (
        await cli(
            "admin", "operator", "create", "--company", company["id"], "--email", "a@acme.test", "--role", "owner",
            "--password-stdin", "--json",
        )
    ).json()  # fmt: skip
    refused = await cli("admin", "operator", "disable", owner["id"])
    assert refused.code == 5 and "without an enabled owner" in refused.err


async def test_an_operator_signs_in_with_the_password_from_a_file(cli, store: Store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    company = (await cli("admin", "company", "create", "Acme", "--json")).json()
    path = tmp_path / "password"
    path.write_text("correct horse battery\n")
    created = await cli(
        "admin", "operator", "create", "--company", company["id"], "--email", "a@acme.test", "--role", "owner",
        "--password-file", str(path), "--json",
    )  # fmt: skip
    assert created.code == 0, created.err
    signed_in = await operators.sign_in(
        store.transaction, operator_cli.passwords(), email="a@acme.test", password="correct horse battery"
    )
    assert signed_in.id == created.json()["id"]


def test_an_operator_password_is_never_an_argument(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["admin", "operator", "password", "op_x", "--password", "correct horse battery"])
    assert exited.value.code == 2
    assert "argument --password: is never an argument" in capsys.readouterr().err
