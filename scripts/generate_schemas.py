"""Regenerate docs/schemas/*.json from the event models: python scripts/generate_schemas.py"""

from __future__ import annotations

from pathlib import Path

from chargenet.domain.events import DOCUMENTED_EVENTS
from chargenet.domain.schemas import render

OUT = Path(__file__).resolve().parent.parent / "docs" / "schemas"

if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name in DOCUMENTED_EVENTS:
        (OUT / f"{name}.json").write_text(render(name))
        print(f"wrote {OUT / f'{name}.json'}")
