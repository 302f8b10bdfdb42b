"""The suite's choice of stores (tests/support/store_choice.py): a test marked `sqlite_only` runs on SQLite alone
under the id it has on both, `both_stores` gives a test of such a module both back, and each mark needs a reason."""

from __future__ import annotations

import pytest

CONFTEST = """
import pytest

pytest_plugins = ["tests.support.store_choice"]


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request):
    return request.param


@pytest.fixture
def store(database_url):
    return database_url
"""
MODULE = """
import pytest

pytestmark = pytest.mark.sqlite_only(reason="what is parsed does not depend on the store")


def test_through_the_store(store):
    pass


@pytest.mark.parametrize("limit", [1, 2])
def test_with_its_own_parameters(database_url, limit):
    pass


@pytest.mark.both_stores(reason="a query that differs between them")
def test_of_a_query(store):
    pass


def test_without_a_store():
    pass
"""
UNMARKED = """
import pytest


def test_of_the_store(store):
    pass


@pytest.mark.parametrize("limit", [1])
def test_with_its_own_parameters(database_url, limit):
    pass
"""


def _collected(pytester: pytest.Pytester, **modules: str) -> pytest.RunResult:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**modules)
    return pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", "--collect-only", "-q")


def test_sqlite_only_tests_run_on_sqlite_alone_under_their_ids_and_others_on_both(pytester: pytest.Pytester) -> None:
    result = _collected(pytester, test_faces=MODULE, test_store=UNMARKED)
    assert sorted(line for line in result.outlines if "::" in line) == [
        "test_faces.py::test_of_a_query[postgresql]",
        "test_faces.py::test_of_a_query[sqlite]",
        "test_faces.py::test_through_the_store[sqlite]",
        "test_faces.py::test_with_its_own_parameters[sqlite-1]",
        "test_faces.py::test_with_its_own_parameters[sqlite-2]",
        "test_faces.py::test_without_a_store",
        "test_store.py::test_of_the_store[postgresql]",
        "test_store.py::test_of_the_store[sqlite]",
        "test_store.py::test_with_its_own_parameters[postgresql-1]",
        "test_store.py::test_with_its_own_parameters[sqlite-1]",
    ]


def test_a_store_mark_without_a_reason_stops_the_run(pytester: pytest.Pytester) -> None:
    module = "import pytest\n\n@pytest.mark.sqlite_only\ndef test_it(store):\n    pass\n"
    result = _collected(pytester, test_unexplained=module)
    assert result.ret != 0
    assert "sqlite_only takes a reason=" in result.stdout.str() + result.stderr.str()
