"""`--X`, `--X-stdin` and `--X-file` of the command line's secret options, parsed and resolved without a store."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from chargenet.cli.secret_options import add_secret_option, resolve_secrets
from chargenet.errors import ConfigurationError, InvalidInput


def parser(*, plain: bool = True) -> argparse.ArgumentParser:
    built = argparse.ArgumentParser(prog="chargenet")
    add_secret_option(built, "--password", help="the key", plain=plain)
    add_secret_option(built, "--upstream-password", help="the upstream key")
    return built


def resolved(*argv: str, stdin: str = "", plain: bool = True) -> argparse.Namespace:
    args = parser(plain=plain).parse_args(argv)
    resolve_secrets(args, io.StringIO(stdin))
    return args


def secret_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "secret"
    path.write_text(text)
    return str(path)


def test_the_plain_option_gives_its_value() -> None:
    assert resolved("--password", "from-argv").password == "from-argv"


def test_stdin_gives_the_secret_without_its_final_newline() -> None:
    assert resolved("--password-stdin", stdin="from stdin\n").password == "from stdin"


def test_a_file_gives_the_secret_without_its_final_newline(tmp_path: Path) -> None:
    path = secret_file(tmp_path, "from a file\n")
    assert resolved("--password-file", path).password == "from a file"


def test_only_one_final_newline_is_dropped(tmp_path: Path) -> None:
    path = secret_file(tmp_path, "two lines\n\n")
    assert resolved("--password-file", path).password == "two lines\n"


def test_a_secret_not_given_is_none() -> None:
    args = resolved()
    assert (args.password, args.upstream_password) == (None, None)


@pytest.mark.parametrize(
    "argv",
    [
        ["--password", "x", "--password-file", "f"],
        ["--password", "x", "--password-stdin"],
        ["--password-stdin", "--password-file", "f"],
    ],
)
def test_two_sources_of_one_secret_are_a_usage_error_naming_both(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parser().parse_args(argv)
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert all(flag in error for flag in argv if flag.startswith("--"))


def test_an_empty_secret_on_stdin_is_refused_naming_the_option() -> None:
    with pytest.raises(InvalidInput) as refused:
        resolved("--password-stdin", stdin="\n")
    assert refused.value.field == "--password-stdin"


def test_an_empty_plain_secret_is_refused_naming_the_option() -> None:
    with pytest.raises(InvalidInput) as refused:
        resolved("--upstream-password", "")
    assert refused.value.field == "--upstream-password"


def test_an_empty_file_is_refused_naming_the_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as refused:
        resolved("--password-file", secret_file(tmp_path, "\n"))
    assert refused.value.setting == "--password-file"


def test_a_missing_file_is_refused_naming_the_option_and_the_path(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere")
    with pytest.raises(ConfigurationError) as refused:
        resolved("--password-file", missing)
    assert refused.value.setting == "--password-file"
    assert missing in refused.value.message


def test_two_secrets_on_stdin_are_refused_naming_both() -> None:
    with pytest.raises(InvalidInput) as refused:
        resolved("--password-stdin", "--upstream-password-stdin", stdin="a\nb\n")
    assert refused.value.field == "--password-stdin, --upstream-password-stdin"


def test_one_secret_from_stdin_and_another_from_a_file(tmp_path: Path) -> None:
    args = resolved("--password-stdin", "--upstream-password-file", secret_file(tmp_path, "b"), stdin="a")
    assert (args.password, args.upstream_password) == ("a", "b")


def test_a_secret_without_a_plain_option_refuses_it_as_an_argument_naming_the_others(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        parser(plain=False).parse_args(["--password", "x"])
    assert exited.value.code == 2
    assert "use --password-stdin or --password-file" in capsys.readouterr().err


def test_a_secret_without_a_plain_option_still_comes_from_stdin() -> None:
    assert resolved("--password-stdin", stdin="piped\n", plain=False).password == "piped"


def test_a_terminal_is_asked_for_the_secret_without_echo(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    prompts: list[str] = []
    monkeypatch.setattr("getpass.getpass", lambda prompt: prompts.append(prompt) or "typed")
    args = parser().parse_args(["--upstream-password-stdin"])
    resolve_secrets(args, Terminal())
    assert (args.upstream_password, prompts) == ("typed", ["upstream password: "])
