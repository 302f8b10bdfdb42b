"""Property-based fuzzing of the OCPP endpoint of a real `chargenet serve`, through a real WebSocket.

Frames are drawn by Hypothesis from the OCPP JSON schemas the `ocpp` package ships, of the generation the
connection speaks (1.6 or 2.0.1: every action a station may send, valid payloads and payloads with one field made
hostile: huge or negative integers, lone surrogates, U+0000, wrong types, missing or extra fields, deep nesting)
and from raw text (broken JSON, unknown message types, odd ids). Every frame must get a CALLRESULT that fits its
response schema, a CALLERROR with a specific code of that generation's list (never InternalError or GenericError),
or no answer when OCPP-J says so, counting towards the close; the server log must hold no traceback; and a normal
session works afterwards. Bounded: a fixed number of examples, derandomized, well under the suite's fuzzing budget.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from chargenet.app import open_context
from chargenet.config import load_settings
from chargenet.edge.ocpp16 import frames
from chargenet.edge.ocpp16.errors import (
    ErrorCode,
    PayloadViolation,
    RemoteProtocolError,
    UnknownMessageType,
    UnreadableFrame,
)
from chargenet.edge.ocpp201 import errors as errors201
from chargenet.edge.ocpp201 import frames as frames201
from tests.factories import make_tenant
from tests.support.ports import free_port

# Its tests share one module-scoped server: one worker runs them all (make test distributes by group).
pytestmark = pytest.mark.xdist_group("ocpp-fuzz")

ROOT = Path(__file__).resolve().parents[3]
STATION = "FZ-1"
PASSWORD = "0123456789abcdef0123"
EXAMPLES = 250


@dataclass(frozen=True)
class Generation:
    """What differs between the generations for the fuzzer: the subprotocol, the schemas and actions, the
    CALLERROR codes, whether an unknown MessageTypeId is answered, and a normal session's messages."""

    subprotocol: str
    schema_dir: Path
    request_suffix: str  # 1.6 names a request's schema `Action`, 2.0.1 `ActionRequest`
    actions: list[str]  # those a station may send
    specific_codes: frozenset[str]  # every code but the own-fault ones
    answers_unknown_message_types: bool  # 2.0.1: MessageTypeNotSupported under the frame's id; 1.6: silence
    boot: dict[str, Any]
    authorize: dict[str, Any]
    validate: Callable[[str, object], None]

    def schema_of(self, action: str) -> dict[str, Any]:
        path = self.schema_dir / f"{action}{self.request_suffix}.json"
        return dict(json.loads(path.read_text(encoding="utf-8-sig")))


OCPP16 = Generation(
    subprotocol="ocpp1.6",
    schema_dir=frames._schema_dir(),
    request_suffix="",
    # Actions a station may send; SignCertificate and the like are in the schemas too.
    actions=sorted(frames.STATION_ACTIONS & frames.known_actions()),
    specific_codes=frozenset(code.value for code in ErrorCode) - {c.value for c in frames.OWN_FAULT_CODES},
    answers_unknown_message_types=False,
    boot={"chargePointVendor": "fuzz", "chargePointModel": "f"},
    authorize={"idTag": "TAG-OK"},
    validate=frames.validate_payload,
)
OCPP201 = Generation(
    subprotocol="ocpp2.0.1",
    schema_dir=frames._schema_dir(frames201.GENERATION),
    request_suffix="Request",
    actions=sorted(frames201.STATION_ACTIONS),
    specific_codes=frozenset(code.value for code in errors201.ErrorCode201)
    - {c.value for c in errors201.OWN_FAULT_CODES},
    answers_unknown_message_types=True,
    boot={"chargingStation": {"model": "f", "vendorName": "fuzz"}, "reason": "PowerUp"},
    authorize={"idToken": {"idToken": "TAG-OK", "type": "ISO14443"}},
    validate=lambda schema, payload: frames.validate_payload(schema, payload, frames201.GENERATION),
)
GENERATIONS = pytest.mark.parametrize("generation", [OCPP16, OCPP201], ids=["1.6", "2.0.1"])


