"""A free loopback port, for a server a test starts.

Not the kernel's choice (binding port 0): that comes from the ephemeral range (32768-60999 on Linux), where any
outgoing connection of the suite's four workers (to PostgreSQL, to the servers under test) could take it as its
local port between this check and the server's bind, and did: `address already in use`, once in a run. A port is
taken below that range instead, from a block of its own for each xdist worker, one after the other, checked free.
"""

from __future__ import annotations

import itertools
import os
import socket

_FIRST = 20_000
_BLOCK = 1_500  # ports a worker hands out in turn: gw0 from 20,000, gw1 from 21,500, ... all below 32,768
_taken = itertools.count()


def _worker_block() -> int:
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = name.removeprefix("gw")
    return _FIRST + (int(index) % 8 if index.isdigit() else 0) * _BLOCK


def free_port() -> int:
    first = _worker_block()
    for _ in range(_BLOCK):
        port = first + next(_taken) % _BLOCK
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue  # a server of this worker's still on it, or another program's
            return port
    raise RuntimeError(f"no free loopback port in {first}-{first + _BLOCK - 1}")
