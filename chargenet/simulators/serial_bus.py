"""A serial "bus" made of two pseudo-terminals joined back to back, for simulated RTU meters.

What one end writes, the other reads, as over an RS-485 pair: the simulated meters open one end, the poller
the other, both by path. It runs as a process of its own (`python -m chargenet.simulators.serial_bus A B`), as
`socat pty,raw,echo=0,link=A pty,raw,echo=0,link=B` would, so the bytes are copied outside the event loops
under test and nothing but the Python standard library is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import signal
import subprocess
import sys
import termios
import time
import tty
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

_CHUNK = 4096
_READY_TIMEOUT_S = 10.0
_ORPHAN_CHECK_S = 0.5


class SerialBusError(RuntimeError):
    """The serial bus could not be made or did not come up."""


def _open_raw_pty() -> tuple[int, int]:
    """A pseudo-terminal pair with its device end raw and without echo, as a serial line is."""
    master, device = os.openpty()
    tty.setraw(device, termios.TCSANOW)
    attributes = termios.tcgetattr(device)
    attributes[3] &= ~(termios.ECHO | termios.ECHONL)
    termios.tcsetattr(device, termios.TCSANOW, attributes)
    return master, device


def _link(device: int, link: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    link.symlink_to(os.ttyname(device))


def serve(first: Path, second: Path) -> None:
    """Join two new pseudo-terminals, linked at `first` and `second`, until SIGTERM or SIGINT."""
    parent = os.getppid()
    ends = [_open_raw_pty(), _open_raw_pty()]
    # The device ends stay open here: a pseudo-terminal whose device end nobody holds reads as EIO on its
    # master whenever the meters or the poller close and reopen theirs.
    masters = [master for master, _ in ends]
    for master in masters:
        os.set_blocking(master, False)
    stop_read, stop_write = os.pipe()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        os.write(stop_write, b"x")

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        # Link the first end last: its link appearing tells a waiting parent that both are ready.
        _link(ends[1][1], second)
        _link(ends[0][1], first)
        selector = selectors.DefaultSelector()
        for index, master in enumerate(masters):
            selector.register(master, selectors.EVENT_READ, masters[1 - index])
        selector.register(stop_read, selectors.EVENT_READ, None)
        while True:
            events = selector.select(timeout=_ORPHAN_CHECK_S)
            if not events and os.getppid() != parent:
                # Whoever started the bus was killed without stopping it: don't outlive it, or hold its pipes open.
                return
            for key, _ in events:
                if key.data is None:
                    return
                try:
                    data = os.read(key.fd, _CHUNK)
                except (BlockingIOError, InterruptedError):
                    continue
                _write_all(key.data, data)
    finally:
        for link in (first, second):
            with contextlib.suppress(FileNotFoundError):
                link.unlink()
        for master, device in ends:
            os.close(master)
            os.close(device)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            # Nobody is reading that end and its buffer is full: like a wire with no listener, the bytes are lost
            # rather than stalling the other direction.
            return
        view = view[written:]


def _command(first: Path, second: Path) -> list[str]:
    return [sys.executable, "-m", "chargenet.simulators.serial_bus", str(first), str(second)]


def _check_started(process: subprocess.Popen[bytes] | asyncio.subprocess.Process, first: Path) -> None:
    if process.returncode is not None:
        raise SerialBusError(f"the serial bus process exited with {process.returncode} before {first} appeared")


@contextlib.contextmanager
def running(first: Path, second: Path) -> Iterator[tuple[str, str]]:
    """Run a bus between `first` and `second` for the duration of the block; yields the two paths."""
    # Our own interpreter and module, with paths the caller chose: nothing from outside reaches the command.
    process = subprocess.Popen(  # noqa: S603
        _command(first, second), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while not first.exists():
            process.poll()
            _check_started(process, first)
            if time.monotonic() > deadline:
                raise SerialBusError(f"the serial bus did not link {first} within {_READY_TIMEOUT_S:.0f} s")
            time.sleep(0.005)
        yield str(first), str(second)
    finally:
        process.terminate()
        process.wait(timeout=5)


class AsyncSerialBus:
    """The same bus, started and stopped from an event loop (the demo)."""

    def __init__(self, first: Path, second: Path) -> None:
        self.first, self.second = first, second
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            *_command(self.first, self.second), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL
        )
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while not self.first.exists():
            _check_started(self._process, self.first)
            if time.monotonic() > deadline:
                raise SerialBusError(f"the serial bus did not link {self.first} within {_READY_TIMEOUT_S:.0f} s")
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
            await self._process.wait()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m chargenet.simulators.serial_bus FIRST_LINK SECOND_LINK", file=sys.stderr)
        return 2
    serve(Path(argv[0]), Path(argv[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
