"""The command line as its users run it: `chargenet` (its `main`) on the test's database and data folder, in a
thread, with what it prints captured."""

from __future__ import annotations

import asyncio
import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from chargenet.cli.main import main
from tests.integration.cli.helpers import Cli, Result

# A real server for the commands that reach a connected station: the edge tests' fixtures.
from tests.integration.edge.conftest import duo, served  # noqa: F401


@pytest.fixture
def cli(database_url: str, tmp_path: Path) -> Cli:
    async def run(*args: str) -> Result:
        def call() -> Result:
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                code = main([*args, "--database-url", database_url, "--data-dir", str(tmp_path / "data")])
            return Result(code, out.getvalue(), err.getvalue())

        return await asyncio.to_thread(call)

    return run
