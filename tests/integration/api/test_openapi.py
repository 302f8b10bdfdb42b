"""The published OpenAPI document describes every answer (issue 13): each success body by a named schema, the
RFC 9457 problems the API answers with, and the OAuth2 client-credentials flow with the scope each operation
checks, read from a real app as a partner's client generator would."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import jsonschema
import pytest
from schemathesis.specs.openapi.definitions import OPENAPI_31

from chargenet.app import create_app, open_context
from chargenet.clock import ManualClock
from chargenet.config import load_settings
from chargenet.domain.events import DOCUMENTED_EVENTS, EventType, build_test_event
from chargenet.domain.schemas import event_json_schema
from chargenet.domain.scopes import Scope
from tests.support.templates import prepare_data_dir

# Its tests read one document: one worker runs them all (make test distributes by group).
pytestmark = pytest.mark.xdist_group("openapi")

PROBLEM = {"$ref": "#/components/schemas/Problem"}
COMMANDS = {
    ("post", "/charge-points/{charge_point_id}/reset"),
    ("post", "/charge-points/{charge_point_id}/unlock"),
    ("post", "/charge-points/{charge_point_id}/availability"),
    ("post", "/charge-points/{charge_point_id}/trigger"),
    ("post", "/stations/{station_id}/reset"),
    ("post", "/stations/{station_id}/data-transfer"),
    ("post", "/sessions"),
    ("post", "/sessions/{transaction_id}/stop"),
}


@pytest.fixture(scope="module")
def document(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The document as the app serves it, read once: it is made from the app's routes, the same on either store."""
    data_dir = prepare_data_dir(tmp_path_factory.mktemp("openapi") / "data")
    settings = load_settings({"data_dir": str(data_dir), "public_url": "https://ev.example"}, environ={})

    async def read() -> dict[str, Any]:
        context = await open_context(settings, clock=ManualClock(datetime(2026, 7, 1, 12, tzinfo=UTC)))
        try:
            transport = httpx.ASGITransport(app=create_app(context))
            async with httpx.AsyncClient(transport=transport, base_url="http://test/api/v1") as client:
                response = await client.get("/openapi.json")
                assert response.status_code == 200
                answer: dict[str, Any] = response.json()
                return answer
        finally:
            await context.close()

    return asyncio.run(read())


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, methods in document["paths"].items() for method, op in methods.items()]


def problem_answer(operation: dict[str, Any], status: str) -> dict[str, Any] | None:
    content: dict[str, Any] = operation["responses"].get(status, {}).get("content", {})
    schema: dict[str, Any] | None = content.get("application/problem+json", {}).get("schema")
    return schema


async def test_every_operation_has_a_success_schema(document: dict[str, Any]) -> None:
    for method, path, operation in operations(document):
        success = {code: answer for code, answer in operation["responses"].items() if code.startswith("2")}
        assert success, (method, path)
        for code, answer in success.items():
            if code != "204" and "application/octet-stream" not in answer["content"]:  # a file downloaded
                assert "$ref" in answer["content"]["application/json"]["schema"], (method, path, code)


async def test_the_problem_schema_has_rfc_9457_and_our_members(document: dict[str, Any]) -> None:
    problem = document["components"]["schemas"]["Problem"]
    assert {"type", "title", "status", "detail", "instance"} <= problem["properties"].keys()
    assert {"field", "errors", "stationErrorCode", "stationErrorDescription"} <= problem["properties"].keys()
    # FastAPI's default 422 body is not what the API sends, so it is not published either.
    assert "HTTPValidationError" not in document["components"]["schemas"]


async def test_every_bearer_operation_answers_401_and_403_problems(document: dict[str, Any]) -> None:
    for method, path, operation in operations(document):
        assert operation.get("security"), (method, path)  # every API operation takes a token
        for status in ("401", "403", "422"):
            assert problem_answer(operation, status) == PROBLEM, (method, path, status)
        if "{" in path or method != "get":
            assert problem_answer(operation, "404") == PROBLEM, (method, path)


async def test_every_bearer_operation_answers_429_with_retry_after_and_tells_its_rate_limit(
    document: dict[str, Any],
) -> None:
    for method, path, operation in operations(document):
        assert problem_answer(operation, "429") == PROBLEM, (method, path)
        assert set(operation["responses"]["429"]["headers"]) == {"Retry-After", "RateLimit-Policy", "RateLimit"}
        successes = [answer for status, answer in operation["responses"].items() if status.startswith("2")]
        assert successes and all({"RateLimit-Policy", "RateLimit"} <= set(a["headers"]) for a in successes)


async def test_station_commands_alone_answer_502_503_504(document: dict[str, Any]) -> None:
    commands = set()
    for method, path, operation in operations(document):
        answers = {status for status in ("502", "503", "504") if problem_answer(operation, status) == PROBLEM}
        assert answers in (set(), {"502", "503", "504"}), (method, path)
        if answers:
            commands.add((method, path))
    assert commands >= COMMANDS
    assert ("post", "/stations") not in commands
    assert all(path.startswith(("/stations/", "/charge-points/", "/sessions")) for _, path in commands)


async def test_the_security_scheme_is_the_client_credentials_flow_with_each_operations_scope(
    document: dict[str, Any],
) -> None:
    schemes = document["components"]["securitySchemes"]
    assert list(schemes) == ["OAuth2"]
    flow = schemes["OAuth2"]["flows"]["clientCredentials"]
    assert flow["tokenUrl"] == "https://ev.example/auth/oauth2/token"
    assert set(flow["scopes"]) == {s.value for s in Scope}
    security = {(m, p): op["security"] for m, p, op in operations(document)}
    assert security[("get", "/sites")] == [{"OAuth2": ["sites:read"]}]
    assert security[("post", "/sessions")] == [{"OAuth2": ["sessions:write"]}]
    assert security[("get", "/transactions")] == [{"OAuth2": ["transactions:read"]}]
    assert security[("post", "/stations/{station_id}/reset")] == [{"OAuth2": ["charge-points:write"]}]
    for (method, path), requirement in security.items():
        assert len(requirement) == 1 and len(requirement[0]["OAuth2"]) == 1, (method, path)


