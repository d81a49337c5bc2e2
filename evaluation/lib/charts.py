"""Geometry of every server-rendered SVG chart in Concord, in one place.

Used by the leaderboard (the Trace paper's accuracy-vs-grounding "gap" scatter with 95% CI
whiskers, a system's radar of axes, bars by difficulty tier, the compare page's forest plot of
paired differences), the study report (CoRE §7.1.1's inter-factor Kendall τ_b heatmap, FACE
§5's metric-vs-human scatter, FACE Fig. 4's sample-efficiency curve) and the LLM run page
(CoRE §6.5's agreement over debate rounds, Fig. 5).

Every chart is built from the same primitives: `nice_ticks` and `tick_labels` for axes,
`extent` for the range shown, `linear` for the mapping to pixels. Functions return plain
numbers and strings in pixel space (SVG's y grows downwards); templates draw them with Django's
auto-escaping, so nothing here builds markup. Pure Python: no Django, no JavaScript.

Radar normalisation: each metric is mapped to [0, 1] by its declared range (low, high) —
``(value − low) / (high − low)``, clipped — and flipped (``1 − x``) when lower is better, so
outward is always better. An axis is the mean of its metrics' normalised values. Metrics with
an open range (turns to recommendation, route length) have no fixed scale and are left out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Bounds = tuple[float | None, float | None]

# Series and groups, in order (the leaderboard's CSS colours its series the same way).
PALETTE = ("#2563eb", "#d97706", "#059669", "#9333ea", "#dc2626", "#0891b2", "#4b5563")
UNDEFINED_FILL = "#e5e7eb"


# --- primitives ---------------------------------------------------------------------------------


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (1, 2, 2.5 or 5 × a power of ten apart), about
    COUNT steps."""
    if not math.isfinite(low) or not math.isfinite(high) or high <= low:
        return [low]
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    value, ticks = math.ceil(low / step - 1e-9) * step, []
    while value <= high + 1e-9 * step:
        ticks.append(round(value, 10))
        value += step
    return ticks


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """Tick texts with as many decimals as the step needs (0.995, 0.996 … not 0.99, 0.99)."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    if step > 0 and abs(round(step * 10 ** decimals) - step * 10 ** decimals) > 1e-6:
        decimals += 1  # a step of 0.25 needs two decimals
    return [f"{t:.{decimals}f}" for t in ticks]


def extent(values: Sequence[float | None], bounds: Bounds = (None, None),
           pad: float = 0.06) -> tuple[float, float]:
    """The range that shows every value with a margin, kept inside a metric's declared BOUNDS;
    a degenerate range is widened so that the points do not sit on an edge."""
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


def linear(low: float, high: float, start: float, end: float) -> Callable[[float], float]:
    """The map of [LOW, HIGH] onto pixels [START, END] (END < START for a y axis)."""
    span = (high - low) or 1.0
    return lambda v: start + (v - low) / span * (end - start)


def axis_ticks(low: float, high: float, scale: Callable[[float], float],
               count: int = 5) -> list[tuple[float, str]]:
    """(pixel, text) of the round ticks inside [LOW, HIGH]."""
    ticks = [t for t in nice_ticks(low, high, count) if low - 1e-9 <= t <= high + 1e-9]
    if not ticks:
        return []
    return [(round(scale(t), 1), text) for t, text in zip(ticks, tick_labels(ticks),
                                                          strict=True)]


def diverging_colour(value: float | None) -> str:
    """Fill for a correlation in [−1, 1]: white at 0, blue positive, red negative."""
    if value is None or not math.isfinite(value):
        return UNDEFINED_FILL
    strength = min(abs(value), 1.0)
    target = (37, 99, 235) if value >= 0 else (220, 38, 38)
    red, green, blue = (round(255 + (c - 255) * strength) for c in target)
    return f"#{red:02x}{green:02x}{blue:02x}"


def win_rate_colour(value: float | None) -> str:
    """Fill for a share in [0, 1]: white at ½, blue above, red below."""
    return diverging_colour(None if value is None else 2.0 * value - 1.0)


def _is_dark(fill: str) -> bool:
    """White text on this fill: a diverging colour at least 60% of the way to full blue or red
    (its weakest channel has dropped by 0.6 × ~218 from white)."""
    if not fill.startswith("#") or len(fill) != 7:
        return False
    return min(int(fill[i:i + 2], 16) for i in (1, 3, 5)) <= 124.5


def _plot(left: float, right: float, top: float, bottom: float) -> dict:
    return {"left": left, "right": right, "top": top, "bottom": bottom}


# --- scatter ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScatterPoint:
    label: str
    x: float
    y: float
    x_ci: tuple[float | None, float | None] = (None, None)
    y_ci: tuple[float | None, float | None] = (None, None)
    highlight: bool = False  # e.g. a reference baseline
    href: str = ""
    group: str = ""  # points of one group share a colour and a legend entry


def scatter(points: Sequence[ScatterPoint], *, x_label: str, y_label: str,
            x_bounds: Bounds = (None, None), y_bounds: Bounds = (None, None),
            width: int = 880, height: int = 420,
            margins: tuple[int, int, int, int] = (62, 28, 16, 46)) -> dict:
    """One mark per point, coloured by group, with horizontal and vertical CI whiskers where
    the point has them, kept inside the declared bounds. MARGINS: left, right, top, bottom."""
    left, right, top, bottom = margins[0], width - margins[1], margins[2], height - margins[3]
    xs = [v for p in points for v in (p.x, *p.x_ci)]
    ys = [v for p in points for v in (p.y, *p.y_ci)]
    x_low, x_high = extent(xs, x_bounds)
    y_low, y_high = extent(ys, y_bounds)
    sx, sy = linear(x_low, x_high, left, right), linear(y_low, y_high, bottom, top)
    groups = sorted({p.group for p in points if p.group})
    fill = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}

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
            "fill": fill.get(p.group, PALETTE[0]),
            "title": (f"{p.label}: {x_label} {p.x:.3f} [{x_lo:.3f}, {x_hi:.3f}], "
                      f"{y_label} {p.y:.3f} [{y_lo:.3f}, {y_hi:.3f}]"),
        })
    return {
        "width": width, "height": height, "left": left, "right": right, "top": top,
        "bottom": bottom, "plot": _plot(left, right, top, bottom),
        "x_label": x_label, "y_label": y_label, "points": marks,
        "x_ticks": axis_ticks(x_low, x_high, sx) if points else [],
        "y_ticks": axis_ticks(y_low, y_high, sy) if points else [],
        "x_mid": (left + right) / 2, "y_mid": (top + bottom) / 2,
        "legend": [{"label": g, "fill": fill[g]} for g in groups],
    }


# --- lines --------------------------------------------------------------------------------------


def curve(points: Sequence[tuple[Any, float | None, float | None, float | None]], *,
          x_label: str, y_label: str, y_range: tuple[float, float] = (-1.0, 1.0),
          width: int = 420, height: int = 240,
          margins: tuple[int, int, int, int] = (52, 12, 12, 44)) -> dict:
    """One series over categories evenly spaced in the given order: points (x, mean, low,
    high), None where undefined; the mean as a line with dots, the interval as a band. Values
    are clipped to Y_RANGE (a correlation's −1 … 1 by default)."""
    left, right, top, bottom = margins[0], width - margins[1], margins[2], height - margins[3]
    sx = (linear(0, len(points) - 1, left, right) if len(points) > 1
          else (lambda _: (left + right) / 2))
    sy = linear(y_range[0], y_range[1], bottom, top)

    def py(value: float) -> float:
        return round(sy(max(y_range[0], min(y_range[1], value))), 1)

    means = [(round(sx(i), 1), py(mean)) for i, (_, mean, _, _) in enumerate(points)
             if mean is not None]
    banded = [(round(sx(i), 1), py(low), py(high)) for i, (_, _, low, high) in enumerate(points)
              if low is not None and high is not None]
    band = [f"{x},{high}" for x, _, high in banded] + [f"{x},{low}" for x, low, _ in
                                                       reversed(banded)]
    return {
        "width": width, "height": height, "plot": _plot(left, right, top, bottom),
        "line": " ".join(f"{x},{y}" for x, y in means),
        "band": " ".join(band),
        "dots": [{"cx": x, "cy": y} for x, y in means],
        "x_ticks": [(round(sx(i), 1), str(x)) for i, (x, _, _, _) in enumerate(points)],
        "y_ticks": axis_ticks(y_range[0], y_range[1], sy, count=4),
        "x_label": x_label, "y_label": y_label,
    }


def turn_lines(series: Sequence[tuple[str, Sequence[float | None]]], *, y_label: str,
               x_label: str = "turn t", width: int = 640, height: int = 280,
               margins: tuple[int, int, int, int] = (52, 170, 12, 44)) -> dict:
    """Several series over turns 1, 2, … (PEPPER Fig. 3: PC_t per system): (label, values at
    t = 1..len), None where undefined. x is the turn number, so series of different lengths
    share one axis; y runs from 0 to a round value above the largest one (at most 1, a share).
    Series i is drawn in PALETTE[i mod len(PALETTE)]; the legend sits right of the plot."""
    left, right, top, bottom = margins[0], width - margins[1], margins[2], height - margins[3]
    last = max((len(values) for _, values in series), default=1)
    sx = linear(1, last, left, right) if last > 1 else (lambda _: (left + right) / 2)
    highest = max([v for _, values in series for v in values if v is not None] or [0.0])
    ticks = nice_ticks(0.0, max(highest, 0.1) * 1.05, 4)  # all zeros: 0 … 0.1
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 0.1
    top_value = math.ceil(max(highest, 0.1) / step - 1e-9) * step  # a round value ≥ highest
    top_value = min(1.0, top_value) if highest <= 1.0 else top_value
    sy = linear(0.0, top_value, bottom, top)
    lines = []
    for i, (label, values) in enumerate(series):
        points = [{"turn": t, "value": v, "x": round(sx(t), 1), "y": round(sy(v), 1)}
                  for t, v in enumerate(values, start=1) if v is not None]
        lines.append({"label": label, "colour": PALETTE[i % len(PALETTE)], "points": points,
                      "polyline": " ".join(f"{p['x']},{p['y']}" for p in points),
                      "legend_y": top + 8 + 16 * i,
                      "final": points[-1]["value"] if points else None})
    turns = [t for t in nice_ticks(1, last, min(last - 1, 8) or 1) if float(t).is_integer()]
    return {
        "width": width, "height": height, "plot": _plot(left, right, top, bottom),
        "lines": lines, "legend_x": right + 14,
        "x_ticks": [(round(sx(t), 1), str(int(t))) for t in (turns or [1])],
        "y_ticks": axis_ticks(0.0, top_value, sy, count=4),
        "x_label": x_label, "y_label": y_label,
    }


# "At least three" is drawn first (dashed) so that "all four", on top, stays visible where the
# two coincide.
AGREEMENT_SERIES = (("major_agree", "at least three agree"), ("all_agree", "all four roles agree"))


def agreement_chart(rows: Sequence[Mapping[str, Any]], *, width: int = 420, height: int = 220,
                    margin: Mapping[str, int] | None = None) -> dict[str, Any]:
    """CoRE's agreement over debate rounds: ``{round, all_agree, major_agree, debates}`` rows
    (shares 0–1, NaN when no debate was usable; a NaN share leaves its point out of its line),
    x placed by round number, y a share from 0% to 100%."""
    box = {"left": 44, "right": 36, "top": 14, "bottom": 36, **(margin or {})}
    left, right = box["left"], width - box["right"]
    top, bottom = box["top"], height - box["bottom"]
    rounds = [int(row["round"]) for row in rows]
    last = max(rounds, default=1)
    sx = (linear(1, last, left, right) if last > 1 else (lambda _: (left + right) / 2))
    sy = linear(0.0, 1.0, bottom, top)
    series = []
    for key, label in AGREEMENT_SERIES:
        points = [{"round": int(row["round"]), "share": float(row[key]),
                   "x": round(sx(int(row["round"])), 1), "y": round(sy(float(row[key])), 1)}
                  for row in rows if not math.isnan(float(row[key]))]
        series.append({"key": key, "label": label, "points": points,
                       "polyline": " ".join(f"{p['x']},{p['y']}" for p in points)})
    return {
        "width": width, "height": height, "plot": _plot(left, right, top, bottom),
        "series": series,
        "x_ticks": [{"x": round(sx(r), 1), "label": f"round {r}"} for r in rounds],
        "y_ticks": [{"y": round(sy(share), 1), "label": f"{round(share * 100)}%"}
                    for share in (0.0, 0.25, 0.5, 0.75, 1.0)],
        "debates": max((int(row.get("debates", 0)) for row in rows), default=0),
    }


# --- matrices, radars, bars, forests ------------------------------------------------------------


def heatmap(labels: Sequence[str], values: Sequence[Sequence[float | None]],
            counts: Sequence[Sequence[int]] | None = None, *, cell: int = 30,
            label_width: int = 170, label_height: int = 130,
            colour: Callable[[float | None], str] | None = None,
            value_label: str = "τ_b") -> dict:
    """Cells of a square matrix with row labels on the left and column labels on top: a
    correlation matrix (Kendall τ_b, the default colours), or e.g. pairwise win rates with
    ``colour=win_rate_colour``."""
    colour = colour or diverging_colour
    size = len(labels)
    cells = []
    for i in range(size):
        for j in range(size):
            value = values[i][j]
            n = counts[i][j] if counts else None
            text = "" if value is None else f"{value:.2f}".replace("0.", ".", 1)
            fill = colour(value)
            strong = value is not None and _is_dark(fill)
            cells.append({
                "x": label_width + j * cell, "y": label_height + i * cell, "size": cell - 1,
                "fill": fill, "text": text,
                "text_x": label_width + j * cell + cell / 2,
                "text_y": label_height + i * cell + cell / 2 + 4,
                "text_fill": "#ffffff" if strong else "#111827",
                "title": f"{labels[i]} × {labels[j]}: "
                         + ("undefined" if value is None else f"{value_label} = {value:.3f}")
                         + (f" (n = {n})" if n is not None else ""),
            })
    return {
        # Column labels lean right (rotated 55°), past the last column.
        "width": label_width + size * cell + round(label_height * 0.7),
        "height": label_height + size * cell + 8,
        "cells": cells,
        "row_labels": [{"x": label_width - 6, "y": label_height + i * cell + cell / 2 + 4,
                        "text": label} for i, label in enumerate(labels)],
        "col_labels": [{"x": label_width + j * cell + cell / 2 + 4, "y": label_height - 6,
                        "text": label} for j, label in enumerate(labels)],
    }


def normalise(value: float | None, bounds: Bounds, higher_is_better: bool) -> float | None:
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
    sy = linear(bounds[0], bounds[1], bottom, top)
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
        "y_ticks": axis_ticks(bounds[0], bounds[1], sy),
        "legend": [{"series": s, "text": name, "x": left + s * 130}
                   for s, (name, _) in enumerate(series)],
        "legend_y": height - 14,
    }


