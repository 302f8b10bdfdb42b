"""The run's stores at the latest schema, made once by the controlling process (tests/conftest.py) and copied by
each test: a copy costs a fraction of migrating a new store, which most tests would otherwise repeat."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

SQLITE_TEMPLATE_VARIABLE = "CHARGENET_TEST_SQLITE_TEMPLATE"
PG_TEMPLATE_VARIABLE = "CHARGENET_TEST_PG_TEMPLATE"


def copy_sqlite_template(path: Path) -> None:
    """Put a store at the latest schema, with nothing stored, at `path` (a new file)."""
    shutil.copyfile(os.environ[SQLITE_TEMPLATE_VARIABLE], path)


def prepare_data_dir(data_dir: Path) -> Path:
    """A data folder whose SQLite store (chargenet's default one there) is at the latest schema, unless it has
    one already; answers the folder."""
    data_dir.mkdir(parents=True, exist_ok=True)
    store = data_dir / "chargenet.db"
    if not store.exists():
        copy_sqlite_template(store)
    return data_dir