async def test_every_string_of_the_document_refuses_u0000(document: dict[str, Any]) -> None:
    # The input check refuses U+0000 in every string (decisions.md "Input the service refuses"): so does the
    # document, by a pattern, a format or an enumeration on each. The webhooks' events are what the service
    # sends, not what it accepts.
    schemas = document["components"]["schemas"]
    strings = list(
        typed([document["paths"], *(schemas[name] for name in referenced(document["paths"], schemas))], "string")
    )
    assert len(strings) > 100
    for schema in strings:
        assert {"pattern", "format", "enum", "const"} & schema.keys(), schema
        if "pattern" in schema:
            assert not any(re.search(schema["pattern"], text) for text in ("\x00", "A\x00A", "Depot\x00")), schema


async def test_request_bodies_refuse_unknown_members_and_bound_every_integer(document: dict[str, Any]) -> None:
    # A member the document does not name, or an integer it does not bound, could hold what the input check
    # refuses (an integer beyond 32 bits): then a body the document allows would be refused.
    schemas = document["components"]["schemas"]
    sent = [op["requestBody"] for _, _, op in operations(document) if "requestBody" in op]
    sent += [parameter for _, _, op in operations(document) for parameter in op.get("parameters", [])]
    names = referenced(sent, schemas)
    assert len(names) > 20
    for name in names:
        if schemas[name].get("type") == "object":
            assert schemas[name].get("additionalProperties") is False, name
    for schema in typed(sent + [schemas[name] for name in names], "integer"):
        assert ("minimum" in schema and "maximum" in schema) or "enum" in schema, schema


def referenced(node: Any, schemas: dict[str, Any], seen: set[str] | None = None) -> set[str]:
    """The names of the component schemas `node` refers to, directly or through others."""
    seen = set() if seen is None else seen
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                name = value.rsplit("/", 1)[1]
                if name not in seen:
                    seen.add(name)
                    referenced(schemas[name], schemas, seen)
            else:
                referenced(value, schemas, seen)
    elif isinstance(node, list):
        for value in node:
            referenced(value, schemas, seen)
    return seen


def typed(node: Any, kind: str) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if node.get("type") == kind:
            yield node
        for value in node.values():
            yield from typed(value, kind)
    elif isinstance(node, list):
        for value in node:
            yield from typed(value, kind)


def inlined(node: Any, definitions: dict[str, Any], prefix: str) -> Any:
    """`node` with every reference starting with `prefix` replaced by what it names, recursively."""
    if isinstance(node, dict):
        reference = node.get("$ref")
        if isinstance(reference, str) and reference.startswith(prefix):
            return inlined(definitions[reference.removeprefix(prefix)], definitions, prefix)
        return {key: inlined(value, definitions, prefix) for key, value in node.items()}
    if isinstance(node, list):
        return [inlined(value, definitions, prefix) for value in node]
    return node


def webhook_body(document: dict[str, Any], name: str) -> dict[str, Any]:
    schema: dict[str, Any] = document["webhooks"][name]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return schema


async def test_the_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    # The OpenAPI Initiative's schema of 3.1 documents, as the pinned schemathesis ships it.
    assert document["openapi"].startswith("3.1.")
    jsonschema.Draft202012Validator(OPENAPI_31).validate(document)


async def test_the_webhooks_are_every_event_type_and_the_test_event(document: dict[str, Any]) -> None:
    assert list(document["webhooks"]) == [*(event_type.value for event_type in EventType), "WebhookTest"]


async def test_each_webhook_body_is_the_published_event_schema(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    for name in DOCUMENTED_EVENTS:
        published = event_json_schema(name)
        expected = inlined(
            {k: v for k, v in published.items() if k not in ("$schema", "$id", "$defs")}, published["$defs"], "#/$defs/"
        )
        assert inlined(webhook_body(document, name), schemas, "#/components/schemas/") == expected, name


async def test_each_webhook_names_the_signature_headers_it_carries(document: dict[str, Any]) -> None:
    for name, webhook in document["webhooks"].items():
        parameters = webhook["post"]["parameters"]
        required = {p["name"] for p in parameters if p["in"] == "header" and p["required"]}
        assert required == {"x-request-id", "Signature-Input", "Signature"}, name
        # Sent in the RFC 9421 format, the default; not in the legacy one.
        assert {p["name"] for p in parameters if not p["required"]} == {"Content-Digest"}, name


async def test_a_test_event_the_service_builds_is_valid_against_its_webhook_in_the_document(
    document: dict[str, Any],
) -> None:
    event = build_test_event(
        event_id="0b6c1f7e-3a52-4b8e-9f3d-2c1a5e6b7d80",
        site_id="site_4f9q2x7m1cae",
        raised_at=datetime(2026, 7, 1, 12, 3, 22, 123000, tzinfo=UTC),
        webhook_id="wh_4f9q2x7m1cae",
        requested_by="operator ana@example.org",
    ).to_json_dict()
    schema = {**webhook_body(document, "WebhookTest"), "components": document["components"]}
    jsonschema.Draft202012Validator(schema).validate(event)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate({**event, "payload": {"webhookId": "wh_1"}})
