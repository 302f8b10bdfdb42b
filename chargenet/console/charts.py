"""Charts drawn on the server as inline SVG: pure functions, figures in, markup out, no script.

A chart never relies on colour alone: bars are told apart by their place on the axis and carry their value
in their `<title>`, and the page that shows a chart also gives its figures as text (a table) for screen
readers. Everything a chart prints is escaped here, so a label from a station cannot become markup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from markupsafe import Markup

# --- bar chart ----------------------------------------------------------------------------------------------------

_BAR_LEFT = 24  # room for the value axis' zero
_BAR_BOTTOM = 28  # room for the category labels
_BAR_RIGHT = 20  # half a category label past the last bar
_BAR_TOP = 22  # room for the largest value, printed above the plot
_BAR_MAX_WIDTH = 48  # a single bar does not fill the whole chart


def _bar_number(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") or "0"


def _bar_coordinate(value: float) -> str:
    return f"{value:.1f}"


def bar_chart(
    series: Sequence[tuple[str, float]],
    *,
    title: str,
    unit: str,
    width: int = 640,
    height: int = 220,
    label_every: int = 1,
    value_text: Callable[[float], str] = _bar_number,
) -> Markup:
    """One bar per (label, value), left to right, as an `<svg role="img">` named by `title`.

    Values below zero are drawn as zero (a bar chart of amounts has nothing below its axis). Every bar has a
    `<title>` with its label and value; the value axis shows 0, and the largest value with `unit` above the plot;
    category labels are printed under the last bar and every `label_every`-th one before it. An empty series
    draws the axes and says there is nothing to show."""
    plot_width = width - _BAR_LEFT - _BAR_RIGHT
    plot_height = height - _BAR_TOP - _BAR_BOTTOM
    baseline = _BAR_TOP + plot_height
    highest = max((max(value, 0.0) for _, value in series), default=0.0)
    parts = [
        Markup(
            '<svg class="chart bar-chart" role="img" viewBox="0 0 {} {}" '
            'width="100%" preserveAspectRatio="xMinYMin meet" aria-label="{}">'
        ).format(width, height, title),
        Markup("<title>{}</title>").format(title),
        Markup('<line class="axis" x1="{0}" y1="{1}" x2="{2}" y2="{1}"/>').format(
            _BAR_LEFT, baseline, width - _BAR_RIGHT
        ),
        Markup('<line class="axis" x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>').format(_BAR_LEFT, _BAR_TOP, baseline),
        Markup('<text class="tick" x="{}" y="{}" text-anchor="end">0</text>').format(_BAR_LEFT - 4, baseline + 4),
    ]
    if highest > 0:
        parts.append(
            Markup('<line class="grid" x1="{0}" y1="{1}" x2="{2}" y2="{1}"/>').format(
                _BAR_LEFT, _BAR_TOP, width - _BAR_RIGHT
            )
        )
        parts.append(
            Markup('<text class="tick" x="{}" y="{}" text-anchor="start">{} {}</text>').format(
                _BAR_LEFT + 4, _BAR_TOP - 6, value_text(highest), unit
            )
        )
    if not series:
        parts.append(
            Markup('<text class="empty" x="{}" y="{}" text-anchor="middle">No figures to show</text>').format(
                _BAR_LEFT + plot_width / 2, _BAR_TOP + plot_height / 2
            )
        )
    slot = plot_width / max(len(series), 1)
    bar_width = min(slot * 0.7, _BAR_MAX_WIDTH)
    for index, (label, value) in enumerate(series):
        shown = max(value, 0.0)
        bar_height = plot_height * shown / highest if highest > 0 else 0.0
        centre = _BAR_LEFT + slot * index + slot / 2
        parts.append(
            Markup('<rect class="bar" x="{}" y="{}" width="{}" height="{}"><title>{}: {} {}</title></rect>').format(
                _bar_coordinate(centre - bar_width / 2),
                _bar_coordinate(baseline - bar_height),
                _bar_coordinate(bar_width),
                _bar_coordinate(bar_height),
                label,
                value_text(value),
                unit,
            )
        )
        if (len(series) - 1 - index) % max(label_every, 1) == 0:
            parts.append(
                Markup('<text class="label" x="{}" y="{}" text-anchor="middle">{}</text>').format(
                    _bar_coordinate(centre), baseline + 18, label
                )
            )
    parts.append(Markup("</svg>"))
    return Markup("").join(parts)
