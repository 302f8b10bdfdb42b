from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from chargenet.clock import ManualClock
from chargenet.domain.events import AuthorizationStatus
from chargenet.edge.authorizers import ENTRY_POINT_GROUP, AuthorizeRequest, ask_plugins, load_authorizers

REQUEST = AuthorizeRequest("site_1", "CS-1", "TAG1")


class Fixed:
    def __init__(self, name: str, answer: AuthorizationStatus | None) -> None:
        self.name, self.answer, self.asked = name, answer, 0

    async def authorize(self, request: AuthorizeRequest) -> AuthorizationStatus | None:
        self.asked += 1
        return self.answer


class Broken:
    name = "broken"

    async def authorize(self, request: AuthorizeRequest) -> AuthorizationStatus | None:
        raise RuntimeError("plugin bug")


class Never:
    name = "never"

    async def authorize(self, request: AuthorizeRequest) -> AuthorizationStatus | None:
        await asyncio.Event().wait()
        return None


def clock() -> ManualClock:
    return ManualClock(datetime(2026, 7, 1, tzinfo=UTC))


async def test_plugins_are_asked_in_order_until_one_has_an_opinion() -> None:
    first, second, third = Fixed("a", None), Fixed("b", AuthorizationStatus.BLOCKED), Fixed("c", None)
    opinions = await ask_plugins([first, second, third], REQUEST, clock())
    assert opinions == [None, AuthorizationStatus.BLOCKED] and third.asked == 0


@pytest.mark.expected_traceback()
async def test_a_plugin_that_raises_has_no_opinion() -> None:
    assert await ask_plugins([Broken(), Fixed("b", AuthorizationStatus.ACCEPTED)], REQUEST, clock()) == [
        None,
        AuthorizationStatus.ACCEPTED,
    ]


async def test_a_plugin_slower_than_its_time_has_no_opinion() -> None:
    manual = clock()
    asking = asyncio.create_task(ask_plugins([Never()], REQUEST, manual, seconds=2))
    while manual.sleepers == 0:
        await asyncio.sleep(0)
    manual.advance(2)
    assert await asking == [None]


# Plugins installed for real: a distribution in a folder on sys.path, found through its entry points ------------

PLUGIN_MODULE = "chargenet_test_authorizers"
PLUGIN_SOURCE = """
from chargenet.domain.events import AuthorizationStatus


class Good:
    name = "good"

    async def authorize(self, request):
        return AuthorizationStatus.ACCEPTED if request.id_tag == "GOOD" else None


class Broken:
    name = "broken"

    def __init__(self):
        raise RuntimeError("plugin bug at start")


class NotOne:
    pass
"""


@pytest.fixture
def install_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[dict[str, str]], None]]:
    """Install a distribution whose `chargenet.authorizers` entry points are the given name -> target pairs."""

    def install(entries: dict[str, str]) -> None:
        (tmp_path / f"{PLUGIN_MODULE}.py").write_text(PLUGIN_SOURCE)
        dist_info = tmp_path / "chargenet_test_authorizers-1.0.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: chargenet-test-authorizers\nVersion: 1.0\n")
        lines = [f"{name} = {target}" for name, target in entries.items()]
        (dist_info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n" + "\n".join(lines) + "\n")
        monkeypatch.syspath_prepend(str(tmp_path))

    yield install
    sys.modules.pop(PLUGIN_MODULE, None)


def skipped(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [getattr(r, "fields", {}).get("entry_point") for r in caplog.records if "skipped" in r.getMessage()]


async def test_a_plugin_is_loaded_from_its_entry_point_and_asked(
    install_plugins: Callable[[dict[str, str]], None],
) -> None:
    install_plugins({"good": f"{PLUGIN_MODULE}:Good"})
    [plugin] = load_authorizers()
    request = AuthorizeRequest("site_1", "CS-1", "GOOD")
    assert await ask_plugins([plugin], request, clock()) == [AuthorizationStatus.ACCEPTED]


@pytest.mark.expected_traceback("ModuleNotFoundError: No module named 'chargenet_no_such_module'")
def test_a_plugin_that_cannot_be_imported_is_skipped_and_named_in_the_log(
    install_plugins: Callable[[dict[str, str]], None], caplog: pytest.LogCaptureFixture
) -> None:
    install_plugins({"absent": "chargenet_no_such_module:Plugin", "good": f"{PLUGIN_MODULE}:Good"})
    assert [p.name for p in load_authorizers()] == ["good"]
    assert skipped(caplog) == ["absent"]


@pytest.mark.expected_traceback()
def test_a_plugin_whose_factory_raises_is_skipped_and_named_in_the_log(
    install_plugins: Callable[[dict[str, str]], None], caplog: pytest.LogCaptureFixture
) -> None:
    install_plugins({"broken": f"{PLUGIN_MODULE}:Broken", "good": f"{PLUGIN_MODULE}:Good"})
    assert [p.name for p in load_authorizers()] == ["good"]
    assert skipped(caplog) == ["broken"]


def test_an_entry_point_that_is_not_an_authorizer_is_skipped(
    install_plugins: Callable[[dict[str, str]], None], caplog: pytest.LogCaptureFixture
) -> None:
    install_plugins({"good": f"{PLUGIN_MODULE}:Good", "wrong": f"{PLUGIN_MODULE}:NotOne"})
    assert [p.name for p in load_authorizers()] == ["good"]
    assert skipped(caplog) == ["wrong"]