@dataclass
class Server:
    url: str
    log: Path

    def headers(self) -> dict[str, str]:
        return {"Authorization": "Basic " + base64.b64encode(f"{STATION}:{PASSWORD}".encode()).decode()}

    def connect(self, generation: Generation) -> ClientConnection:
        return connect(
            f"{self.url}/ocpp/{STATION}",
            subprotocols=[generation.subprotocol],  # type: ignore[list-item]
            additional_headers=self.headers(),
            open_timeout=10,
            max_size=None,
        )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("fuzz") / "data"

    async def prepare() -> None:
        context = await open_context(load_settings({"data_dir": str(data_dir)}, environ={}))
        await make_tenant(
            context.store, context.keys, datetime.now(UTC), station_id=STATION, password=PASSWORD, connectors=2
        )
        await context.close()

    asyncio.run(prepare())
    port = free_port()
    log = data_dir.parent / "serve.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "chargenet", "serve", "--port", str(port), "--data-dir", str(data_dir)],
            env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'sdk' / 'python'}"},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, "chargenet serve exited early"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code < 500:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.1)
        yield Server(f"ws://127.0.0.1:{port}", log)
    finally:
        process.terminate()
        process.wait(10)


# --- strategies ----------------------------------------------------------------------------------------------

HOSTILE_INTS = st.sampled_from([2**31, -(2**31) - 1, 2**63, 2**64 + 1, 10**40, -1, 0, 2**31 - 1])
HOSTILE_STRINGS = st.sampled_from(["\ud800", "a\udfffb", "\x00", "x" * 5000, "", "é" * 30, "\U0001f600", "\\"])
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
DATE_TIMES = st.sampled_from(
    ["2026-07-01T12:00:00Z", "2026-07-01T12:00:00.123+02:00", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"]
) | st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat())


def from_schema(schema: dict[str, Any], root: dict[str, Any] | None = None) -> st.SearchStrategy[Any]:
    """Values valid (mostly) against one node of an OCPP schema; `root` holds the definitions a 2.0.1 `$ref`
    names."""
    root = root if root is not None else schema
    if "$ref" in schema:
        return from_schema(root["definitions"][schema["$ref"].rsplit("/", 1)[-1]], root)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        fixed = {name: from_schema(node, root) for name, node in properties.items() if name in required}
        optional = {name: from_schema(node, root) for name, node in properties.items() if name not in required}
        return st.fixed_dictionaries(fixed, optional=optional)
    if kind == "array":
        items = from_schema(schema.get("items", {}), root)
        return st.lists(items, min_size=schema.get("minItems", 0), max_size=min(schema.get("maxItems", 3), 3))
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum", -5), max_value=min(schema.get("maximum", 40), 40))
    if kind == "number":
        return st.integers(0, 1000).map(lambda n: n / 10)
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        if schema.get("format") == "date-time":
            return DATE_TIMES
        return st.text(max_size=min(schema.get("maxLength", 20), 20))
    return ANY_JSON


