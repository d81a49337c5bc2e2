"""Chart geometry for server-rendered SVG: the leaderboard's accuracy-vs-grounding scatter with
95% CI whiskers (the Trace paper's "gap" figure, seed 004 §6), a system's radar of axes, bars
by difficulty tier, and a forest plot of paired differences.

Functions return plain numbers and strings in pixel space; templates draw them as SVG with
auto-escaping (nothing here builds markup). No JavaScript, no Django: testable with lists.

Radar normalisation: each metric is mapped to [0, 1] by its declared range (low, high) —
``(value − low) / (high − low)``, clipped — and flipped (``1 − x``) when lower is better, so
outward is always better. An axis is the mean of its metrics' normalised values. Metrics with
an open range (turns to recommendation, route length) have no fixed scale and are left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ScatterPoint:
    label: str
    x: float
    y: float
    x_ci: tuple[float | None, float | None] = (None, None)
    y_ci: tuple[float | None, float | None] = (None, None)
    highlight: bool = False  # e.g. a reference baseline
    href: str = ""


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (1, 2, 2.5 or 5 × a power of ten apart)."""
    if not math.isfinite(low) or not math.isfinite(high) or high <= low:
        return [low]
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks, value = [], first
    while value <= high + 1e-9 * step:
        ticks.append(round(value, 10))
        value += step
    return ticks


def data_extent(values: Sequence[float | None], bounds: tuple[float | None, float | None],
                pad: float = 0.06) -> tuple[float, float]:
    """The range that shows every value (with a margin), kept inside a metric's declared
    bounds; a degenerate range is widened so that the points do not sit on an edge."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return (bounds[0] or 0.0, bounds[1] if bounds[1] is not None else 1.0)
    low, high = min(finite), max(finite)
    margin = (high - low) * pad or max(abs(high) * 0.1, 0.05)
    low, high = low - margin, high + margin
    if bounds[0] is not None:
        low = max(low, bounds[0])
    if bounds[1] is not None:
        high = min(high, bounds[1])
    return low, high


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """Tick texts with as many decimals as the step needs (0.995, 0.996 … not 0.99, 0.99)."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    if step > 0 and abs(round(step * 10 ** decimals) - step * 10 ** decimals) > 1e-6:
        decimals += 1  # a step of 0.25 needs two decimals
    return [f"{t:.{decimals}f}" for t in ticks]


def _axis_ticks(low: float, high: float, scale, count: int = 5) -> list[tuple[float, str]]:
    ticks = nice_ticks(low, high, count)
    return [(round(scale(t), 1), text) for t, text in zip(ticks, tick_labels(ticks),
                                                          strict=True)]


def _scale(low: float, high: float, start: float, end: float):
    span = (high - low) or 1.0
    return lambda v: start + (v - low) / span * (end - start)


def scatter(points: Sequence[ScatterPoint], *, x_label: str, y_label: str,
            x_bounds: tuple[float | None, float | None] = (None, None),
            y_bounds: tuple[float | None, float | None] = (None, None),
            width: int = 880, height: int = 420) -> dict:
    """A scatter plot with horizontal and vertical CI whiskers on every point."""
    left, right, top, bottom = 62, width - 28, 16, height - 46
    xs = [v for p in points for v in (p.x, *p.x_ci)]
    ys = [v for p in points for v in (p.y, *p.y_ci)]
    x_low, x_high = data_extent(xs, x_bounds)
    y_low, y_high = data_extent(ys, y_bounds)
    sx, sy = _scale(x_low, x_high, left, right), _scale(y_low, y_high, bottom, top)

    def clip_x(v):
        return sx(min(max(v, x_low), x_high))

    def clip_y(v):
        return sy(min(max(v, y_low), y_high))

    marks = []
    for p in points:
        x_lo, x_hi = (p.x_ci[0] if p.x_ci[0] is not None else p.x,
                      p.x_ci[1] if p.x_ci[1] is not None else p.x)
        y_lo, y_hi = (p.y_ci[0] if p.y_ci[0] is not None else p.y,
                      p.y_ci[1] if p.y_ci[1] is not None else p.y)
        cx = sx(p.x)
        near_right = cx > right - 90  # put the label on the left of points near the edge
        marks.append({
            "cx": round(cx, 1), "cy": round(sy(p.y), 1),
            "lx": round(cx - 7 if near_right else cx + 7, 1),
            "anchor": "end" if near_right else "start",
            "x1": round(clip_x(x_lo), 1), "x2": round(clip_x(x_hi), 1),
            "y1": round(clip_y(y_lo), 1), "y2": round(clip_y(y_hi), 1),
            "label": p.label, "highlight": p.highlight, "href": p.href,
            "title": (f"{p.label}: {x_label} {p.x:.3f} [{x_lo:.3f}, {x_hi:.3f}], "
                      f"{y_label} {p.y:.3f} [{y_lo:.3f}, {y_hi:.3f}]"),
        })
    return {
        "width": width, "height": height, "left": left, "right": right, "top": top,
        "bottom": bottom, "x_label": x_label, "y_label": y_label, "points": marks,
        "x_ticks": _axis_ticks(x_low, x_high, sx),
        "y_ticks": _axis_ticks(y_low, y_high, sy),
        "x_mid": (left + right) / 2, "y_mid": (top + bottom) / 2,
    }


