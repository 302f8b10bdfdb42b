"""The run's stores at the latest schema, made once by the controlling process (tests/conftest.py) and copied by
each test: a copy costs a fraction of migrating a new store, which most tests would otherwise repeat."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

SQLITE_TEMPLATE_VARIABLE = "CHARGENET_TEST_SQLITE_TEMPLATE"
SQLITE_TEMPLATE_DIGEST_VARIABLE = "CHARGENET_TEST_SQLITE_TEMPLATE_SHA256"
SQLITE_TEMPLATE_STAT_VARIABLE = "CHARGENET_TEST_SQLITE_TEMPLATE_STAT"
PG_TEMPLATE_VARIABLE = "CHARGENET_TEST_PG_TEMPLATE"

_template_bytes: bytes | None = None


class TemplateChanged(AssertionError):
    """The run's SQLite template no longer holds what the controlling process migrated into it."""


def seal_sqlite_template(path: Path) -> None:
    """Name the template and its digest for this process and the workers it starts."""
    os.environ[SQLITE_TEMPLATE_VARIABLE] = str(path)
    os.environ[SQLITE_TEMPLATE_DIGEST_VARIABLE] = hashlib.sha256(path.read_bytes()).hexdigest()
    os.environ[SQLITE_TEMPLATE_STAT_VARIABLE] = _stat(path)


def _stat(path: Path) -> str:
    status = path.stat()
    return f"{status.st_mtime_ns}:{status.st_size}:{status.st_ino}"


def _template() -> bytes:
    # Read once per process and checked against the digest taken when it was made: every copy a process writes is
    # then the migrated template, whatever later happens to the file.
    global _template_bytes
    if _template_bytes is None:
        content = Path(os.environ[SQLITE_TEMPLATE_VARIABLE]).read_bytes()
        if hashlib.sha256(content).hexdigest() != os.environ[SQLITE_TEMPLATE_DIGEST_VARIABLE]:
            raise TemplateChanged(f"the SQLite template {os.environ[SQLITE_TEMPLATE_VARIABLE]} was written to")
        _template_bytes = content
    return _template_bytes


def copy_sqlite_template(path: Path) -> None:
    """Put a store at the latest schema, with nothing stored, at `path`, where no store may be yet: a journal
    left beside it would be replayed into the copy."""
    leftovers = [p for p in (path, path.with_name(path.name + "-wal")) if p.exists()]
    if leftovers:
        raise FileExistsError(f"a store is already at {leftovers[0]}")
    path.write_bytes(_template())


def sqlite_template_unchanged() -> bool:
    """Whether the template file is as it was made, by its modification time, size and inode: cheap enough to ask
    after every test."""
    location = os.environ.get(SQLITE_TEMPLATE_VARIABLE)
    if location is None:
        return True
    try:
        return _stat(Path(location)) == os.environ[SQLITE_TEMPLATE_STAT_VARIABLE]
    except FileNotFoundError:
        return False


def prepare_data_dir(data_dir: Path) -> Path:
    """A data folder whose SQLite store (chargenet's default one there) is at the latest schema, unless it has
    one already; answers the folder."""
    data_dir.mkdir(parents=True, exist_ok=True)
    store = data_dir / "chargenet.db"
    if not store.exists():
        copy_sqlite_template(store)
    return data_dir
