"""A pytest plugin: a test fails when the server log it produced holds a traceback it did not expect.

Tracebacks reach the log in two ways: a log record with exception info, from a server running in the test's own
process (uvicorn, the edge, the webhook engine); and "Traceback (most recent call last)" in the output of a process
the test started (`chargenet serve`), which pytest captures with the test's stderr and stdout. Both end up in the
test's report sections, which this plugin reads after each phase (setup, call, teardown). A test that provokes one
on purpose says so:

    @pytest.mark.expected_traceback("RuntimeError: a bug of ours")   # each traceback must show this text
    @pytest.mark.expected_traceback()                                # any traceback

Registered in tests/conftest.py; with pytest-xdist each worker checks its own tests.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Generator, Iterable

import pytest

MARKER = "expected_traceback"
TRACEBACK = "Traceback (most recent call last)"
# The end of one traceback block: the exception line, the first unindented line after the frames.
_BLOCK_END = re.compile(r"^\S.*$", re.MULTILINE)


def traceback_blocks(text: str) -> list[str]:
    """Each traceback in `text`, from its header to its exception line (chained ones each count)."""
    blocks = []
    start = text.find(TRACEBACK)
    while start != -1:
        body_start = text.find("\n", start)
        body_start = len(text) if body_start == -1 else body_start + 1
        end_match = _BLOCK_END.search(text, body_start)
        end = len(text) if end_match is None else end_match.end()
        blocks.append(text[start:end])
        start = text.find(TRACEBACK, end)
    return blocks


def unexpected(blocks: Iterable[str], expected: list[str] | None) -> list[str]:
    """The blocks the test did not expect: all of them without the marker; with it, those that show none of its
    texts (no texts: none)."""
    if expected is None:
        return list(blocks)
    if not expected:
        return []
    return [block for block in blocks if not any(text in block for text in expected)]


def _expected(item: pytest.Item) -> list[str] | None:
    markers = list(item.iter_markers(MARKER))
    if not markers:
        return None
    texts: list[str] = []
    for marker in markers:
        if not marker.args:
            return []
        texts.extend(str(arg) for arg in marker.args)
    return texts


class _ExceptionRecords(logging.Handler):
    """Counts log records carrying exception info at WARNING and above, whatever handlers pytest installed."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[0] is not None:
            self.records.append(record)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*texts): the test provokes a traceback in the server log on purpose; each one must show one of the"
        " texts (none given: any)",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    records: _ExceptionRecords | None = item.stash.get(_HANDLER, None)
    logged = []
    if records is not None:
        formatter = logging.Formatter("%(levelname)s %(name)s %(message)s")
        logged = [formatter.format(record) for record in records.records]
        records.records.clear()
    # A report carries the captured output of the phases before it too: only this phase's is read.
    captured = [content for title, content in report.sections if title.endswith(f" {report.when}")]
    text = "\n".join([*logged, *captured])
    found = unexpected(traceback_blocks(text), _expected(item))
    if found and report.outcome != "failed":
        report.outcome = "failed"
        shown = "\n\n".join(block[-2000:] for block in found[:3])
        report.longrepr = (
            f"{len(found)} unexpected traceback(s) in the server log during {report.when}"
            f" (mark the test @pytest.mark.{MARKER}(...) if it provokes them on purpose):\n\n{shown}"
        )


_HANDLER = pytest.StashKey[_ExceptionRecords]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    handler = _ExceptionRecords()
    item.stash[_HANDLER] = handler
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
