"""A free loopback port, for a server a test starts: the kernel's choice, released at once for the server to take."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
