"""Charts drawn on the server as inline SVG: pure functions, figures in, markup out, no script, nothing a
content security policy has to allow.

A chart is an image for the eye: it carries a title and a short description (`role="img"`), its axes are
labelled in text, and the page that shows it also gives its figures as text (a table) for screen readers.
Nothing is told by colour alone: a line's points are marked, bars are told apart by their place on the axis and
carry their value in their `<title>`. Everything a chart prints is escaped here, so a label from a station cannot
become markup.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup, escape

from chargenet.domain.local_time import LocalTime

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


# --- line chart ---------------------------------------------------------------------------------------------------

_LINE_WIDTH, _LINE_HEIGHT = 640, 240
_LINE_LEFT, _LINE_RIGHT, _LINE_TOP, _LINE_BOTTOM = 64, 16, 12, 36
_LINE_MARKS = 60  # above this many points the line carries no point marks (they would merge into a band)


def _line_step(top: float) -> float:
    """A round step (1, 2 or 5 times a power of ten) dividing 0..top in about four."""
    raw = top / 4
    magnitude = 10 ** math.floor(math.log10(raw))
    return float(next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw))


def _line_number(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{value:.{decimals}f}"


def _line_time(at: datetime, span_s: float) -> str:
    return at.strftime("%m-%d %H:%M" if span_s >= 86_400 else "%H:%M" if span_s >= 600 else "%H:%M:%S")


@dataclass(frozen=True, slots=True)
class _Frame:
    """An SVG chart's accessible name and description (`name` makes their ids unique on the page), its size, where
    its time axis runs and where the axis's own label sits."""

    name: str
    title: str
    description: str
    width: int
    height: int
    axis: float
    time_label_y: float


@dataclass(frozen=True, slots=True)
class _ValueAxis:
    unit: str
    bottom: float
    top: float
    step: float
    plot_h: float
    y: Callable[[float], float]


@dataclass(frozen=True, slots=True)
class _TimeAxis:
    start: datetime
    end: datetime
    span_s: float
    reads_in: LocalTime
    x: Callable[[datetime], float]


def _axes(frame: _Frame, values: _ValueAxis, times: _TimeAxis) -> list[str]:
    """The opening of a line chart's SVG: its name, the value axis's grid lines and figures, and five time marks."""
    width, name = frame.width, frame.name
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {frame.height}" width="100%" role="img" '
        f'aria-labelledby="{name}-title {name}-desc">',
        f'<title id="{name}-title">{escape(frame.title)}</title>'
        f'<desc id="{name}-desc">{escape(frame.description)}</desc>',
        '<g fill="currentColor" font-size="12" stroke="currentColor">',
    ]
    for index in range(round((values.top - values.bottom) / values.step) + 1):
        value = values.bottom + index * values.step
        level = values.y(value)
        dash = "" if value == 0 else ' stroke-dasharray="3 3"'
        parts.append(
            f'<line x1="{_LINE_LEFT}" x2="{width - _LINE_RIGHT}" y1="{level:.1f}" y2="{level:.1f}" '
            f'stroke-opacity="0.25"{dash}/>'
            f'<text x="{_LINE_LEFT - 6}" y="{level + 4:.1f}" text-anchor="end" stroke="none">'
            f"{_line_number(value, values.step)}</text>"
        )
    middle = _LINE_TOP + values.plot_h / 2
    parts.append(
        f'<text x="12" y="{middle:.1f}" text-anchor="middle" stroke="none" '
        f'transform="rotate(-90 12 {middle:.1f})">{escape(values.unit)}</text>'
    )
    axis = frame.axis
    for index in range(5):
        at = times.start + (times.end - times.start) * index / 4
        across = times.x(at)
        anchor = "start" if index == 0 else "end" if index == 4 else "middle"
        parts.append(
            f'<line x1="{across:.1f}" x2="{across:.1f}" y1="{axis}" y2="{axis + 4}"/>'
            f'<text x="{across:.1f}" y="{axis + 18}" text-anchor="{anchor}" stroke="none">'
            f"{_line_time(times.reads_in.local(at), times.span_s)}</text>"
        )
    parts.append(
        f'<text x="{width - _LINE_RIGHT}" y="{frame.time_label_y}" text-anchor="end" stroke="none">'
        f"time ({escape(times.reads_in.name)})</text>"
    )
    return parts


