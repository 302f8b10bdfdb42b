"""Structured logs: one line per record, plain for people or JSON for collectors.

Extra fields passed with `logger.info(..., extra={"fields": {...}})` appear as key=value pairs or JSON keys, and so
do the request id and station id of the work a line was logged for (`chargenet.observability.log_context`).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from chargenet.observability.log_context import ContextFilter

_RESERVED = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(_fields(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class PlainFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        fields = " ".join(f"{key}={value}" for key, value in _fields(record).items())
        line = f"{stamp} {record.levelname:<7} {record.name}: {record.getMessage()}"
        if fields:
            line = f"{line} {fields}"
        if record.exc_info:
            line = f"{line}\n{self.formatException(record.exc_info)}"
        return line


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = getattr(record, "fields", None)
    extra = {k: v for k, v in record.__dict__.items() if k not in _RESERVED and k != "fields"}
    if isinstance(fields, dict):
        extra.update(fields)
    return extra


def configure_logging(log_format: str = "plain", level: str = "info") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else PlainFormatter())
    # On the handler, not a logger: a logger's filters do not see the records its children propagate.
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Alembic narrates every migration context at INFO; the schema outcome is reported by chargenet itself.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    # Client libraries log every request and connection at INFO; chargenet logs what matters itself.
    for name in ("httpx", "httpcore", "websockets", "pymodbus"):
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
