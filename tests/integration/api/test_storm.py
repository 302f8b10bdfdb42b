"""A storm of hostile HTTP requests against every operation of the API (read from its own OpenAPI document, so routes
added later are stormed too) and against the token endpoint, on loopback, on both backends: zero 5xx (station
commands keep their pinned 502/503/504) and zero tracebacks. Bounded in count and time; the classes tried and their
request counts are printed and checked (decisions.md "Input the service refuses")."""

from __future__ import annotations

import base64
import json
import logging
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from chargenet.domain.rate_limits import MAX_REQUESTS as MAX_RATE_LIMIT
from chargenet.domain.scopes import Scope
from chargenet.simulators.station import SimulatedStation
from tests.factories import partner_application
from tests.integration.edge.conftest import Served, served  # noqa: F401  (the fixture)

# Station commands may answer their pinned 502/503/504 (decisions.md); nothing else may answer a 5xx.
COMMANDS = re.compile(r"^/sessions(/[^/]+/stop)?$|^/charge-points/[^/]+/(reset|unlock|availability|trigger)$")
MAX_REQUESTS = 7000  # grows with the API: about 50 a path parameter and 150 a body (5,783 with 85 operations)

HUGE_INTS = [2**31, -(2**31) - 1, 2**64 + 1, 10**40]
PATH_IDS = [
    "99999999999999999999999",
    "9223372036854775808",
    "2147483648",
    "-1",
    "0",
    "1e3",
    "1.0",
    "0x10",
    "+1",
    "1_000",
    "%C2%B9%C2%B2",  # superscript digits
    "%D9%A1%D9%A2",  # Arabic-Indic digits
    "%00",
    "a%00b",
    "%FF",
    "%ED%A0%80",  # a surrogate in CESU-8
    "%EF%BB%BF1",  # a byte-order mark
    "x" * 3000,
    "..%2F..%2Fetc",
    "%20",
    "abc",
]
STRINGS = ["\ud800", "a\udfffb", "x\x00y", "x" * 100_000, "", "\U0001f600"]
WRONG_TYPES: list[Any] = [None, True, "1", 1.5, [1], {"a": 1}, -1]
CHARSETS = ["iso-8859-1", "utf-16", "us-ascii", "utf8", "windows-1252", "", "x" * 200, '"utf-16le"']
RAW_BODIES = [
    b"\xff\xfe{\x00}\x00",  # UTF-16 with its BOM
    b"\xfe\xff\x00{\x00}",
    b'{"a":"\xc0\xaf"}',  # overlong
    b'{"a":"\xed\xa0\x80"}',  # a surrogate as UTF-8 bytes
    b'{"a":"\xe2\x82"}',  # truncated
    b'{"a":"\xe9"}',  # latin-1
    b"\x00\x00\x00{",
    b"\xef\xbb\xbf\xef\xbb\xbf{}",  # two byte-order marks
    b"[" * 200_000,
    b"{" * 50_000 + b"}" * 50_000,
    b'{"a":1' + b"0" * 5000 + b"}",  # over Python's int digit limit
    b'{"a":1e999999}',
    b'{"a":NaN,"b":Infinity}',
    b"",
    b"null",
    b"[]",
    b'"text"',
    b"12345678901234567890",
]
FORM = "application/x-www-form-urlencoded"


@dataclass
class Storm:
    client: httpx.AsyncClient
    token: str
    classes: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    async def send(self, kind: str, method: str, path: str, *, api: bool = True, **kwargs: Any) -> None:
        headers = dict(kwargs.pop("headers", {}))
        if api:
            headers.setdefault("Authorization", f"Bearer {self.token}")
        url = f"/api/v1{path}" if api else path
        try:
            response = await self.client.request(method, url, headers=headers, **kwargs)
        except httpx.HTTPError as exc:  # the server must answer, not drop the connection
            self.failures.append(f"{kind} {method} {path[:80]}: {type(exc).__name__}")
            self.classes[kind] += 1
            return
        self.classes[kind] += 1
        self.statuses[response.status_code] += 1
        pinned = api and response.status_code in (502, 503, 504) and COMMANDS.match(path.split("?")[0])
        if response.status_code >= 500 and not pinned:
            self.failures.append(f"{kind} {method} {path[:80]} -> {response.status_code} {response.text[:200]}")


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield method.upper(), path, operation