def forest(rows: Sequence[tuple[str, float | None, float | None, float | None, bool]], *,
           width: int = 620, row_height: int = 24, centre: float | None = None,
           digits: int = 3) -> dict:
    """Paired differences (label, difference, ci_low, ci_high, significant) on one symmetric
    scale around 0, one row each. With ``centre`` the rows are values minus ``centre`` (e.g.
    arena ratings around 1000) and labels show the values themselves with ``digits`` decimals."""
    left, right, top = 150, width - 20, 22
    reach = max([abs(v) for _, d, lo, hi, _ in rows for v in (d, lo, hi) if v is not None]
                or [0.05]) * 1.1
    sx = linear(-reach, reach, left, right)

    def text(value: float) -> str:
        return f"{value:+.{digits}f}" if centre is None else f"{centre + value:.{digits}f}"

    marks = []
    for i, (label, difference, low, high, significant) in enumerate(rows):
        y = top + i * row_height + row_height / 2
        if difference is None:
            continue
        marks.append({"y": round(y, 1), "label": label, "cx": round(sx(difference), 1),
                      "x1": round(sx(low if low is not None else difference), 1),
                      "x2": round(sx(high if high is not None else difference), 1),
                      "significant": significant,
                      "title": f"{label}: {text(difference)}"
                               + (f" [{text(low)}, {text(high)}]" if low is not None else "")})
    height = top + len(rows) * row_height + 26
    ticks = nice_ticks(-reach, reach, 5)
    if centre is None:
        tick_text = [f"{t:+.2f}" if t else "0" for t in ticks]
    else:
        tick_text = [f"{centre + t:.{max(0, digits)}f}" for t in ticks]
    return {"width": width, "height": height, "left": left, "right": right, "top": top,
            "zero": round(sx(0.0), 1), "bottom": height - 22, "marks": marks,
            "labels": [{"y": round(top + i * row_height + row_height / 2 + 4, 1),
                        "text": row[0]} for i, row in enumerate(rows)],
            "ticks": [(round(sx(t), 1), label) for t, label in zip(ticks, tick_text,
                                                                     strict=True)]}
