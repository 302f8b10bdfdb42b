"""The models package: a name imports its area's module alone; `Base` brings every table."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sqlalchemy.orm import DeclarativeBase

import chargenet.store.models as models

ROOT = Path(__file__).resolve().parents[3]


def _fresh(code: str) -> Any:
    """What `code` prints as JSON, run by a fresh interpreter (this one has imported every model long ago)."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return json.loads(done.stdout)


def test_every_exported_name_is_found_in_the_module_that_defines_it() -> None:
    for name in models.__all__:
        value = getattr(models, name)
        assert value.__module__ == f"chargenet.store.models.{models._MODULES[name]}", name
    assert set(models._MODULES) == set(models.__all__)


def test_every_mapped_class_of_the_areas_is_exported() -> None:
    for area in set(models._MODULES.values()):
        module = importlib.import_module(f"chargenet.store.models.{area}")
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__ and issubclass(value, DeclarativeBase):
                assert name in models.__all__, name


def test_a_model_asked_of_the_package_imports_its_area_alone() -> None:
    loaded = _fresh(
        "import json, sys\n"
        "from chargenet.store.models import Company\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('chargenet.store.models.'))))"
    )
    assert loaded == ["chargenet.store.models.base", "chargenet.store.models.tenants"]


def test_base_asked_of_the_package_holds_every_table() -> None:
    tables = _fresh(
        "import json\nfrom chargenet.store.models import Base\nprint(json.dumps(sorted(Base.metadata.tables)))"
    )
    assert tables == sorted(models.Base.metadata.tables)
    assert {"companies", "webhooks", "meters", "ocpp_messages", "events"} <= set(tables)
