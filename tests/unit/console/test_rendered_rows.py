"""A changed row is rendered once however many streams send it (console/views/connectors.py `RenderedRows`)."""

from __future__ import annotations

from datetime import UTC, datetime

from chargenet.console.views.connectors import RenderedRows
from chargenet.domain.live import ConnectorState, LiveRow

AT = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def live_row(status: str) -> LiveRow:
    state = ConnectorState("co_a", "site_a", "ST", "ST", 1, status, "NoError", None, AT, AT)
    return LiveRow(state, None)


def test_the_same_row_sent_to_many_streams_is_rendered_once() -> None:
    rendered = RenderedRows()
    calls: list[LiveRow] = []

    def render(row: LiveRow) -> str:
        calls.append(row)
        return f"<tr>{row.connector.status}</tr>"

    row = live_row("Charging")
    events = {rendered.event(row, "/console", render) for _ in range(50)}
    assert events == {"event: row\ndata: <tr>Charging</tr>\n\n"}
    assert calls == [row]


def test_an_equal_row_of_a_later_change_is_rendered_again() -> None:
    rendered = RenderedRows(size=1)
    texts = iter(["<tr>first</tr>", "<tr>second</tr>", "<tr>third</tr>"])
    first = rendered.event(live_row("Charging"), "/console", lambda _: next(texts))
    second = rendered.event(live_row("Charging"), "/console", lambda _: next(texts))
    assert first != second


def test_a_multi_line_row_is_sent_as_one_data_line_each() -> None:
    rendered = RenderedRows()
    event = rendered.event(live_row("Available"), "/console", lambda _: "<tr>\n<td>1</td>\n</tr>")
    assert event == "event: row\ndata: <tr>\ndata: <td>1</td>\ndata: </tr>\n\n"


def test_a_row_is_rendered_once_for_each_zone_its_readers_read_in() -> None:
    rendered = RenderedRows()
    row = live_row("Charging")
    zones = iter(["<tr>14:00</tr>", "<tr>08:00</tr>"])
    brussels = rendered.event(row, "/console", lambda _: next(zones), zone="Europe/Brussels")
    new_york = rendered.event(row, "/console", lambda _: next(zones), zone="America/New_York")
    assert (brussels, new_york) == ("event: row\ndata: <tr>14:00</tr>\n\n", "event: row\ndata: <tr>08:00</tr>\n\n")
    assert rendered.event(row, "/console", lambda _: "again", zone="Europe/Brussels") == brussels