def line_chart(
    points: Sequence[tuple[datetime, float]],
    unit: str,
    *,
    title: str,
    description: str,
    reads_in: LocalTime,
    name: str = "line",
) -> Markup:
    """An SVG line of `points` (time, value in `unit`), oldest first, over a time axis (in `reads_in`'s zone) and a
    value axis from 0; `title` and `description` are its accessible name and description, `name` makes their ids
    unique on the page. Empty markup for no points."""
    if not points:
        return Markup()
    width, height = _LINE_WIDTH, _LINE_HEIGHT
    plot_w = width - _LINE_LEFT - _LINE_RIGHT
    plot_h = height - _LINE_TOP - _LINE_BOTTOM
    start, end = points[0][0], points[-1][0]
    span_s = max((end - start).total_seconds(), 1.0)
    low = min(0.0, min(value for _, value in points))
    high = max(value for _, value in points)
    step = _line_step(high - low if high > low else 1.0)
    top = math.ceil(high / step) * step if high > 0 else step
    bottom = math.floor(low / step) * step

    def x(at: datetime) -> float:
        return _LINE_LEFT + plot_w * (at - start).total_seconds() / span_s

    def y(value: float) -> float:
        return _LINE_TOP + plot_h * (top - value) / (top - bottom)

    parts = _axes(
        _Frame(name, title, description, width, height, height - _LINE_BOTTOM, height - 2),
        _ValueAxis(unit, bottom, top, step, plot_h, y),
        _TimeAxis(start, end, span_s, reads_in, x),
    )
    line = " ".join(f"{x(at):.1f},{y(value):.1f}" for at, value in points)
    parts.append(f'<polyline points="{line}" fill="none" stroke-width="2"/>')
    if len(points) <= _LINE_MARKS:
        parts.extend(f'<circle cx="{x(at):.1f}" cy="{y(value):.1f}" r="3"/>' for at, value in points)
    parts.append("</g></svg>")
    # Safe by construction: every value written into `parts` is a number, a date format or `escape`d text.
    return Markup("".join(parts))  # noqa: S704


# --- several lines ------------------------------------------------------------------------------------------------

_DASHES = ("", "8 4", "2 3")  # each line its own stroke, so that none is told by colour alone


def lines_chart(
    series: Sequence[tuple[str, Sequence[tuple[datetime, float]]]],
    unit: str,
    *,
    title: str,
    description: str,
    reads_in: LocalTime,
    name: str = "lines",
) -> Markup:
    """Up to three SVG lines, each (label, points oldest first), over one time axis (in `reads_in`'s zone) and one
    value axis from 0; each line has its own dash pattern, named in a legend. A line may lack points where others
    have them (a meter silent a while): it is drawn through those it has. Empty markup when no line has a point."""
    drawn = [(label, list(points)) for label, points in series[: len(_DASHES)] if points]
    if not drawn:
        return Markup()
    width, height = _LINE_WIDTH, _LINE_HEIGHT + 20
    bottom_room = _LINE_BOTTOM + 20
    plot_w = width - _LINE_LEFT - _LINE_RIGHT
    plot_h = height - _LINE_TOP - bottom_room
    every = [point for _, points in drawn for point in points]
    start, end = min(at for at, _ in every), max(at for at, _ in every)
    span_s = max((end - start).total_seconds(), 1.0)
    high = max(max(value for _, value in every), 0.0)
    step = _line_step(high if high > 0 else 1.0)
    top = math.ceil(high / step) * step if high > 0 else step

    def x(at: datetime) -> float:
        return _LINE_LEFT + plot_w * (at - start).total_seconds() / span_s

    def y(value: float) -> float:
        return _LINE_TOP + plot_h * (top - max(value, 0.0)) / top

    axis = height - bottom_room
    parts = _axes(
        _Frame(name, title, description, width, height, axis, axis + 34),
        _ValueAxis(unit, 0.0, top, step, plot_h, y),
        _TimeAxis(start, end, span_s, reads_in, x),
    )
    for index, (label, points) in enumerate(drawn):
        dash = f' stroke-dasharray="{_DASHES[index]}"' if _DASHES[index] else ""
        line = " ".join(f"{x(at):.1f},{y(value):.1f}" for at, value in points)
        parts.append(f'<polyline points="{line}" fill="none" stroke-width="2"{dash}/>')
        key_x = _LINE_LEFT + index * 170
        parts.append(
            f'<line x1="{key_x}" x2="{key_x + 28}" y1="{axis + 30}" y2="{axis + 30}" stroke-width="2"{dash}/>'
            f'<text x="{key_x + 34}" y="{axis + 34}" stroke="none">{escape(label)}</text>'
        )
    parts.append("</g></svg>")
    # Safe by construction: every value written into `parts` is a number, a date format or `escape`d text.
    return Markup("".join(parts))  # noqa: S704