def body_schema(document: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any] | None:
    content = operation.get("requestBody", {}).get("content", {})
    schema = content.get("application/json", {}).get("schema")
    if schema is None:
        return None
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema  # type: ignore[no-any-return]


def sample_body(schema: dict[str, Any]) -> dict[str, Any]:
    """A plausible body: every property with a value of roughly its type."""
    body: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        kinds = [prop.get("type")] + [p.get("type") for p in prop.get("anyOf", [])]
        enum = prop.get("enum") or next((p["enum"] for p in prop.get("anyOf", []) if "enum" in p), None)
        if enum:
            body[name] = enum[0]
        elif "integer" in kinds:
            body[name] = 1
        elif "boolean" in kinds:
            body[name] = True
        elif "array" in kinds:
            body[name] = ["Authorize"]
        else:
            body[name] = "CS-1"
    return body


def fill(path: str, value: str) -> str:
    return re.sub(r"\{[^}]+\}", value, path)


def json_text(value: Any) -> bytes:
    """JSON whose strings may hold lone surrogates and U+0000 (as escapes, the way a client would send them)."""
    return json.dumps(value, ensure_ascii=True).encode()


async def storm_api(storm: Storm, document: dict[str, Any]) -> None:
    for method, path, operation in operations(document):
        concrete = fill(path, "CS-1")
        if "{" in path:
            for value in PATH_IDS:
                await storm.send("malformed path ids", method, fill(path, value), json={})
        for query in ("limit=99999999999999999999", "limit=-5", "cursor=%00", "cursor=!!!", "siteId=%00x", "active=2"):
            await storm.send("hostile queries", method, f"{concrete}?{query}")
        await storm.send(
            "hostile queries", method, f"{concrete}?cursor=" + base64.urlsafe_b64encode(b"9" * 60).decode()
        )
        schema = body_schema(document, operation)
        if schema is None:
            continue
        sample = sample_body(schema)
        for name in sample:
            for number in HUGE_INTS:
                await storm.send("huge integers", method, concrete, content=json_text({**sample, name: number}))
            for text in STRINGS:
                await storm.send(
                    "lone surrogates, NUL, long strings", method, concrete, content=json_text({**sample, name: text})
                )
            for wrong in WRONG_TYPES:
                await storm.send("wrong types", method, concrete, content=json_text({**sample, name: wrong}))
        await storm.send(
            "lone surrogates, NUL, long strings", method, concrete, content=json_text({**sample, "\ud800": 1})
        )
        valid = json_text(sample)
        for charset in CHARSETS:
            headers = {"Content-Type": f"application/json; charset={charset}"}
            await storm.send("bad charsets", method, concrete, content=valid, headers=headers)
        await storm.send(
            "bad charsets",
            method,
            concrete,
            content=json.dumps(sample).encode("utf-16"),
            headers={"Content-Type": "application/json; charset=utf-16"},
        )
        await storm.send(
            "byte-order marks",
            method,
            concrete,
            content=b"\xef\xbb\xbf" + valid,
            headers={"Content-Type": "application/json"},
        )
        for raw in RAW_BODIES:
            await storm.send(
                "bytes that are not UTF-8 JSON",
                method,
                concrete,
                content=raw,
                headers={"Content-Type": "application/json"},
            )
        for size in (1 << 20, 5 << 20):
            big = b'{"x":"' + b"y" * size + b'"}'
            await storm.send("huge bodies", method, concrete, content=big, headers={"Content-Type": "application/json"})
        await storm.send("wrong content types", method, concrete, content=valid, headers={"Content-Type": FORM})
        await storm.send("wrong content types", method, concrete, content=valid, headers={"Content-Type": "text/plain"})