@st.composite
def hostile_payload(draw: st.DrawFn, payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` with one field (perhaps nested) replaced, dropped, or one added."""
    paths: list[tuple[Any, ...]] = []

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        if isinstance(value, dict):
            for key, child in value.items():
                paths.append((*path, key))
                walk(child, (*path, key))
        elif isinstance(value, list):
            for index, child in enumerate(value):
                paths.append((*path, index))
                walk(child, (*path, index))

    walk(payload, ())
    mutated = json.loads(json.dumps(payload))
    how = draw(st.sampled_from(["replace", "drop", "add"] if paths else ["add"]))
    if how == "add":
        mutated[draw(st.sampled_from(["extra", "\ud800", "connectorId", "x" * 100]))] = draw(ANY_JSON)
        return mutated
    path = draw(st.sampled_from(paths))
    parent = mutated
    for step in path[:-1]:
        parent = parent[step]
    if how == "drop":
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(HOSTILE_INTS | HOSTILE_STRINGS | ANY_JSON | st.just([[[[[[[[[[[[1]]]]]]]]]]]]))
    return mutated


@st.composite
def call_frames(draw: st.DrawFn, generation: Generation) -> tuple[str, str | None]:
    """(text, action) of a CALL whose payload follows the action's schema, or breaks it in one place."""
    action = draw(st.sampled_from(generation.actions))
    payload = draw(from_schema(generation.schema_of(action)))
    if draw(st.booleans()):
        payload = draw(hostile_payload(payload))
    unique_id = draw(st.sampled_from(["m", "x" * 36, "x" * 37, "\ud800", "-1", "é"]) | st.uuids().map(str))
    text = json.dumps([2, unique_id, action, payload], ensure_ascii=True)
    return text, action


RAW_FRAMES = st.sampled_from(
    [
        "not json",
        "",
        "[",
        '[2,"r1","Heartbeat",{',
        '[2,"r2","Heartbeat",{}]]',
        '[2,"r3","Heartbeat",{"a":NaN}]',
        "{}",
        "[]",
        "[2]",
        '[2,"r4"]',
        '[2,17,"Heartbeat",{}]',
        '[9,"r5",{}]',
        '[3,"r6",{}]',
        '[4,"r7","InternalError","",{}]',
        '[3,"r8",[]]',
        '[true,"r9",{}]',
        '[2,"r10","Heartbeat",null]',
        '[2,"r11",5,{}]',
        '[2,"r12","FlyToTheMoon",{}]',
        '[2,"r13","Reset",{"type":"Soft"}]',
        '[2,"r14","Heart\\ud800beat",{}]',
        '[2,"r15","Heartbeat",{}, 1]',
        "[" * 5000 + "]" * 5000,
        '[2,"r16","DataTransfer",{"vendorId":"' + "\\\\" * 20000 + '"}]',
        '[2,"r17","Authorize",{"idTag":"' + "1" * 4400 + '"}]',
        '[2,"r18","MeterValues",{"connectorId":1,"meterValue":[{"timestamp":"2026-07-01T12:00:00Z","sampledValue":'
        '[{"value":"1"}]}],"transactionId":1' + "0" * 30 + "}]",
    ]
) | st.text(max_size=60)


def frames_of(generation: Generation) -> st.SearchStrategy[tuple[str, str | None]]:
    return st.one_of(call_frames(generation), RAW_FRAMES.map(lambda text: (text, None)))


# --- the oracle ----------------------------------------------------------------------------------------------


def answer_id(text: str, generation: Generation) -> str | None:
    """The id under which the server must answer `text`, or None when it must stay silent."""
    try:
        frames.parse_frame(text)
    except UnknownMessageType as exc:
        return exc.unique_id if generation.answers_unknown_message_types else exc.answer_id
    except UnreadableFrame as exc:
        return exc.answer_id
    except (RemoteProtocolError, PayloadViolation) as exc:
        return exc.unique_id
    message = json.loads(text)
    return str(message[1]) if message[0] == 2 else None


def check_answer(answer: Any, action: str | None, generation: Generation) -> None:
    assert isinstance(answer, list) and answer[0] in (3, 4), answer
    if answer[0] == 4:
        assert len(answer) == 5 and answer[2] in generation.specific_codes, answer
        assert isinstance(answer[3], str) and isinstance(answer[4], dict)
        return
    assert action is not None, answer
    generation.validate(f"{action}Response", answer[2])


class Session:
    """One station connection; reconnects after the server closes it (a frame too large, five unreadable)."""

    def __init__(self, server: Server, generation: Generation) -> None:
        self.server = server
        self.generation = generation
        self.socket: ClientConnection | None = None
        self.sync = 0
        self._stack = contextlib.ExitStack()

    def ensure(self) -> ClientConnection:
        if self.socket is None:
            self.socket = self._stack.enter_context(self.server.connect(self.generation))
            self.call("BootNotification", self.generation.boot)
        return self.socket

    def call(self, action: str, payload: dict[str, Any]) -> Any:
        self.sync += 1
        unique_id = f"sync-{self.sync}"
        assert self.socket is not None
        self.socket.send(json.dumps([2, unique_id, action, payload]))
        while True:
            message = json.loads(self.socket.recv(timeout=10))
            if message[0] == 2:  # the edge asking something: answer it and read on
                self.socket.send(json.dumps([4, message[1], "NotSupported", "", {}]))
                continue
            if message[1] == unique_id:
                return message

    def exchange(self, text: str, action: str | None) -> None:
        socket = self.ensure()
        expected = answer_id(text, self.generation)
        try:
            socket.send(text)
            if expected is not None:
                answer = json.loads(socket.recv(timeout=10))
                assert answer[1] == expected, (answer, text[:200])
                check_answer(answer, action, self.generation)
            heartbeat = self.call("Heartbeat", {})
            assert heartbeat[0] == 3, heartbeat
        except ConnectionClosed as closed:
            # The only closes a frame may cause: too large for the transport, or the run of unreadable ones.
            assert closed.rcvd is not None and closed.rcvd.code in (1002, 1009), closed
            self.socket = None


@pytest.mark.slow
@GENERATIONS
def test_every_fuzzed_frame_gets_a_valid_answer_or_counts_towards_the_close(
    server: Server, generation: Generation
) -> None:
    before = server.log.read_text(errors="replace")
    session = Session(server, generation)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(frames_of(generation))
    def exchange(frame: tuple[str, str | None]) -> None:
        session.exchange(*frame)

    exchange()
    if session.socket is not None:
        session.socket.close()
    # A normal session still works, and the server logged no traceback.
    normal = Session(server, generation)
    normal.ensure()
    assert normal.call("Authorize", generation.authorize)[0] == 3
    if generation is OCPP16:
        start = {"connectorId": 1, "idTag": "TAG-OK", "meterStart": 10, "timestamp": "2026-07-01T12:00:00Z"}
        started_tx = normal.call("StartTransaction", start)
        assert started_tx[0] == 3 and isinstance(started_tx[2]["transactionId"], int)
    else:
        reading = {"value": 10, "context": "Transaction.Begin"}
        started = {
            "eventType": "Started",
            "timestamp": "2026-07-01T12:00:00Z",
            "triggerReason": "Authorized",
            "seqNo": 0,
            "transactionInfo": {"transactionId": "FZ-TX-1"},
            "evse": {"id": 1, "connectorId": 1},
            "idToken": generation.authorize["idToken"],
            "meterValue": [{"timestamp": "2026-07-01T12:00:00Z", "sampledValue": [reading]}],
        }
        started_tx = normal.call("TransactionEvent", started)
        assert started_tx[0] == 3 and "idTokenInfo" in started_tx[2], started_tx
    assert normal.socket is not None
    normal.socket.close()
    log = server.log.read_text(errors="replace")[len(before) :]
    assert "Traceback" not in log, log[-5000:]
    assert "answering a call failed" not in log


@GENERATIONS
def test_a_text_frame_that_is_not_utf8_closes_the_connection_with_1007_and_one_log_line(
    server: Server, generation: Generation
) -> None:
    before = server.log.read_text(errors="replace")
    session = Session(server, generation)
    socket = session.ensure()
    socket.send(b'[2,"u1","Heartbeat",{"x":"\xff\xfe"}]', text=True)  # websockets sends the bytes unchecked
    with pytest.raises(ConnectionClosed) as closed:
        socket.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007
    # The connection is closed, and a normal one works afterwards.
    normal = Session(server, generation)
    normal.ensure()
    assert normal.call("Heartbeat", {})[0] == 3
    assert normal.socket is not None
    normal.socket.close()
    logged = server.log.read_text(errors="replace")[len(before) :]
    assert "Traceback" not in logged, logged[-5000:]
    assert sum("UTF-8" in line for line in logged.splitlines()) == 1, logged[-5000:]
