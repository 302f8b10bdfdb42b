"""How a simulated station of either generation uploads the log asked of it: its file PUT to the location given
(a directory: the station adds its file name), over https with the station's trust when it has one."""

from __future__ import annotations

from ssl import SSLContext
from urllib.parse import quote

import httpx

UPLOAD_TIMEOUT = 30.0


def log_content(station_id: str, requested: str) -> bytes:
    """A small log, as a station's diagnostics would read."""
    return f"station {station_id}\nlog requested at {requested}\nall connectors nominal\n".encode()


async def upload_log(location: str, file_name: str, content: bytes, tls: SSLContext | None = None) -> int:
    """The upload's HTTP status, or 0 when nothing answered."""
    url = location.rstrip("/") + "/" + quote(file_name)
    try:
        async with httpx.AsyncClient(verify=tls or True, timeout=UPLOAD_TIMEOUT) as client:
            response = await client.put(url, content=content)
    except httpx.HTTPError:
        return 0
    return response.status_code
