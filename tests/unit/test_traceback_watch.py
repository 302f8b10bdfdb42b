"""The suite's traceback watch (tests/support/tracebacks.py): a test whose server log holds a traceback it did not
expect fails; one marked as expecting it passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tracebacks import traceback_blocks, unexpected

ROOT = Path(__file__).resolve().parents[2]
LOGGED = """
import logging, subprocess, sys
import pytest

log = logging.getLogger("chargenet.somewhere")


def fail_inside():
    try:
        raise RuntimeError("a bug of ours")
    except RuntimeError:
        log.exception("answering a call failed")


def test_logs_a_traceback():
    fail_inside()


@pytest.mark.expected_traceback("RuntimeError: a bug of ours")
def test_expects_it():
    fail_inside()


@pytest.mark.expected_traceback("KeyError")
def test_expects_another():
    fail_inside()


def test_child_process_prints_one():
    subprocess.run([sys.executable, "-c", "raise ValueError('in the child')"], check=False)


def test_warning_without_traceback_is_fine():
    log.warning("just a warning")
"""


@pytest.mark.expected_traceback()  # the inner run's report shows them
def test_unexpected_tracebacks_fail_their_test(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest('pytest_plugins = ["tests.support.tracebacks"]')
    pytester.makepyfile(LOGGED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(["*unexpected traceback(s) in the server log during call*"])
    assert "test_expects_it" not in "\n".join(line for line in result.outlines if line.startswith("FAILED"))


def test_blocks_are_cut_at_their_exception_line() -> None:
    text = "x\nTraceback (most recent call last):\n  File 'a', line 1\n    boom()\nValueError: one\nmore\n"
    assert traceback_blocks(text) == [
        "Traceback (most recent call last):\n  File 'a', line 1\n    boom()\nValueError: one"
    ]


def test_expected_texts_filter_blocks() -> None:
    blocks = ["Traceback ...\nValueError: one", "Traceback ...\nKeyError: two"]
    assert unexpected(blocks, None) == blocks
    assert unexpected(blocks, []) == []
    assert unexpected(blocks, ["KeyError"]) == ["Traceback ...\nValueError: one"]
