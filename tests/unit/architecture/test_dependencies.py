"""pyproject.toml's dependencies are what the package uses: each one is imported somewhere in chargenet, or is
a driver or data it needs without importing it by name; and each third-party module chargenet imports is
declared, so a plain `pip install` brings it."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[3]

# Needed at run time, never imported by name.
NOT_IMPORTED = {
    "aiosqlite": "SQLite's driver, which SQLAlchemy loads for a sqlite+aiosqlite URL",
    "asyncpg": "PostgreSQL's driver, which SQLAlchemy loads for a postgresql+asyncpg URL",
    "httptools": "the HTTP parser uvicorn uses when it is installed",
    "ocpp": "its OCPP 1.6 JSON schema files are read from its folder, the package is never imported",
    "pyserial": "pymodbus's serial transport for RTU buses",
    "python-multipart": "Starlette parses the console's forms with it",
    "sniffio": "httpcore looks for it on every request",
    "tzdata": "the tz database for Europe/Brussels where the system has none",
}
# Imported where it is needed, but its own distribution (sdk/python): the partner commands and the demo's
# receiver need it, the service does not.
SEPARATE = {"chargenet-partner"}


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {_name(Requirement(line).name) for line in project["dependencies"]}


@cache
def imported_modules() -> set[str]:
    """The top-level modules chargenet's source imports, whether at the top of a file or inside a function."""
    modules: set[str] = set()
    for path in (ROOT / "chargenet").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names) - {"chargenet"}


def distributions_of(modules: set[str]) -> set[str]:
    provided = packages_distributions()
    return {_name(distribution) for module in modules for distribution in provided.get(module, [module])}


def test_every_dependency_is_imported_or_a_driver_or_data() -> None:
    unused = declared() - distributions_of(imported_modules()) - set(NOT_IMPORTED)
    assert not unused, f"declared but never imported: {sorted(unused)}"


def test_every_listed_driver_is_still_a_dependency() -> None:
    assert set(NOT_IMPORTED) <= declared()


def test_every_imported_library_is_a_dependency() -> None:
    undeclared = distributions_of(imported_modules()) - declared() - SEPARATE
    assert not undeclared, f"imported but not declared: {sorted(undeclared)}"


def test_every_dependency_has_the_tested_version_as_its_lower_bound() -> None:
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().split())
    pinned = {_name(name): version for name, version in pins.items()}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for line in project["dependencies"]:
        requirement = Requirement(line)
        lower = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        assert lower == [pinned[_name(requirement.name)]], line
