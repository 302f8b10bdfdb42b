"""The server-drawn line chart: a session's samples in, SVG out, every printed string escaped."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from xml.etree import ElementTree
from zoneinfo import ZoneInfo

from chargenet.console.charts import line_chart, lines_chart
from chargenet.domain.local_time import LocalTime

T0 = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
UTC_READER = LocalTime(ZoneInfo("UTC"))
SVG = ""  # inline in HTML: no namespace


def chart(points: list[tuple[datetime, float]], unit: str = "kWh", title: str = "Energy") -> ElementTree.Element:
    return ElementTree.fromstring(
        str(line_chart(points, unit, title=title, description="numbers below", reads_in=UTC_READER))
    )


def test_no_points_draw_nothing() -> None:
    assert str(line_chart([], "kWh", title="t", description="d", reads_in=UTC_READER)) == ""


def test_the_chart_is_an_image_named_by_its_title_and_description() -> None:
    svg = chart([(T0, 0.0), (T0 + timedelta(hours=1), 7.5)])
    assert svg.get("role") == "img"
    assert svg.get("aria-labelledby") == "line-title line-desc"
    assert svg.findtext(f"{SVG}title") == "Energy"
    assert svg.findtext(f"{SVG}desc") == "numbers below"


def test_the_line_passes_through_every_point_in_order() -> None:
    svg = chart([(T0, 0.0), (T0 + timedelta(minutes=30), 2.0), (T0 + timedelta(hours=1), 8.0)])
    line = svg.find(f".//{SVG}polyline")
    assert line is not None
    xs = [float(pair.split(",")[0]) for pair in line.get("points", "").split()]
    ys = [float(pair.split(",")[1]) for pair in line.get("points", "").split()]
    assert xs == sorted(xs) and len(xs) == 3
    assert ys[0] > ys[1] > ys[2]  # higher values are drawn higher up


def test_points_are_marked_so_the_line_reads_without_colour() -> None:
    svg = chart([(T0, 0.0), (T0 + timedelta(minutes=30), 2.0), (T0 + timedelta(hours=1), 8.0)])
    assert len(svg.findall(f".//{SVG}circle")) == 3


def test_the_axes_are_labelled_in_text_with_the_unit_and_round_values() -> None:
    svg = chart([(T0, 0.0), (T0 + timedelta(hours=1), 7.5)])
    texts = [element.text for element in svg.iter(f"{SVG}text")]
    assert "kWh" in texts and "time (UTC)" in texts
    assert {"0", "2", "4", "6", "8"} <= set(texts)
    assert "12:00" in texts and "13:00" in texts


def test_the_title_and_unit_are_escaped() -> None:
    markup = str(line_chart([(T0, 1.0)], "<b>", title="<script>x</script>", description="&", reads_in=UTC_READER))
    assert "<script>" not in markup and "<b>" not in markup
    assert "&lt;script&gt;" in markup and "&amp;" in markup


def test_a_single_point_still_draws_a_valid_chart() -> None:
    svg = chart([(T0, 0.0)])
    assert svg.find(f".//{SVG}polyline") is not None


def test_ids_follow_the_name_so_two_charts_can_share_a_page() -> None:
    markup = str(line_chart([(T0, 1.0)], "kWh", title="t", description="d", reads_in=UTC_READER, name="energy"))
    assert re.search(r'id="energy-title"', markup) and re.search(r'id="energy-desc"', markup)


def test_the_time_axis_is_labelled_in_the_readers_zone() -> None:
    points = [(T0, 0.0), (T0 + timedelta(minutes=40), 1.0)]
    brussels = LocalTime(ZoneInfo("Europe/Brussels"))
    svg = ElementTree.fromstring(str(line_chart(points, "kWh", title="t", description="d", reads_in=brussels)))
    texts = [element.text for element in svg.iter() if element.tag.endswith("text")]
    assert "14:00" in texts and "14:40" in texts and "time (Europe/Brussels)" in texts


def test_several_lines_each_have_their_own_stroke_and_are_named_in_a_legend_as_text() -> None:
    hour = T0 + timedelta(hours=1)
    series = [("Limit <A>", [(T0, 20.0), (hour, 20.0)]), ("Measured", [(hour, 14.0)]), ("None", [])]
    markup = str(lines_chart(series, "A", title="Grid", description="d", reads_in=UTC_READER))
    svg = ElementTree.fromstring(markup)
    lines = svg.findall(".//polyline")
    assert len(lines) == 2  # a line without points is left out
    assert lines[0].get("stroke-dasharray") is None and lines[1].get("stroke-dasharray") == "8 4"
    legend = [text.text for text in svg.iter("text")]
    assert "Limit <A>" in legend and "Measured" in legend
    assert "Limit <A>" not in markup  # escaped
    assert str(lines_chart([("Limit", [])], "A", title="t", description="d", reads_in=UTC_READER)) == ""
