"""A `/metrics` answer read as Prometheus reads it: `prometheus_client`'s parser, not substring matches."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


class Scrape:
    def __init__(self, text: str) -> None:
        self.families = list(text_string_to_metric_families(text))
        self.samples: list[Sample] = [sample for family in self.families for sample in family.samples]

    def value(self, name: str, **labels: str) -> float | None:
        """The value of the sample `name` whose labels include `labels`; None when there is none, an error when
        several match (a test names the series it means)."""
        found = [s.value for s in self.samples if s.name == name and labels.items() <= s.labels.items()]
        assert len(found) <= 1, f"{len(found)} samples of {name} match {labels}"
        return found[0] if found else None

    def label_values(self) -> set[str]:
        return {value for sample in self.samples for value in sample.labels.values()}
