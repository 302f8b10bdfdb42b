"""What every simulated station shares whatever OCPP generation it speaks: a real WebSocket client to
`{base_url}/{stationId}` with HTTP Basic auth, and OCPP-J's RPC framing (CALL, CALLRESULT, CALLERROR).

It speaks OCPP-J by hand (plain JSON over `websockets`) rather than through chargenet's own RPC code, so that
tests of the edge are not the edge talking to itself. A generation's station (station.py for 1.6, ocpp201/station.py
for 2.0.1) adds its messages, its answers to the central system's commands, and may check its frames.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from ssl import SSLContext
from typing import Any, ClassVar

from websockets.asyncio.client import ClientConnection, connect
from websockets.protocol import State
from websockets.typing import Subprotocol

Payload = dict[str, Any]
CallHandler = Callable[[Payload], Awaitable[Payload] | Payload]
log = logging.getLogger(__name__)


class StationCallError(Exception):
    """The central system answered a CALL with a CALLERROR."""

    def __init__(self, action: str, code: str, description: str, details: Payload) -> None:
        super().__init__(f"{action}: {code} {description}")
        self.action, self.code, self.description, self.details = action, code, description, details


class AnswerWithError(Exception):
    """Raised by an answer handler: the station answers the CALL with this CALLERROR instead of a result."""

    def __init__(self, code: str, description: str = "") -> None:
        super().__init__(f"{code}: {description}")
        self.code, self.description = code, description


class StationConnectionLost(ConnectionError):
    """The connection closed while a CALL waited for its answer; `code` is the close code the central system sent
    (None: it sent no close frame, as when its process ends)."""

    def __init__(self, code: int | None) -> None:
        super().__init__(f"connection closed ({code})" if code is not None else "connection closed")
        self.code = code


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class StationConnection:
    base_url: str  # ws://host:port/ocpp
    station_id: str
    password: str | bytes | None = None
    call_timeout: float = 10.0
    tls: SSLContext | None = None  # for wss://: the certificates to trust (None: the system's)
    answers: dict[str, CallHandler] = field(default_factory=dict)
    received_calls: list[tuple[str, Payload]] = field(default_factory=list)
    sent_errors: list[tuple[str, str]] = field(default_factory=list)  # CALLERRORs the central system answered
    _socket: ClientConnection | None = None
    _reader: asyncio.Task[None] | None = None
    _pending: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=itertools.count)
    _raw: asyncio.Queue[str | bytes] = field(default_factory=asyncio.Queue)
    _after_answer: list[Callable[[], Awaitable[object]]] = field(default_factory=list)
    _last_follow_up: asyncio.Task[None] | None = None

    subprotocol: ClassVar[str]
    # The CALLERROR code for an action the station has no answer for, in the generation's spelling.
    unknown_action_code: ClassVar[str] = "NotSupported"

    # Connection ------------------------------------------------------------------------------------------

    def headers(self) -> dict[str, str]:
        if self.password is None:
            return {}
        key = self.password if isinstance(self.password, bytes) else self.password.encode()
        return {"Authorization": "Basic " + base64.b64encode(self.station_id.encode() + b":" + key).decode()}

    async def connect(self, subprotocols: tuple[str, ...] | None = None) -> ClientConnection:
        self._socket = await connect(
            f"{self.base_url.rstrip('/')}/{self.station_id}",
            subprotocols=[Subprotocol(s) for s in subprotocols or (self.subprotocol,)],
            additional_headers=self.headers(),
            open_timeout=10,
            max_size=None,
            ssl=self.tls,
        )
        self._reader = asyncio.create_task(self._read())
        return self._socket

    @property
    def connected(self) -> bool:
        return self._socket is not None and self._socket.state is State.OPEN

    @property
    def socket(self) -> ClientConnection:
        assert self._socket is not None, "not connected"
        return self._socket

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._socket = None

    async def wait_closed(self, within: float = 10) -> int | None:
        """Wait for the central system to close the socket; returns the close code."""
        await asyncio.wait_for(self.socket.wait_closed(), within)
        return self.socket.close_code

    async def _read(self) -> None:
        try:
            async for message in self.socket:
                await self._dispatch(message)
        except Exception:
            log.debug("simulated station connection ended", exc_info=True)
        finally:
            lost = self._lost()
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(lost)
            self._pending.clear()

    def _lost(self) -> Exception:
        """Why the calls still waiting will not be answered."""
        if self._socket is not None and self._socket.state is State.OPEN:
            return RuntimeError("the simulated station stopped reading an open connection")
        received = self._socket.protocol.close_rcvd if self._socket is not None else None
        return StationConnectionLost(received.code if received is not None else None)

    async def _dispatch(self, message: str | bytes) -> None:
        try:
            frame = json.loads(message)
        except ValueError:
            await self._raw.put(message)
            return
        if not isinstance(frame, list) or len(frame) < 3:
            await self._raw.put(message)
            return
        if frame[0] == 2:
            await self._answer(frame[1], frame[2], frame[3])
            return
        future = self._pending.pop(frame[1], None)
        if future is None or future.done():
            await self._raw.put(message)
        elif frame[0] == 3:
            future.set_result(frame[2])
        else:
            future.set_exception(StationCallError(str(frame[1]), frame[2], frame[3], frame[4]))

    async def _answer(self, unique_id: str, action: str, payload: Payload) -> None:
        self.received_calls.append((action, payload))
        handler = self.answers.get(action)
        self._after_answer.clear()
        try:
            self.check_request(action, payload)
            if handler is None:
                raise AnswerWithError(self.unknown_action_code, f"no answer for {action}")
            result = handler(payload)
            if asyncio.iscoroutine(result) or isinstance(result, Awaitable):
                result = await result
            self.check_response(action, result)
        except AnswerWithError as refusal:
            self._after_answer.clear()
            await self.socket.send(json.dumps([4, unique_id, refusal.code, refusal.description, {}]))
            return
        follow_ups, self._after_answer = self._after_answer, []
        await self.socket.send(json.dumps([3, unique_id, result]))
        for follow_up in follow_ups:
            self._follow(follow_up)

    def after_answer(self, follow_up: Callable[[], Awaitable[object]]) -> None:
        """From an answer handler: run `follow_up` once the answer is sent, as a station sends the StatusNotification
        an accepted ChangeAvailability leads to only after accepting it. Follow-ups run one after the other, in the
        order of the answers, as one station's would."""
        self._after_answer.append(follow_up)

    def _follow(self, follow_up: Callable[[], Awaitable[object]]) -> None:
        previous = self._last_follow_up

        async def run() -> None:
            if previous is not None:
                await asyncio.wait([previous])
            try:
                await follow_up()
            except Exception:
                log.exception("simulated station %s: follow-up failed", self.station_id)

        self._last_follow_up = asyncio.create_task(run())

    async def settle(self) -> None:
        """Wait until every follow-up of the answers sent so far has run."""
        while self._last_follow_up is not None and not self._last_follow_up.done():
            await asyncio.wait([self._last_follow_up])

    # What a generation may check (nothing, by default: the 1.6 station sends what tests tell it to) -------

    def check_request(self, action: str, payload: Payload) -> None:
        """A CALL from the central system; raise `AnswerWithError` to refuse it as malformed."""

    def check_response(self, action: str, payload: Payload) -> None:
        """Our answer to a CALL, before it is sent."""

    def check_call(self, action: str, payload: Payload) -> None:
        """A CALL of ours, before it is sent."""

    # Calls -----------------------------------------------------------------------------------------------

    async def call(self, action: str, payload: Payload | None = None) -> Payload:
        """Send a CALL and return the CALLRESULT payload; raises `StationCallError` on a CALLERROR."""
        self.check_call(action, payload or {})
        unique_id = f"{self.station_id}-{next(self._ids)}"
        future: asyncio.Future[Payload] = asyncio.get_running_loop().create_future()
        self._pending[unique_id] = future
        await self.socket.send(json.dumps([2, unique_id, action, payload or {}]))
        try:
            return await asyncio.wait_for(future, self.call_timeout)
        except StationCallError as exc:
            self.sent_errors.append((action, exc.code))
            raise StationCallError(action, exc.code, exc.description, exc.details) from None

    async def send_raw(self, data: str | bytes) -> None:
        await self.socket.send(data)

    async def next_raw(self, within: float = 5) -> Any:
        """The next frame that answered nothing we sent (a CALLERROR to a raw frame, for example), parsed."""
        message = await asyncio.wait_for(self._raw.get(), within)
        return json.loads(message)
