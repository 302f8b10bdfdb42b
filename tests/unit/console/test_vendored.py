"""The console's vendored front-end files are byte for byte those of the npm packages pinned for them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
VENDOR = ROOT / "chargenet" / "console" / "static" / "vendor"
NODE_MODULES = ROOT / "tests" / "browser" / "node_modules"

# vendored file -> (npm package, file in the package)
VENDORED = {"htmx.min.js": ("htmx.org", "dist/htmx.min.js"), "htmx.LICENSE": ("htmx.org", "LICENSE")}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", sorted(VENDORED))
def test_each_vendored_file_is_the_pinned_packages_own(name: str) -> None:
    package, inside = VENDORED[name]
    assert sha256(VENDOR / name) == sha256(NODE_MODULES / package / inside), f"run the copy in {VENDOR}/README.md"


def test_the_vendored_versions_are_the_pinned_ones_and_documented() -> None:
    pins = json.loads((ROOT / "tests" / "browser" / "package.json").read_text())["dependencies"]
    lock = json.loads((ROOT / "tests" / "browser" / "package-lock.json").read_text())["packages"]
    readme = (VENDOR / "README.md").read_text()
    for package in {p for p, _ in VENDORED.values()}:
        installed = json.loads((NODE_MODULES / package / "package.json").read_text())["version"]
        assert pins[package] == lock[f"node_modules/{package}"]["version"] == installed
        assert f"`{package}`" in readme and f"| {installed} |" in readme


def test_the_wheel_carries_the_templates_and_static_files() -> None:
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["chargenet"]
    package = ROOT / "chargenet"
    shipped = {p for pattern in data for p in package.glob(pattern)}
    console = package / "console"
    needed = {p for p in console.rglob("*") if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts}
    assert needed <= shipped, sorted(str(p.relative_to(package)) for p in needed - shipped)
