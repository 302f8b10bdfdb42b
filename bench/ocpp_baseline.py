"""The baseline the edge benchmarks compare with: a bare `websockets` OCPP responder with the same Basic-auth check
(keyed hash, constant time) and the same strict schema validation of each CALL, in the generation the connection
negotiated (OCPP 1.6J or 2.0.1), answering from memory, storing nothing. Run as
`python -m bench.ocpp_baseline PORT KEYS_HEX`."""

from __future__ import annotations

import asyncio
import base64
import gc
import hashlib
import hmac
import json
import sys
from datetime import UTC, datetime
from http import HTTPStatus

from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from chargenet.edge.ocpp16.frames import validate_payload

KEY = b"baseline-hash-key"
# A CALL's schema name and the generation of its schemas, by subprotocol.
SCHEMAS = {"ocpp1.6": ("{}", "v16"), "ocpp2.0.1": ("{}Request", "v201")}


def _hash(secret: bytes) -> str:
    return hmac.new(KEY, secret, hashlib.sha256).hexdigest()


def main() -> None:
    port, password = int(sys.argv[1]), sys.argv[2].encode()
    if "--no-collections" in sys.argv[3:]:
        # For the generations benchmark, which sets one generation against the other: a step of a fifth of a second
        # that met one of this process's collections (tens of milliseconds, wherever its allocations reached the
        # threshold) measured it rather than the responder. Its cycles live as long as the benchmark. The edge
        # benchmark, which sets the edge against this responder, keeps its collections, as the edge serves.
        gc.disable()
    stored = _hash(password)

    def check(connection: ServerConnection, request: Request) -> Response | None:
        station_id = request.path.rsplit("/", 1)[-1]
        header = request.headers.get("Authorization", "")
        try:
            user, _, key = base64.b64decode(header[6:]).partition(b":")
        except ValueError:
            return connection.respond(HTTPStatus.UNAUTHORIZED, "")
        if user != station_id.encode() or not hmac.compare_digest(_hash(key), stored):
            return connection.respond(HTTPStatus.UNAUTHORIZED, "")
        return None

    async def handle(connection: ServerConnection) -> None:
        schema, generation = SCHEMAS[connection.subprotocol or "ocpp1.6"]
        transactions = 0
        async for message in connection:
            frame = json.loads(message)
            validate_payload(schema.format(frame[2]), frame[3], generation)
            now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
            answer: dict[str, object] = {}
            if frame[2] == "Heartbeat":
                answer = {"currentTime": now}
            elif frame[2] == "BootNotification":
                answer = {"status": "Accepted", "currentTime": now, "interval": 300}
            elif frame[2] == "StartTransaction":
                transactions += 1
                answer = {"transactionId": transactions, "idTagInfo": {"status": "Accepted"}}
            elif frame[2] == "TransactionEvent" and "idToken" in frame[3]:
                answer = {"idTokenInfo": {"status": "Accepted"}}
            await connection.send(json.dumps([3, frame[1], answer]))

    async def run() -> None:
        # The edge's uvicorn listens with a backlog of 2,048; asyncio's default of 100 overflowed under 200
        # handshakes at once, and each handshake whose SYN was dropped waited a second for its retry: a connecting
        # step against this server measured those seconds, not the server.
        async with serve(
            handle,
            "127.0.0.1",
            port,
            subprotocols=[Subprotocol(name) for name in SCHEMAS],
            process_request=check,
            backlog=2048,
        ):
            print("ready", flush=True)
            await asyncio.Future()

    asyncio.run(run())


if __name__ == "__main__":
    main()
