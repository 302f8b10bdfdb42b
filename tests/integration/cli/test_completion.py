"""`chargenet completion SHELL` prints a script generated from the command line's parser; sourced in a real
bash, it completes commands, nested verbs and options as bash asks a completion function to."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# Its tests share one module-scoped server: one worker runs them all (make test distributes by group).
pytestmark = pytest.mark.xdist_group("completion")

ROOT = Path(__file__).resolve().parents[3]

# What bash does at a <Tab>: it sets COMP_WORDS, COMP_CWORD, COMP_LINE and COMP_POINT, then calls the function
# that `complete -F` registered for the command, which leaves its candidates in COMPREPLY.
COMPLETE = """
source "$1"
shift
spec=$(complete -p chargenet)
function=${spec##*-F }
function=${function%% *}
COMP_WORDS=("$@")
COMP_CWORD=$(( $# - 1 ))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
"$function" chargenet "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\\n' "${COMPREPLY[@]}"
"""


def completion_script(shell: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "chargenet", "completion", shell],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return done.stdout


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "chargenet.bash"
    path.write_text(completion_script("bash"))
    return path


def complete(script: Path, *words: str) -> list[str]:
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run(
        [bash, "--norc", "--noprofile", "-c", COMPLETE, "complete", str(script), "chargenet", *words],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def test_the_bash_script_registers_a_completion_function_for_chargenet(bash_script: Path) -> None:
    assert "complete -o bashdefault -F _shtab_chargenet chargenet" in bash_script.read_text()


def test_bash_completes_a_command(bash_script: Path) -> None:
    assert complete(bash_script, "ad") == ["admin"]


def test_bash_offers_every_command_on_an_empty_word(bash_script: Path) -> None:
    assert set(complete(bash_script, "")) >= {"serve", "migrate", "demo", "admin", "partner", "completion"}


def test_bash_completes_a_nested_verb(bash_script: Path) -> None:
    assert complete(bash_script, "admin", "deadl") == ["deadletter"]


def test_bash_completes_an_option_of_a_command(bash_script: Path) -> None:
    assert complete(bash_script, "serve", "--webhook-allow") == ["--webhook-allow-private"]


def test_bash_offers_the_choices_of_an_option(bash_script: Path) -> None:
    assert complete(bash_script, "admin", "webhook", "create", "--auth", "") == ["none", "basic", "oauth2", "token"]


def test_the_zsh_script_is_a_compdef_for_chargenet() -> None:
    assert completion_script("zsh").startswith("#compdef chargenet")


def test_an_unknown_shell_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chargenet", "completion", "cmd.exe"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2
    assert "invalid choice" in done.stderr
