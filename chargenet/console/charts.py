"""Charts drawn on the server as inline SVG: no script, nothing a content security policy has to allow.

A chart is an image for the eye only: it carries a title and a short description (`role="img"`), its axes are
labelled in text, and the page puts the numbers themselves in a table beside it for screen readers. Nothing is
told by colour alone: a line's points are marked, and everything is drawn in the text's colour.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from markupsafe import Markup, escape

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


def line_chart(
    points: Sequence[tuple[datetime, float]], unit: str, *, title: str, description: str, name: str = "line"
) -> Markup:
    """An SVG line of `points` (time, value in `unit`), oldest first, over a time axis (UTC) and a value axis from
    0; `title` and `description` are its accessible name and description, `name` makes their ids unique on the
    page. Empty markup for no points."""
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

    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-labelledby="{name}-title {name}-desc" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{name}-title">{escape(title)}</title><desc id="{name}-desc">{escape(description)}</desc>',
        '<g fill="currentColor" font-size="12" stroke="currentColor">',
    ]
    ticks = round((top - bottom) / step)
    for index in range(ticks + 1):
        value = bottom + index * step
        level = y(value)
        dash = "" if value == 0 else ' stroke-dasharray="3 3"'
        parts.append(
            f'<line x1="{_LINE_LEFT}" x2="{width - _LINE_RIGHT}" y1="{level:.1f}" y2="{level:.1f}" '
            f'stroke-opacity="0.25"{dash}/>'
            f'<text x="{_LINE_LEFT - 6}" y="{level + 4:.1f}" text-anchor="end" stroke="none">'
            f"{_line_number(value, step)}</text>"
        )
    parts.append(
        f'<text x="12" y="{_LINE_TOP + plot_h / 2:.1f}" text-anchor="middle" stroke="none" '
        f'transform="rotate(-90 12 {_LINE_TOP + plot_h / 2:.1f})">{escape(unit)}</text>'
    )
    for index in range(5):
        at = start + (end - start) * index / 4
        across = x(at)
        anchor = "start" if index == 0 else "end" if index == 4 else "middle"
        parts.append(
            f'<line x1="{across:.1f}" x2="{across:.1f}" y1="{height - _LINE_BOTTOM}" '
            f'y2="{height - _LINE_BOTTOM + 4}"/>'
            f'<text x="{across:.1f}" y="{height - _LINE_BOTTOM + 18}" text-anchor="{anchor}" stroke="none">'
            f"{_line_time(at, span_s)}</text>"
        )
    parts.append(f'<text x="{width - _LINE_RIGHT}" y="{height - 2}" text-anchor="end" stroke="none">time (UTC)</text>')
    line = " ".join(f"{x(at):.1f},{y(value):.1f}" for at, value in points)
    parts.append(f'<polyline points="{line}" fill="none" stroke-width="2"/>')
    if len(points) <= _LINE_MARKS:
        parts.extend(f'<circle cx="{x(at):.1f}" cy="{y(value):.1f}" r="3"/>' for at, value in points)
    parts.append("</g></svg>")
    # Safe by construction: every value written into `parts` is a number, a date format or `escape`d text.
    return Markup("".join(parts))  # noqa: S704
