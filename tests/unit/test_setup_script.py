"""`make test`'s set-up (scripts/setup.py): what it cannot install itself, it names in one command and stops."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "setup.py"


@pytest.fixture
def setup_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chargenet_setup_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _machine_without_anything(setup_script: ModuleType, monkeypatch: pytest.MonkeyPatch, *, uid: int) -> None:
    monkeypatch.setattr(setup_script, "postgres_server_present", lambda: False)
    monkeypatch.setattr(setup_script, "chromium_present", lambda: False)
    monkeypatch.setattr(setup_script, "libatomic_present", lambda: False)
    monkeypatch.setattr(setup_script, "nginx_present", lambda: False)
    monkeypatch.setattr(setup_script.shutil, "which", lambda name: "/usr/bin/apt-get" if name == "apt-get" else None)
    monkeypatch.setattr(setup_script.os, "geteuid", lambda: uid)


def test_test_set_up_needs_postgresql_chromium_libatomic_curl_and_nginx_from_debian(
    setup_script: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    _machine_without_anything(setup_script, monkeypatch, uid=1000)
    assert setup_script.missing_packages("test") == [
        "postgresql",
        "chromium",
        "fonts-liberation",
        "libatomic1",
        "curl",
        "nginx-light",
    ]


def test_demo_set_up_needs_no_system_package(setup_script: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    _machine_without_anything(setup_script, monkeypatch, uid=1000)
    assert setup_script.missing_packages("demo") == []


def test_without_root_it_stops_at_once_printing_the_one_command_to_run(
    setup_script: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    _machine_without_anything(setup_script, monkeypatch, uid=1000)
    ran: list[list[str]] = []
    monkeypatch.setattr(setup_script, "_run", lambda command, **_: ran.append(command))
    with pytest.raises(SystemExit) as stopped:
        setup_script.install_system_packages("test")
    message = str(stopped.value.code)
    packages = "postgresql chromium fonts-liberation libatomic1 curl nginx-light"
    command = f"sudo apt-get install -y --no-install-recommends {packages}"
    assert command in message
    assert ran == []


def test_as_root_it_installs_what_is_missing_with_apt_get(
    setup_script: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    _machine_without_anything(setup_script, monkeypatch, uid=0)
    ran: list[list[str]] = []

    def run(command: list[str], **_: object) -> None:
        ran.append(command)
        if command[:2] == ["apt-get", "install"]:
            monkeypatch.setattr(setup_script, "postgres_server_present", lambda: True)
            monkeypatch.setattr(setup_script, "chromium_present", lambda: True)
            monkeypatch.setattr(setup_script, "libatomic_present", lambda: True)
            monkeypatch.setattr(setup_script, "nginx_present", lambda: True)
            monkeypatch.setattr(setup_script.shutil, "which", lambda name: f"/usr/bin/{name}")

    monkeypatch.setattr(setup_script, "_run", run)
    assert setup_script.install_system_packages("test") is True
    assert ran[0] == ["apt-get", "update", "-qq"]
    assert ran[1][:2] == ["apt-get", "install"]
    assert ran[1][-6:] == ["postgresql", "chromium", "fonts-liberation", "libatomic1", "curl", "nginx-light"]


def test_a_machine_that_has_everything_installs_nothing(
    setup_script: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(setup_script, "postgres_server_present", lambda: True)
    monkeypatch.setattr(setup_script, "chromium_present", lambda: True)
    monkeypatch.setattr(setup_script, "libatomic_present", lambda: True)
    monkeypatch.setattr(setup_script, "nginx_present", lambda: True)
    monkeypatch.setattr(setup_script.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(setup_script, "_run", lambda command, **_: pytest.fail(f"ran {command}"))
    assert setup_script.install_system_packages("test") is False


def test_it_runs_under_the_systems_python_alone() -> None:
    # It runs before .venv exists, so it may import nothing but the standard library.
    imported = {
        line.split()[1].split(".")[0]
        for line in SCRIPT.read_text().splitlines()
        if line.startswith(("import ", "from ")) and not line.startswith("from __future__")
    }
    assert imported <= set(sys.stdlib_module_names)


def test_every_npm_folder_is_installed_with_its_own_stamp_and_only_when_its_lock_changed(
    setup_script: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real = [folder.relative_to(setup_script.ROOT).as_posix() for folder in setup_script.NPM_FOLDERS]
    assert real == ["tests/interop", "tests/browser"]
    folders = []
    for name in ("interop", "browser"):
        folder = tmp_path / name
        (folder / "node_modules").mkdir(parents=True)
        (folder / "package-lock.json").write_text(f'{{"name": "{name}"}}')
        folders.append(folder)
    monkeypatch.setattr(setup_script, "NPM_FOLDERS", tuple(folders))
    monkeypatch.setattr(setup_script, "ROOT", tmp_path)
    installed: list[Path] = []

    class Finished:
        stdout = "v22.0.0\n"

    def run(command: list[str], **kwargs: object) -> Finished:
        if "ci" in command:
            installed.append(Path(str(kwargs["cwd"])))
        return Finished()

    monkeypatch.setattr(setup_script.subprocess, "run", run)
    assert setup_script.node_packages() is True
    assert installed == folders
    assert all((folder / "node_modules" / ".installed").exists() for folder in folders)
    assert setup_script.node_packages() is False  # nothing changed: nothing installed
    (folders[1] / "package-lock.json").write_text('{"name": "browser", "v": 2}')
    installed.clear()
    assert setup_script.node_packages() is True and installed == [folders[1]]
