"""The WebSocket protocol under the one ASGI app: uvicorn's, also telling the edge when a station sends anything.

ASGI gives an application text and binary messages only; pings, pongs and the frames of a message still being
assembled never reach it. OCPP-J 1.6 §5.3 lets a station keep its connection alive with WebSocket pings in place
of most Heartbeats, so the idle check has to hear those too. This protocol puts an `Activity` in the scope under
the extension `ACTIVITY_EXTENSION`; the station endpoint sets its listener, which hears every chunk of bytes the
peer sends. Under another ASGI server the extension is absent and only messages count.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
from websockets.frames import CloseCode
from websockets.http11 import Request
from websockets.server import ServerProtocol

from chargenet.edge.tls import peer_certificate_pem

log = logging.getLogger(__name__)

ACTIVITY_EXTENSION = "chargenet.activity"
# The address the connection came from, as the socket has it: what a proxy's headers may replace in the scope's
# `client` is kept here, so that a header only a trusted proxy may set is believed from a trusted proxy alone.
PEER_EXTENSION = "chargenet.peer"


class Activity:
    __slots__ = ("listener",)

    def __init__(self) -> None:
        self.listener: Callable[[], None] | None = None

    def heard(self) -> None:
        if self.listener is not None:
            self.listener()


def tls_extension(ssl_object: Any) -> dict[str, Any]:
    """The ASGI `tls` extension of a TLS connection: the client's certificate (PEM) in `client_cert_chain`."""
    shown = peer_certificate_pem(ssl_object)
    return {"server_cert": None, "client_cert_chain": [shown] if shown else [], "client_cert_name": None}


def client_certificate_of(scope: dict[str, Any] | Any) -> str | None:
    """The client's certificate (PEM) the scope's `tls` extension carries; None: no TLS here, or none shown."""
    chain = ((scope.get("extensions") or {}).get("tls") or {}).get("client_cert_chain") or []
    return chain[0] if chain and isinstance(chain[0], str) else None


def peer_address_of(scope: dict[str, Any] | Any) -> str | None:
    """The address the connection came from, before any proxy header replaced the scope's `client`."""
    found = ((scope.get("extensions") or {}).get(PEER_EXTENSION) or {}).get("client")
    return str(found[0]) if found else None


def activity_of(scope: dict[str, Any] | Any) -> Activity | None:
    """The `Activity` a connection's scope carries, if its server provides one."""
    extension = (scope.get("extensions") or {}).get(ACTIVITY_EXTENSION) or {}
    found = extension.get("activity")
    return found if isinstance(found, Activity) else None


# What this process sends stations is short answers to their CALLs. A 1 KiB window and zlib's memLevel 2 still
# compress them to about a fifth (a seventh with the 4 KiB window and memLevel 5 that websockets and uvicorn
# choose) for 12 KiB of compressor state a connection instead of 38 KiB: 260 MB at 10,000 stations. What a station
# sends, meter values above all, is compressed by the station's own window, which these do not change.
SERVER_WINDOW_BITS = 10
SERVER_MEMORY_LEVEL = 2

# uvicorn stops reading a connection as soon as one message waits for the application, and starts again when the
# application takes it: two epoll_ctl calls for every message a station sends (6 % of the event loop's time under a
# flood of StatusNotifications). A station normally sends one CALL and waits for its answer, so reading stops
# only once this many messages wait; the bound on what one connection holds unread is this many frames.
UNREAD_LIMIT = 4


def station_deflate() -> ServerPerMessageDeflateFactory:
    """permessage-deflate (RFC 7692) as this server offers it to stations."""
    return ServerPerMessageDeflateFactory(
        server_max_window_bits=SERVER_WINDOW_BITS,
        client_max_window_bits=12,
        compress_settings={"memLevel": SERVER_MEMORY_LEVEL},
    )


def _utf8(parts: list[bytes]) -> bool:
    """Whether a message's fragments are UTF-8 together (a character may be split between two fragments)."""
    message = parts[0] if len(parts) == 1 else b"".join(parts)
    try:
        message.decode()
    except UnicodeDecodeError:
        return False
    return True


class StationWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's `websockets-sansio` protocol, reporting every chunk received to the connection's `Activity`, with
    a smaller compressor (`station_deflate`) and reading paused only past `UNREAD_LIMIT` waiting messages."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.config.ws_per_message_deflate:
            # Replaced before any byte arrived: the extension is only negotiated in the handshake. The arguments
            # are uvicorn's own (0.54) but the extension; the one replaced is let go without its parser's cycle.
            self.conn.parser = None  # type: ignore[assignment]
            self.conn = ServerProtocol(
                extensions=[station_deflate()],
                max_size=self.config.ws_max_size,
                logger=self.conn.logger,
            )
        self._activity = Activity()

    def data_received(self, data: bytes) -> None:
        self._activity.heard()
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        # websockets' parser is a generator whose frame holds the protocol that holds it: a reference cycle
        # keeping the connection's buffers, extensions and compressor for the garbage collector's full pass,
        # which took seconds after thousands of stations dropped at once. Nothing is parsed after the loss.
        self.conn.parser = None  # type: ignore[assignment]

    def send_receive_event_to_app(self) -> None:
        if self.curr_msg_data_type == "text" and not self.close_sent and not _utf8(self.frames):
            # RFC 6455 §8.1: close with 1007. uvicorn does the same but logs a traceback for it, one per hostile
            # frame; a station's bad frame is worth one line, not an error of ours.
            self.frames = []
            log.warning(
                "closing a connection: a text frame that is not UTF-8 (1007)",
                extra={"fields": {"path": (getattr(self, "scope", None) or {}).get("path")}},
            )
            self.conn.send_close(CloseCode.INVALID_DATA, "text frame not UTF-8")
            self.handle_parser_exception()
            return
        paused = self.read_paused
        self.read_paused = True  # so the call below does not stop reading after this one message
        super().send_receive_event_to_app()
        self.read_paused = paused
        if not paused and self.queue.qsize() >= UNREAD_LIMIT:
            # Resumed by uvicorn's `receive` once the application has taken every message.
            self.read_paused = True
            self.transport.pause_reading()

    def handle_connect(self, event: Request) -> None:
        super().handle_connect(event)
        # The application task was only scheduled by the call above, so it sees the scope with the extension.
        scope = getattr(self, "scope", None)
        if scope is not None:
            extensions: dict[str, Any] = scope.setdefault("extensions", {})
            extensions[ACTIVITY_EXTENSION] = {"activity": self._activity}
            extensions[PEER_EXTENSION] = {"client": self.client}
            if self.scheme == "wss":
                extensions["tls"] = tls_extension(self.transport.get_extra_info("ssl_object"))
