"""Store tests run against both stores (docs/testing.md, "Which tests run on both stores"): no test of the store
itself or of what is built straight on it (the use cases, the outbox, the webhook queue, the meters' leases, the
alerts) is marked `sqlite_only`, however its module was written."""

from __future__ import annotations

import ast
from pathlib import Path

INTEGRATION = Path(__file__).resolve().parents[2] / "integration"
ON_BOTH = ["store", "services", "outbox", "webhooks", "meters", "alerts"]


def _marks_sqlite_only(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.Attribute) and node.attr == "sqlite_only" for node in ast.walk(tree))


def test_no_test_of_the_store_or_what_is_built_on_it_runs_on_sqlite_alone() -> None:
    folders = [INTEGRATION / name for name in ON_BOTH]
    assert all(folder.is_dir() for folder in folders)
    marked = [str(path.relative_to(INTEGRATION)) for folder in folders for path in sorted(folder.rglob("*.py"))]
    assert [path for path in marked if _marks_sqlite_only(INTEGRATION / path)] == []
