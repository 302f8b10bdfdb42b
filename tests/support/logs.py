"""Log records as `chargenet serve` writes them: the context filter on the handler, every record kept."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from chargenet.observability.log_context import ContextFilter


class Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []
        self.addFilter(ContextFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def collected_logs() -> Iterator[list[logging.LogRecord]]:
    """Every record of level INFO and above logged inside the block, as the root handler sees it."""
    handler, root = Collected(), logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield handler.records
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
