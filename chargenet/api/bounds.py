"""Bounded integers for API parameters and body fields, one annotated type each, so that every integer the API
reads has its range in the OpenAPI document and is checked before a service or the store sees it (decisions.md
"Input the service refuses": API integers are bounded as the OpenAPI says; 32-bit signed at most, as `domain.text`
Rule 3 holds for every JSON body anyway)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query
from pydantic import Field

from chargenet.domain.text import INT32_MAX, INT32_MIN

Int32 = Annotated[int, Field(strict=True, ge=INT32_MIN, le=INT32_MAX)]
Int32Path = Annotated[int, Path(ge=INT32_MIN, le=INT32_MAX)]
Int32Query = Annotated[int, Query(ge=INT32_MIN, le=INT32_MAX)]
