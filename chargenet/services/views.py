"""What use cases return: frozen, typed views.

A view's attributes are snake_case in Python and camelCase (its alias) wherever it is rendered, the API's
response bodies and the command line's `--json` alike; both render the same view with pydantic, so neither
writes a wire format of its own and the OpenAPI document describes every body.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel

# Date-times as `datetime.isoformat()` writes them (`+00:00`, not pydantic's `Z`), as they always were.
Instant = Annotated[datetime, PlainSerializer(lambda value: value.isoformat(), return_type=str)]


class View(BaseModel):
    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)


def rendered(view: BaseModel) -> dict[str, Any]:
    """A view as JSON-ready data, as the API answers it (for the command line's `--json` and tables)."""
    return view.model_dump(mode="json", by_alias=True)


def _none(value: object) -> bool:
    return value is None


def optional() -> Any:
    """A field that is absent from the rendered view when it has no value (decisions.md: optional, never null)."""
    return Field(default=None, exclude_if=_none)


def like_escaped(text: str) -> str:
    """`text` for a LIKE pattern with `escape="\\"`: its own %, _ and backslashes match only themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
