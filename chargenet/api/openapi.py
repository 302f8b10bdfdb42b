"""The published OpenAPI document says every answer an operation can give, not only its success.

FastAPI describes the success bodies and a 422 of its own shape; the errors come from one place,
`chargenet.api.problems`, so they are described here in one pass over the generated document instead of on
each route: the RFC 9457 `Problem` schema with our extension members, the statuses the mapper and the input
check can answer with, and the OAuth2 client-credentials flow with the scope each operation's `require`
dependency checks. The input check's one rule for every string (no U+0000, `domain.text` Rule 2) is written on
every string of the document the same way, here rather than on each field.

The events the service POSTs to partners are the document's `webhooks` (OpenAPI 3.1): one per envelope of
docs/schemas/, each body the very JSON Schema published there, its `$defs` moved to the components.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from chargenet.api.problems import PROBLEM_JSON
from chargenet.api.security import required_scope
from chargenet.domain.events import DOCUMENTED_EVENTS, WEBHOOK_TEST, EventType
from chargenet.domain.schemas import event_json_schema
from chargenet.domain.scopes import Scope

SCHEME = "OAuth2"
PROBLEM_REF = "#/components/schemas/Problem"

# The operations that wait for a station: it may not be connected (503), not answer (504) or answer with an
# error (502). These are the contract's answers for them, and for them alone.
COMMAND_PATH = re.compile(
    r"^/(charge-points/\{[^/]+\}/(reset|unlock|availability|trigger)|stations/\{[^/]+\}/[^/]+|sessions(/\{[^/]+\}/stop)?)$"
)

PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "description": "An RFC 9457 problem detail, with chargenet's extension members where they apply.",
    "type": "object",
    "required": ["type", "title", "status"],
    "properties": {
        "type": {"type": "string", "format": "uri-reference", "default": "about:blank"},
        "title": {"type": "string"},
        "status": {"type": "integer", "minimum": 400, "maximum": 599},
        "detail": {"type": "string"},
        "instance": {"type": "string", "format": "uri-reference"},
        "field": {"type": "string", "description": "The input field that was refused."},
        "errors": {
            "type": "array",
            "description": "Every refused field of a request that did not match its schema, or of a bulk input's rows.",
            "items": {
                "type": "object",
                "required": ["field", "message"],
                "properties": {
                    "field": {"type": "string"},
                    "message": {"type": "string"},
                    "line": {"type": "integer", "description": "The bulk input's row, from 1 (0: the input itself)."},
                },
            },
        },
        "stationErrorCode": {"type": "string", "description": "The OCPP CALLERROR code the station answered."},
        "requestId": {
            "type": "string",
            "description": "The session request of POST /sessions; GET /sessions/requests/{requestId} reads it.",
        },
        "stationErrorDescription": {
            "type": "string",
            "description": "The station's description of its error, or why its answer was refused.",
        },
    },
    "additionalProperties": True,
}

# Status → description, as `problems` maps them.
DESCRIPTIONS = {
    "400": "The body cannot be read as UTF-8 JSON.",
    "401": "No access token, or one that is invalid, expired or revoked.",
    "403": "The application's groups do not grant the scope this operation needs.",
    "404": (
        "No such object within the caller's reach, in the path, the query or named in the body; or a cursor of the"
        " documented form that no page of this list gave."
    ),
    "409": "The object's state does not allow this.",
    "413": "The body is larger than the API accepts.",
    "422": "The input does not match the operation's schema or bounds.",
    "429": "The application's rate limit is spent for now; retry after the seconds `Retry-After` says.",
    "502": "The station answered with an error, or with an answer its schema refuses.",
    "503": "The station is not connected.",
    "504": "The station did not answer in time.",
}

# On every answer to an authenticated request (docs/partners.md "Rate limits").
RATE_LIMIT_HEADERS: dict[str, Any] = {
    "RateLimit-Policy": {
        "description": 'The application\'s quota: `"app";q=REQUESTS;w=60`, requests a minute.',
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": 'Where the application stands: `"app";r=REMAINING;t=SECONDS`, the requests it may make now'
        " and the seconds until its whole quota is back.",
        "schema": {"type": "string"},
    },
}

SCOPE_DESCRIPTIONS: dict[Scope, str] = {
    Scope.SITES_READ: "Read sites, stations and local authorization lists.",
    Scope.SITES_WRITE: "Create and change sites, stations and local authorization lists.",
    Scope.CHARGE_POINTS_READ: "Read charge points.",
    Scope.CHARGE_POINTS_WRITE: "Send commands to stations and charge points.",
    Scope.SESSIONS_WRITE: "Start and stop charging sessions.",
    Scope.TRANSACTIONS_READ: "Read transactions.",
    Scope.EVENTS_READ: "Read events.",
    Scope.WEBHOOKS_READ: "Read webhooks and their dead letters.",
    Scope.WEBHOOKS_WRITE: "Create, change and replay webhooks.",
    Scope.APPLICATIONS_WRITE: "Manage API applications.",
    Scope.GROUPS_WRITE: "Manage groups and their members.",
    Scope.METERS_READ: "Read meters.",
    Scope.METERS_WRITE: "Create and change meters.",
    Scope.OCPP_MESSAGES_READ: "Read stations' OCPP message logs (every frame, as sent and received).",
    Scope.AUDIT_LOG_READ: "Read the company's audit log (granted over the whole company; a site grant reads none).",
}


def install(api: FastAPI, routers: Iterable[APIRouter], auth_url: str) -> None:
    """Make `api` publish the completed document (computed once, on first request, as FastAPI does). The
    operations are read from `routers`, included in `api` without a prefix, whose routes are the declared ones."""
    routes = [route for router in routers for route in router.routes]
    generate = api.openapi

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is None:
            api.openapi_schema = complete(generate(), routes, auth_url)
        return api.openapi_schema

    api.openapi = openapi  # type: ignore[method-assign]


def complete(document: dict[str, Any], routes: Iterable[object], auth_url: str) -> dict[str, Any]:
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas["Problem"] = PROBLEM_SCHEMA
    schemes = components.setdefault("securitySchemes", {})
    # The bearer declaration in `security` only made FastAPI list a scheme; the token is one of ours, so the
    # flow that issues it, with its scopes, replaces it.
    schemes.pop("HTTPBearer", None)
    schemes[SCHEME] = {
        "type": "oauth2",
        "description": "An access token from the client-credentials grant, sent as a bearer token (RFC 6750).",
        "flows": {
            "clientCredentials": {
                "tokenUrl": f"{auth_url}/oauth2/token",
                "scopes": {scope.value: SCOPE_DESCRIPTIONS.get(scope, scope.value) for scope in Scope},
            }
        },
    }
    for route in routes:
        if not isinstance(route, APIRoute) or not route.include_in_schema:
            continue
        scopes = sorted({s.value for s in _scopes(route.dependant)})
        names = _names_objects_in_query(route.dependant)
        for method in route.methods or ():
            operation = document["paths"].get(route.path_format, {}).get(method.lower())
            if operation is not None:
                _describe(operation, route.path_format, method, scopes, names)
    _drop_unused_validation_schemas(document)
    _refuse_nul(document)
    # After the U+0000 rule, which is about what the API accepts: an event is what the service sends, and its
    # schema is published exactly as docs/schemas/ has it.
    _add_webhooks(document)
    return document


WEBHOOK_DESCRIPTIONS: dict[str, str] = {
    EventType.AUTHORIZE: (
        "An authorization decision on an idTag (the site's local list, a plugin or the upstream decided), and again"
        " when a StartTransaction has the idTag decided anew."
    ),
    EventType.CHARGE_POINT_STATUS: (
        "A connector's status changed; the first status a connector reports is sent too. A new error code or info"
        " under the same status raises no event."
    ),
    EventType.START_TRANSACTION: "A transaction started, reported by a station or detected by a meter.",
    EventType.STOP_TRANSACTION: (
        "A transaction stopped. It may arrive before its StartTransaction while that lane retries: correlate by"
        " transactionId."
    ),
    WEBHOOK_TEST: (
        "A test event an operator or application asked for: sent once, at once, without retries, to an enabled or"
        " a disabled webhook; never subscribed to. Answer 2xx; nothing else is expected of it."
    ),
}

# What every request of every webhook carries besides the body (docs/webhooks.md "The request"). `Authorization`
# depends on the webhook's auth type and is described in prose: OpenAPI ignores a header parameter of that name.
SIGNED_HEADERS: list[dict[str, Any]] = [
    {
        "name": "x-request-id",
        "in": "header",
        "required": True,
        "description": "A fresh UUID for every HTTP request: a retry of the same event gets a new one.",
        "schema": {"type": "string", "format": "uuid"},
    },
    {
        "name": "Content-Digest",
        "in": "header",
        # A webhook set to the legacy format sends none: its signature does not cover the body.
        "required": False,
        "description": (
            "RFC 9530 digest of the body, `sha-256=:<base64>:`, covered by the signature; absent in the legacy"
            " format, which does not cover the body."
        ),
        "schema": {"type": "string"},
    },
    {
        "name": "Signature-Input",
        "in": "header",
        "required": True,
        "description": (
            'RFC 9421: `sig1=("@method" "@path" "x-request-id" "content-digest");created=<unix>;keyid="sign";'
            'alg="ed25519"` (or `alg="rsa-pss-sha512"`). A webhook set to the legacy format sends'
            " `sig1=created=<unix>;keyId=sign;alg=<alg>;headers=@method @path x-request-id` instead, where `alg` may"
            " also be `rsa-pss-sha256`."
        ),
        "schema": {"type": "string"},
    },
    {
        "name": "Signature",
        "in": "header",
        "required": True,
        "description": (
            "`sig1=:<base64>:`, verified with the key of kid `sign` in `{auth_url}/.well-known/jwks.json` whose"
            " type the `alg` names (legacy format: `sig1=<base64>`)."
        ),
        "schema": {"type": "string"},
    },
]

WEBHOOK_RESPONSES: dict[str, Any] = {
    "2XX": {"description": "Delivered. The body of the answer is not read beyond its first 64 KiB."},
    "default": {
        "description": (
            "Any other answer, a redirect, no status within 10 s or a connection error is a failed attempt: the"
            " lane's head is tried again 10 s later, up to 360 times, then kept as a dead letter. A test event is"
            " not retried."
        )
    },
}


def _add_webhooks(document: dict[str, Any]) -> None:
    schemas: dict[str, Any] = document["components"]["schemas"]
    webhooks: dict[str, Any] = {}
    for name in DOCUMENTED_EVENTS:
        component = f"{name}Event"
        schema = event_json_schema(name)
        for key in ("$schema", "$id"):
            del schema[key]
        for def_name, definition in schema.pop("$defs", {}).items():
            _add_component(schemas, def_name, _components_refs(definition))
        _add_component(schemas, component, _components_refs(schema))
        webhooks[name] = {
            "post": {
                "operationId": f"receive{name}",
                "summary": f"{name} event",
                "description": WEBHOOK_DESCRIPTIONS[name]
                + " Sent with `Authorization` as the webhook's auth type says: none, `Basic`, `Token <token>` or"
                " `Bearer <token>` from the partner's token endpoint (OAuth2 client credentials).",
                "tags": ["events"],
                "parameters": SIGNED_HEADERS,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{component}"}}},
                },
                "responses": WEBHOOK_RESPONSES,
            }
        }
    document["webhooks"] = webhooks


def _add_component(schemas: dict[str, Any], name: str, schema: dict[str, Any]) -> None:
    if schemas.setdefault(name, schema) != schema:
        raise RuntimeError(f"the event schema {name!r} would replace an API schema of the same name")


def _components_refs(node: Any) -> Any:
    """`node` with its `#/$defs/X` references pointing at `#/components/schemas/X`."""
    if isinstance(node, dict):
        return {
            key: (
                value.replace("#/$defs/", "#/components/schemas/", 1)
                if key == "$ref" and isinstance(value, str)
                else _components_refs(value)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_components_refs(value) for value in node]
    return node


# What every string of a request may not hold (`domain.text` Rule 2), in the form every regex dialect reads.
NO_NUL = "^[^\\x00]*$"


def _refuse_nul(node: Any) -> None:
    """Give every string schema without a pattern, format or enumeration the pattern that refuses U+0000. The
    patterns written on fields already leave it out."""
    if isinstance(node, dict):
        if node.get("type") == "string" and not {"pattern", "format", "enum", "const"} & node.keys():
            node["pattern"] = NO_NUL
        for value in node.values():
            _refuse_nul(value)
    elif isinstance(node, list):
        for value in node:
            _refuse_nul(value)


def _names_objects_in_query(dependant: Dependant) -> bool:
    """Whether the query names an object that must exist (a required parameter such as `/events?siteId=`) or a
    page (`cursor`): either may name none."""
    for parameter in _query_params(dependant):
        if parameter.alias == "cursor" or parameter.field_info.is_required():
            return True
    return False


def _query_params(dependant: Dependant) -> Iterator[Any]:
    yield from dependant.query_params
    for sub in dependant.dependencies:
        yield from _query_params(sub)


def _describe(operation: dict[str, Any], path: str, method: str, scopes: list[str], names: bool) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    # The input check reads every request the same way, before any route, whatever its method.
    statuses = ["400", "413", "422"]
    if scopes:
        operation["security"] = [{SCHEME: scopes}]
        statuses += ["401", "403", "429"]
        for status, answer in responses.items():
            if status.startswith("2"):
                answer.setdefault("headers", {}).update(RATE_LIMIT_HEADERS)
    else:
        operation.pop("security", None)
    if "{" in path or method != "GET" or names:
        # A write names other objects in its body too (a session's charge point, a station's site): unknown or
        # out of reach, they are a 404 as path ids are (schemathesis found POST /sessions answering one).
        statuses.append("404")
    if method != "GET":
        statuses.append("409")
    if method == "POST" and COMMAND_PATH.match(path):
        statuses += ["502", "503", "504"]
    for status in sorted(statuses):
        # FastAPI's own 422 describes a body `problems` never sends: ours replaces it.
        responses[status] = _problem(status)
    operation["responses"] = dict(sorted(responses.items()))


def _problem(status: str) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "description": DESCRIPTIONS[status],
        "content": {PROBLEM_JSON: {"schema": {"$ref": PROBLEM_REF}}},
    }
    if status in ("401", "403"):
        answer["headers"] = {
            "WWW-Authenticate": {"description": "The RFC 6750 bearer challenge.", "schema": {"type": "string"}}
        }
    if status == "429":
        answer["headers"] = {
            "Retry-After": {
                "description": "Seconds until the application may make a request again.",
                "schema": {"type": "integer", "minimum": 1},
            },
            **RATE_LIMIT_HEADERS,
        }
    return answer


def _scopes(dependant: Dependant) -> Iterator[Scope]:
    for sub in dependant.dependencies:
        call: Callable[..., object] | None = sub.call
        scope = required_scope(call) if call is not None else None
        if scope is not None:
            yield scope
        yield from _scopes(sub)


def _drop_unused_validation_schemas(document: dict[str, Any]) -> None:
    """FastAPI's validation error schemas, once no answer refers to them any more."""
    schemas = document["components"]["schemas"]
    for name in ("HTTPValidationError", "ValidationError"):  # the first refers to the second
        if name in schemas and f"#/components/schemas/{name}'" not in repr(document):
            del schemas[name]
