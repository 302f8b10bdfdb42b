"""Bounded integers for API parameters and body fields, one annotated type each, so that every integer the API
reads has its range in the OpenAPI document and is checked before a service or the store sees it (decisions.md
"Input the service refuses": API integers are bounded as the OpenAPI says; 32-bit signed at most, as `domain.text`
Rule 3 holds for every JSON body anyway).

A body integer is what JSON Schema calls one: a JSON number without a fractional part, so `2.0` is the integer 2
(JSON Schema 2020-12 §6.1.1 "integer"), while a string, a boolean or `2.5` is refused as the document says.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query
from pydantic import BeforeValidator, Field

from chargenet.domain.text import INT32_MAX, INT32_MIN


def _integral(value: Any) -> Any:
    """A float without a fractional part as the int it is; anything else as it came, for the strict check."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# The marker that makes `2.0` the integer 2. It comes after `Bounds` in `Annotated`: a validator before the
# constraints would hide them from the JSON schema.
Integral = BeforeValidator(_integral)


def Bounds(ge: int = INT32_MIN, le: int = INT32_MAX) -> Any:
    """A body integer's range, `ge`..`le`, both within 32 bits: `Annotated[int, Bounds(1, 16), Integral]`."""
    assert INT32_MIN <= ge <= le <= INT32_MAX
    return Field(strict=True, ge=ge, le=le)


Int32 = Annotated[int, Bounds(), Integral]
Int32Path = Annotated[int, Path(ge=INT32_MIN, le=INT32_MAX)]
Int32Query = Annotated[int, Query(ge=INT32_MIN, le=INT32_MAX)]
