"""Regenerate docs/schemas/*.json from the event models: python scripts/generate_schemas.py"""

from __future__ import annotations

from pathlib import Path

from chargenet.domain.events import EventType
from chargenet.domain.schemas import render

OUT = Path(__file__).resolve().parent.parent / "docs" / "schemas"

if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for event_type in EventType:
        (OUT / f"{event_type.value}.json").write_text(render(event_type))
        print(f"wrote {OUT / f'{event_type.value}.json'}")