async def storm_token(storm: Storm, client_id: str, secret: str) -> None:
    token_path = "/auth/oauth2/token"
    grant = "grant_type=client_credentials"
    good = f"{grant}&client_id={client_id}&client_secret={secret}".encode()
    for charset in CHARSETS:
        await storm.send(
            "token: bad charsets",
            "POST",
            token_path,
            api=False,
            content=good,
            headers={"Content-Type": f"{FORM}; charset={charset}"},
        )
    await storm.send(
        "token: byte-order marks",
        "POST",
        token_path,
        api=False,
        content=b"\xef\xbb\xbf" + good,
        headers={"Content-Type": FORM},
    )
    for bad in (b"\xe9", b"%E9", b"%ED%A0%80", b"%00", b"%C0%AF", b"\xff\xfe", b"%", b"%%", b"=", b"&&&"):
        for where in ("client_id", "client_secret", "grant_type"):
            body = good.replace(f"{where}=".encode(), f"{where}=".encode() + bad, 1)
            await storm.send(
                "token: bytes that are not UTF-8 text",
                "POST",
                token_path,
                api=False,
                content=body,
                headers={"Content-Type": FORM},
            )
    for body in (
        b"x" * 5000,
        b"a=" + b"b" * (1 << 20),
        b"&".join([b"a=1"] * 1000),
        json.dumps({"grant_type": 1}).encode(),
    ):
        await storm.send(
            "token: huge or odd bodies", "POST", token_path, api=False, content=body, headers={"Content-Type": FORM}
        )
    hostile_users = ("\x00", "app_" + "x" * 5000, "é", "")
    for header in (
        *(f"Basic {base64.b64encode(f'{user}:{secret}'.encode()).decode()}" for user in hostile_users),
        "Basic",
        "Basic !!!",
        "Basic " + base64.b64encode(b"\xff\xfe:\xff").decode(),
        "Bearer x",
    ):
        await storm.send(
            "token: hostile Basic credentials",
            "POST",
            token_path,
            api=False,
            content=grant.encode(),
            headers={"Content-Type": FORM, "Authorization": header},
        )
    for method in ("GET", "PUT", "DELETE", "PATCH"):
        await storm.send("token: wrong methods", method, token_path, api=False)
    for token in ("x" * 10000, "a.b.c", "e30.e30.", base64.urlsafe_b64encode(b'{"alg":"none"}').decode() + ".e30."):
        await storm.send("hostile bearer tokens", "GET", "/charge-points", headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
async def station(served: Served) -> AsyncIterator[SimulatedStation]:  # noqa: F811
    simulated = served.station()
    await simulated.connect()
    await simulated.boot()
    yield simulated
    await simulated.close()


@pytest.mark.slow
@pytest.mark.timeout(300)  # about 30 s alone; a machine busy with the rest of the suite has taken over 2 minutes
async def test_storm_of_hostile_requests_gets_no_5xx_and_no_traceback(
    served: Served,  # noqa: F811
    station: SimulatedStation,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from chargenet.auth.token_request import AuthMethod, ClientCredentials  # noqa: F401
    from chargenet.services import applications, groups
    from chargenet.services.callers import OPERATOR

    client_id, token = await partner_application(served.context, served.tenant.company_id, [s.value for s in Scope])
    async with served.context.store.transaction() as session:
        # Every hostile request must reach its operation, not the rate limit.
        await applications.set_rate_limit(
            session, OPERATOR, client_id, requests=MAX_RATE_LIMIT, now=served.context.clock.now()
        )
        credentials = await applications.create_application(
            session,
            OPERATOR,
            served.context.keys.secret_hasher(),
            company_id=served.tenant.company_id,
            name="storm",
            now=served.context.clock.now(),
        )
        group = await groups.create_group(
            session,
            OPERATOR,
            company_id=served.tenant.company_id,
            site_id=None,
            name="storm",
            scopes=["sites:read"],
            now=served.context.clock.now(),
        )
        await groups.add_app(session, OPERATOR, group.id, credentials.client_id, now=served.context.clock.now())
    async with httpx.AsyncClient(base_url=served.http_url, timeout=30) as client:
        document = (await client.get("/api/v1/openapi.json")).json()
        storm = Storm(client, token)
        with caplog.at_level(logging.WARNING):
            await storm_api(storm, document)
            await storm_token(storm, credentials.client_id, credentials.client_secret)
            # After the storm the service answers as before.
            after = await client.get("/api/v1/transactions", headers={"Authorization": f"Bearer {token}"})
            assert after.status_code == 200
            assert "currentTime" in await station.heartbeat()
    elapsed = time.monotonic() - storm.started
    total = sum(storm.classes.values())
    print(f"storm on {served.context.store.dialect}: {total} requests in {elapsed:.1f} s")
    for kind, count in sorted(storm.classes.items()):
        print(f"  {kind}: {count}")
    print(f"  statuses: {dict(sorted(storm.statuses.items()))}")
    for failure in storm.failures[:40]:
        print("  FAIL", failure)
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert storm.failures == []
    assert tracebacks == [], [r.getMessage() for r in tracebacks]
    # Bounded by its number of requests, not by time: the suite runs on busy machines.
    assert len(storm.classes) >= 14 and total <= MAX_REQUESTS
