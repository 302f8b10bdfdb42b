"""Child process for the multi-process tests: one `chargenet serve`-like webhook engine on a shared store."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from chargenet.app import open_context
from chargenet.config import load_settings
from chargenet.webhooks.install import install_webhooks


async def main(database_url: str, data_dir: str, owner: str) -> None:
    flags = {"database_url": database_url, "data_dir": data_dir, "webhook_allow_private": True}
    context = await open_context(load_settings(flags, environ={}))
    engine = install_webhooks(context, poll_interval=0.02, lease_interval=1.0)
    engine.owner = owner
    Path(data_dir, f"{owner}.ready").touch()
    await engine.run(asyncio.Event())


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