def normalise(value: float | None, bounds: tuple[float | None, float | None],
              higher_is_better: bool) -> float | None:
    """A metric value on [0, 1], outward = better; None when the range is open."""
    low, high = bounds
    if value is None or low is None or high is None or high <= low:
        return None
    share = min(max((value - low) / (high - low), 0.0), 1.0)
    return share if higher_is_better else 1.0 - share


def radar(axes: Sequence[tuple[str, float]], *, size: int = 330, rings: int = 4,
          label_room: int = 90) -> dict:
    """Polygon of axis scores in [0, 1] on equally spaced spokes, first spoke pointing up.
    The drawing is `label_room` wider on each side so that axis names fit."""
    cx, cy, radius = size / 2 + label_room, size / 2, size / 2 - 40
    n = max(len(axes), 1)

    def at(index: int, share: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * index / n
        return (round(cx + radius * share * math.cos(angle), 1),
                round(cy + radius * share * math.sin(angle), 1))

    def polygon(shares: Sequence[float]) -> str:
        return " ".join(f"{x},{y}" for x, y in (at(i, s) for i, s in enumerate(shares)))

    vertices, labels = [], []
    for i, (name, share) in enumerate(axes):
        x, y = at(i, share)
        lx, ly = at(i, 1.12)
        anchor = "middle" if abs(lx - cx) < 8 else ("start" if lx > cx else "end")
        dy = -6 if ly < cy - radius * 0.9 else (14 if ly > cy + radius * 0.9 else 4)
        vertices.append({"x": x, "y": y, "axis": name, "value": round(share, 3)})
        labels.append({"x": lx, "y": round(ly + dy, 1), "text": name, "anchor": anchor,
                       "value": f"{share:.2f}"})
    return {
        "width": size + 2 * label_room, "height": size, "centre_x": cx, "centre_y": cy,
        "rings": [polygon([k / rings] * len(axes)) for k in range(1, rings + 1)],
        "spokes": [at(i, 1.0) for i in range(len(axes))],
        "shape": polygon([share for _, share in axes]),
        "vertices": vertices, "labels": labels,
    }


def grouped_bars(groups: Sequence[str],
                 series: Sequence[tuple[str, Sequence[tuple[float | None, float | None,
                                                          float | None]]]],
                 *, bounds: tuple[float, float] = (0.0, 1.0), width: int = 760,
                 height: int = 260) -> dict:
    """Bars per group (e.g. difficulty tier) and series (metric), each (value, ci_low, ci_high);
    a missing value draws no bar."""
    left, right, top, bottom = 44, width - 12, 12, height - 52
    sy = _scale(bounds[0], bounds[1], bottom, top)
    group_width = (right - left) / max(len(groups), 1)
    bar_width = min(28.0, group_width * 0.8 / max(len(series), 1))
    bars = []
    for g, group in enumerate(groups):
        start = left + g * group_width + (group_width - bar_width * len(series)) / 2
        for s, (name, values) in enumerate(series):
            value, low, high = values[g]
            if value is None:
                continue
            x = start + s * bar_width
            y = sy(min(max(value, bounds[0]), bounds[1]))
            bars.append({
                "x": round(x + 1, 1), "y": round(y, 1), "w": round(bar_width - 2, 1),
                "h": round(bottom - y, 1), "series": s, "metric": name, "group": group,
                "cx": round(x + bar_width / 2, 1),
                "y1": round(sy(low if low is not None else value), 1),
                "y2": round(sy(high if high is not None else value), 1),
                "title": f"{name} on {group}: {value:.3f}"
                         + (f" [{low:.3f}, {high:.3f}]" if low is not None else ""),
            })
    return {
        "width": width, "height": height, "left": left, "right": right, "top": top,
        "bottom": bottom, "bars": bars,
        "groups": [{"x": round(left + (g + 0.5) * group_width, 1), "text": group}
                   for g, group in enumerate(groups)],
        "y_ticks": _axis_ticks(bounds[0], bounds[1], sy),
        "legend": [{"series": s, "text": name, "x": left + s * 130}
                   for s, (name, _) in enumerate(series)],
        "legend_y": height - 14,
    }


def forest(rows: Sequence[tuple[str, float | None, float | None, float | None, bool]], *,
           width: int = 620, row_height: int = 24) -> dict:
    """Paired differences (label, difference, ci_low, ci_high, significant) on one symmetric
    scale around 0, one row each."""
    left, right, top = 150, width - 20, 22
    extent = max([abs(v) for _, d, lo, hi, _ in rows for v in (d, lo, hi) if v is not None]
                 or [0.05]) * 1.1
    sx = _scale(-extent, extent, left, right)
    marks = []
    for i, (label, difference, low, high, significant) in enumerate(rows):
        y = top + i * row_height + row_height / 2
        if difference is None:
            continue
        marks.append({"y": round(y, 1), "label": label, "cx": round(sx(difference), 1),
                      "x1": round(sx(low if low is not None else difference), 1),
                      "x2": round(sx(high if high is not None else difference), 1),
                      "significant": significant,
                      "title": f"{label}: {difference:+.3f}"
                               + (f" [{low:+.3f}, {high:+.3f}]" if low is not None else "")})
    height = top + len(rows) * row_height + 26
    return {"width": width, "height": height, "left": left, "right": right, "top": top,
            "zero": round(sx(0.0), 1), "bottom": height - 22, "marks": marks,
            "labels": [{"y": round(top + i * row_height + row_height / 2 + 4, 1),
                        "text": row[0]} for i, row in enumerate(rows)],
            "ticks": [(round(sx(t), 1), f"{t:+.2f}" if t else "0")
                      for t in nice_ticks(-extent, extent, 5)]}
