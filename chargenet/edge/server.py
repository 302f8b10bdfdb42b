"""The stations' endpoint `/ocpp/{stationId}` inside the one ASGI app (OCPP-J 1.6 §3, Security Whitepaper).

Before the upgrade: an unknown station gets HTTP 404, and one its security profile refuses gets 401 or 403
(`admission`: a password it does not present, HTTP Basic with the station id as user name, or a client certificate
that is not the one profile 3 asks for). The key is accepted as the text it was registered with, or as the raw bytes
whose hex spelling that text is (the OCPP-J §6.2.2 example sends raw bytes); every comparison is the keyed hash's
constant-time one.

The subprotocol is the first of the station's offer that its record allows (`domain.generations`: `ocpp2.0.1`,
`ocpp1.6`, both by default; a station at security profile 0 only 1.6). A handshake that offers
none of them is completed without a subprotocol and then closed with 1002, as OCPP-J §3.2 says.
"""

from __future__ import annotations

import logging

from starlette.responses import PlainTextResponse
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket

from chargenet.domain.generations import OCPP16, negotiate, usable_versions
from chargenet.edge import records
from chargenet.edge.hub import Edge
from chargenet.edge.transport import activity_of
from chargenet.ids import STATION_ID_PATTERN
from chargenet.observability import log_context

log = logging.getLogger(__name__)


def ocpp_route(edge: Edge) -> WebSocketRoute:
    async def endpoint(websocket: WebSocket) -> None:
        station_id: str = websocket.path_params["station_id"]
        station = None
        if STATION_ID_PATTERN.match(station_id):
            station = await edge.store.read_statement(lambda connection: records.load_station(connection, station_id))
        if station is None:
            await websocket.send_denial_response(PlainTextResponse("unknown station", status_code=404))
            return
        refusal = await edge.admission.refuse(websocket.scope, station, edge.clock.now())
        if refusal is not None:
            await websocket.send_denial_response(refusal)
            return
        offered = websocket.scope.get("subprotocols", [])
        subprotocol = negotiate(offered, station.ocpp_versions, security_profile=station.security_profile)
        if subprotocol is None:
            allowed = usable_versions(station.ocpp_versions, security_profile=station.security_profile)
            log.warning(
                "station refused: no subprotocol it may use",
                extra={"fields": {"station": station_id, "offered": offered, "allowed": allowed}},
            )
            await websocket.accept()
            await websocket.close(1002, f"subprotocol {' or '.join(allowed) or OCPP16} required")
            return
        await websocket.accept(subprotocol=subprotocol)
        # Every line logged while the station is connected names it, from this task and those started from it.
        with log_context.station(station.station_id):
            await _serve(edge, websocket, station, subprotocol)

    return WebSocketRoute("/ocpp/{station_id:str}", endpoint)


async def _serve(edge: Edge, websocket: WebSocket, station: records.StationInfo, subprotocol: str) -> None:
    async def close(code: int, reason: str) -> None:
        await websocket.close(code, reason)

    link = await edge.attach(station, websocket.send_text, close, subprotocol)
    activity = activity_of(websocket.scope)
    if activity is not None:
        activity.listener = link.heard  # pings and pongs count too (see `transport`)
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            link.heard()
            data = message.get("text")
            closing = await link.rpc.feed(data if data is not None else message.get("bytes") or b"")
            if closing is not None:
                await websocket.close(closing.code, closing.reason)
                break
    except Exception:
        # The socket went away under us (replaced, reset); the finally block cleans up either way.
        log.debug("station socket ended", exc_info=True, extra={"fields": {"station": station.station_id}})
    finally:
        if activity is not None:
            activity.listener = None
        await edge.detach(link)
