"""Every field of every request body takes only the JSON type its schema names (decisions.md "Input the service
refuses"): pydantic's lax mode would read `true` or `"5"` as an integer and `1` as a boolean, which a partner's
client would then rely on while the OpenAPI document says otherwise."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from typing import Annotated, Any, get_args

import pytest
from fastapi.routing import APIRoute
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

import chargenet.api.routes as routes


def _body_models() -> Iterator[type[BaseModel]]:
    seen: set[type[BaseModel]] = set()
    for module in pkgutil.iter_modules(routes.__path__):
        router = importlib.import_module(f"{routes.__name__}.{module.name}").router
        for route in router.routes:
            if isinstance(route, APIRoute) and route.body_field is not None:
                yield from _models_in(route.body_field.field_info.annotation, seen)


def _models_in(annotation: Any, seen: set[type[BaseModel]]) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation not in seen:
            seen.add(annotation)
            yield annotation
            for info in annotation.model_fields.values():
                yield from _models_in(info.annotation, seen)
        return
    for argument in get_args(annotation):
        yield from _models_in(argument, seen)


def _json_types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    kind = schema.get("type")
    found = {kind} if isinstance(kind, str) else set()
    for key in ("anyOf", "oneOf", "allOf"):
        for part in schema.get(key, []):
            found |= _json_types(part)
    return found


def _scalar_fields() -> Iterator[Any]:
    for model in _body_models():
        for name, info in model.model_fields.items():
            if not _nested(info):
                yield pytest.param(_adapter(info), id=f"{model.__name__}.{info.alias or name}")


def _nested(info: FieldInfo) -> bool:
    return any(True for _ in _models_in(info.annotation, set()))


def _adapter(info: FieldInfo) -> TypeAdapter[Any]:
    annotation = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    return TypeAdapter(annotation)


# For each JSON type a schema names, values of other types that lax parsing would take, with their own type.
WRONG_FOR = {
    "integer": [("true", "boolean"), ('"7"', "string")],
    "number": [("true", "boolean"), ('"7.5"', "string")],
    "boolean": [("1", "integer"), ('"true"', "string")],
}


@pytest.mark.parametrize("field", list(_scalar_fields()))
def test_a_body_field_refuses_values_of_another_json_type(field: TypeAdapter[Any]) -> None:
    types = _json_types(field.json_schema())
    wrong = {value for kind in types for value, its_type in WRONG_FOR.get(kind, []) if its_type not in types}
    accepted = []
    for value in sorted(wrong):
        try:
            field.validate_json(value)
        except ValidationError:
            continue
        accepted.append(value)
    assert accepted == []


def test_the_request_bodies_are_found() -> None:
    assert len(list(_body_models())) >= 40
