"""The RTU tests' serial bus: two pseudo-terminals joined back to back by a process of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import serial

from chargenet.simulators import serial_bus


def test_bytes_written_at_either_end_are_read_at_the_other(tmp_path: Path) -> None:
    with serial_bus.running(tmp_path / "a", tmp_path / "b") as (first, second):
        a = serial.Serial(first, 9600, timeout=2)
        b = serial.Serial(second, 9600, timeout=2)
        try:
            a.write(b"\x01\x04\x00\x00\x00\x02\x71\xcb")
            assert b.read(8) == b"\x01\x04\x00\x00\x00\x02\x71\xcb"
            b.write(b"\x01\x04\x04\x00\x00\x00\x00")
            assert a.read(7) == b"\x01\x04\x04\x00\x00\x00\x00"
        finally:
            a.close()
            b.close()


def test_the_links_are_removed_when_the_bus_stops(tmp_path: Path) -> None:
    with serial_bus.running(tmp_path / "a", tmp_path / "b"):
        assert (tmp_path / "a").is_symlink() and (tmp_path / "b").is_symlink()
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_bus_whose_parent_was_killed_ends_by_itself(tmp_path: Path) -> None:
    # The parent starts a bus and is SIGKILLed: the bus must not linger holding the parent's pipes open.
    script = (
        "import signal; from pathlib import Path; from chargenet.simulators import serial_bus\n"
        f"with serial_bus.running(Path({str(tmp_path / 'a')!r}), Path({str(tmp_path / 'b')!r})):\n"
        "    print('up', flush=True); signal.pause()\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None and parent.stdout.readline() == "up\n"
    os.kill(parent.pid, signal.SIGKILL)
    parent.communicate()
    deadline = time.monotonic() + 10
    while (tmp_path / "a").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not (tmp_path / "a").exists(), "the bus outlived its parent"
