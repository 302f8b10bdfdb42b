"""The server-drawn bar chart: figures in, SVG out (inline in HTML, so without a namespace), every printed
string escaped."""

from __future__ import annotations

import re
from xml.etree import ElementTree

from chargenet.console.charts import bar_chart


def _svg(markup: str) -> ElementTree.Element:
    return ElementTree.fromstring(markup)


def _bars(markup: str) -> list[ElementTree.Element]:
    return _svg(markup).findall("rect")


def test_a_bar_per_figure_with_its_label_and_value_in_its_title() -> None:
    chart = bar_chart([("29 Jun", 12.345), ("30 Jun", 0.5)], title="Energy", unit="kWh")
    titles = [bar.findtext("title") for bar in _bars(chart)]
    assert titles == ["29 Jun: 12.345 kWh", "30 Jun: 0.5 kWh"]


def test_bar_heights_are_proportional_to_the_figures() -> None:
    chart = bar_chart([("a", 1.0), ("b", 4.0)], title="Energy", unit="kWh")
    heights = [float(bar.attrib["height"]) for bar in _bars(chart)]
    assert heights[1] == 4 * heights[0] > 0


def test_the_value_axis_names_the_largest_figure_with_its_unit() -> None:
    chart = bar_chart([("a", 1.0), ("b", 4.25)], title="Energy", unit="kWh")
    ticks = [text.text for text in _svg(chart).findall("text") if text.attrib.get("class") == "tick"]
    assert ticks == ["0", "4.25 kWh"]


def test_labels_and_title_are_escaped() -> None:
    hostile = '<script>alert("x")</script>&'
    chart = bar_chart([(hostile, 1.0)], title=hostile, unit="<u>")
    assert "<script>" not in chart and "<u>" not in chart
    parsed = _svg(chart)
    assert parsed.attrib["aria-label"] == hostile
    assert parsed.findtext("title") == hostile
    assert _bars(chart)[0].findtext("title") == f"{hostile}: 1 <u>"


def test_an_empty_series_draws_the_axes_and_says_there_is_nothing() -> None:
    chart = bar_chart([], title="Energy", unit="kWh")
    assert _bars(chart) == []
    assert "No figures to show" in chart
    assert len(_svg(chart).findall("line")) == 2


def test_one_figure_is_one_bar_of_bounded_width_at_full_height() -> None:
    chart = bar_chart([("today", 3.0)], title="Energy", unit="kWh", width=640, height=220)
    (bar,) = _bars(chart)
    assert float(bar.attrib["width"]) <= 48
    lines = {line.attrib["class"] + str(n): line for n, line in enumerate(_svg(chart).findall("line"))}
    baseline, top = float(lines["axis0"].attrib["y1"]), float(lines["grid2"].attrib["y1"])
    assert float(bar.attrib["y"]) == top and float(bar.attrib["y"]) + float(bar.attrib["height"]) == baseline


def test_all_zero_figures_draw_bars_of_no_height() -> None:
    chart = bar_chart([("a", 0.0), ("b", 0.0)], title="Energy", unit="kWh")
    assert [float(bar.attrib["height"]) for bar in _bars(chart)] == [0.0, 0.0]


def test_a_figure_below_zero_is_drawn_as_zero_and_titled_as_it_is() -> None:
    chart = bar_chart([("a", -2.0), ("b", 2.0)], title="Energy", unit="kWh")
    first = _bars(chart)[0]
    assert float(first.attrib["height"]) == 0.0 and first.findtext("title") == "a: -2 kWh"


def test_category_labels_are_thinned_counting_back_from_the_last() -> None:
    series = [(f"d{n}", 1.0) for n in range(10)]
    chart = bar_chart(series, title="Energy", unit="kWh", label_every=4)
    labels = [text.text for text in _svg(chart).findall("text") if text.attrib.get("class") == "label"]
    assert labels == ["d1", "d5", "d9"]


def test_the_chart_is_an_image_named_by_its_title() -> None:
    chart = bar_chart([("a", 1.0)], title="Energy per day", unit="kWh")
    assert re.match(r'<svg [^>]*role="img"[^>]*aria-label="Energy per day"', chart)
