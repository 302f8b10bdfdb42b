"""The simulated 2.0.1 station checks every payload it sends and receives against the OCPP 2.0.1 JSON schemas the
`ocpp` package ships (read from its folder, as the edge reads 1.6's: the package's runtime is not used), so a test
learns of a malformed frame on either side where it happens.

A violation is named with OCPP-J 2.0.1's CALLERROR codes (§4.3): a missing field is an occurrence violation, a
field of the wrong JSON type a type violation, a value out of its enumeration or bounds a property violation, and
anything else (an unexpected field) a format violation.
"""

from __future__ import annotations

import importlib.util
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema.validators

from chargenet.errors import ChargenetError

_CODE_OF_KEYWORD = {
    "required": "OccurrenceConstraintViolation",
    "type": "TypeConstraintViolation",
    "enum": "PropertyConstraintViolation",
    "maxLength": "PropertyConstraintViolation",
    "minLength": "PropertyConstraintViolation",
    "minimum": "PropertyConstraintViolation",
    "maximum": "PropertyConstraintViolation",
    "maxItems": "OccurrenceConstraintViolation",
    "minItems": "OccurrenceConstraintViolation",
}


class FrameViolation(ValueError):
    """A payload the 2.0.1 schemas refuse; `code` is the CALLERROR code that says why."""

    def __init__(self, code: str, description: str) -> None:
        super().__init__(f"{code}: {description}")
        self.code, self.description = code, description


def _schema_dir() -> Path:
    # find_spec locates the package without executing it.
    spec = importlib.util.find_spec("ocpp")
    if spec is None or spec.origin is None:
        raise ChargenetError("the `ocpp` package, which ships the OCPP 2.0.1 JSON schemas, is not installed")
    return Path(spec.origin).parent / "v201" / "schemas"


@cache
def known_actions() -> frozenset[str]:
    """Every OCPP 2.0.1 action, read from the schema files."""
    return frozenset(p.stem.removesuffix("Request") for p in _schema_dir().glob("*Request.json"))


@cache
def _validator(name: str) -> Any:
    schema = json.loads((_schema_dir() / f"{name}.json").read_text())
    return jsonschema.validators.validator_for(schema)(schema)


def check(action: str, payload: dict[str, Any], *, request: bool) -> None:
    """Raise `FrameViolation` unless `payload` is a valid request (or response) of `action`."""
    if action not in known_actions():
        raise FrameViolation("NotImplemented", f"{action} is no OCPP 2.0.1 action")
    error = jsonschema.exceptions.best_match(
        _validator(f"{action}{'Request' if request else 'Response'}").iter_errors(payload)
    )
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "payload"
        code = _CODE_OF_KEYWORD.get(str(error.validator), "FormatViolation")
        raise FrameViolation(code, f"{action} {where}: {error.message}")
