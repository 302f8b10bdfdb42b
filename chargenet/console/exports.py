"""Downloads of whole lists (CSV and NDJSON), streamed: rows are written as the service reads them, in chunks, so
memory stays bounded whatever the list's length.

CSV cells that a spreadsheet would read as a formula are defused as OWASP advises: a text cell starting with
`=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'` (quoting alone does not stop a formula).
Numbers the console writes itself are left as numbers. Instants are written in the reader's zone with their numeric
offset (`2026-10-25T02:30:00+01:00`), so a spreadsheet reads the reader's wall clock and a program the instant.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from starlette.responses import StreamingResponse

from chargenet.domain.local_time import LocalTime

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CHUNK = 64 * 1024  # bytes gathered before they are sent

Cell = str | int | float | bool | datetime | None


def spreadsheet_safe(text: str) -> str:
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _cell(value: Cell, reads_in: LocalTime) -> str | int | float:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return value
    if isinstance(value, datetime):
        return reads_in.iso(value)
    return spreadsheet_safe(value)


async def csv_chunks(
    header: Sequence[str], rows: AsyncIterable[Sequence[Cell]], *, reads_in: LocalTime
) -> AsyncIterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([spreadsheet_safe(name) for name in header])
    async for row in rows:
        writer.writerow([_cell(value, reads_in) for value in row])
        if buffer.tell() >= CHUNK:
            yield buffer.getvalue().encode()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode()


async def ndjson_chunks(rows: AsyncIterable[dict[str, Any]]) -> AsyncIterator[bytes]:
    parts: list[str] = []
    size = 0
    async for row in rows:
        line = json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"
        parts.append(line)
        size += len(line)
        if size >= CHUNK:
            yield "".join(parts).encode()
            parts, size = [], 0
    yield "".join(parts).encode()


def download(chunks: AsyncIterator[bytes], filename: str, media_type: str) -> StreamingResponse:
    disposition = f"attachment; filename*=UTF-8''{quote(filename, safe='')}"
    return StreamingResponse(chunks, media_type=media_type, headers={"Content-Disposition": disposition})
