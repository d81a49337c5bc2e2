"""Geometry of the report page's server-rendered SVG charts: the inter-factor Kendall τ_b heatmap
(CoRE §7.1.1, Fig. 3), the metric-vs-human scatter plot (FACE §5) and the sample-efficiency
curve (FACE Fig. 4).

Functions return numbers and strings in pixel space; templates draw them as SVG with Django's
auto-escaping (nothing here builds markup). Pure Python, no Django.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

GROUP_COLOURS = ("#2563eb", "#d97706", "#059669", "#9333ea", "#dc2626", "#0891b2", "#4b5563")


def tau_colour(value: float | None) -> str:
    """Diverging fill for a correlation in [−1, 1]: white at 0, blue positive, red negative."""
    if value is None or not math.isfinite(value):
        return "#e5e7eb"
    strength = min(abs(value), 1.0)
    target = (37, 99, 235) if value >= 0 else (220, 38, 38)
    red, green, blue = (round(255 + (c - 255) * strength) for c in target)
    return f"#{red:02x}{green:02x}{blue:02x}"


def heatmap(labels: Sequence[str], values: Sequence[Sequence[float | None]],
            counts: Sequence[Sequence[int]] | None = None, *, cell: int = 30,
            label_width: int = 170, label_height: int = 130) -> dict:
    """Cells of a square matrix with row labels on the left and column labels on top."""
    size = len(labels)
    cells = []
    for i in range(size):
        for j in range(size):
            value = values[i][j]
            n = counts[i][j] if counts else None
            text = "" if value is None else f"{value:.2f}".replace("0.", ".", 1)
            strong = value is not None and abs(value) >= 0.6
            cells.append({
                "x": label_width + j * cell, "y": label_height + i * cell, "size": cell - 1,
                "fill": tau_colour(value), "text": text,
                "text_x": label_width + j * cell + cell / 2,
                "text_y": label_height + i * cell + cell / 2 + 4,
                "text_fill": "#ffffff" if strong else "#111827",
                "title": f"{labels[i]} × {labels[j]}: "
                         + ("undefined" if value is None else f"τ_b = {value:.3f}")
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


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    value, ticks = math.ceil(low / step - 1e-9) * step, []
    while value <= high + 1e-9 * step:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _extent(values: Sequence[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    margin = (high - low) * 0.05 or max(abs(high) * 0.1, 0.5)
    return low - margin, high + margin


def _fmt(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:.0f}"


def scatter(points: Sequence[tuple[float, float, str]], *, x_label: str, y_label: str,
            width: int = 420, height: int = 300) -> dict:
    """One circle per (x, y, group) point, coloured by group, with axes and ticks."""
    left, right, top, bottom = 52, width - 12, 12, height - 44
    if not points:
        return {"width": width, "height": height, "points": [], "x_ticks": [], "y_ticks": [],
                "plot": {"left": left, "right": right, "top": top, "bottom": bottom},
                "x_label": x_label, "y_label": y_label, "legend": []}
    x_low, x_high = _extent([p[0] for p in points])
    y_low, y_high = _extent([p[1] for p in points])

    def px(x: float) -> float:
        return round(left + (x - x_low) / (x_high - x_low) * (right - left), 1)

    def py(y: float) -> float:
        return round(bottom - (y - y_low) / (y_high - y_low) * (bottom - top), 1)

    groups = sorted({p[2] for p in points if p[2]})
    colour = {g: GROUP_COLOURS[i % len(GROUP_COLOURS)] for i, g in enumerate(groups)}
    return {
        "width": width, "height": height,
        "plot": {"left": left, "right": right, "top": top, "bottom": bottom},
        "points": [{"cx": px(x), "cy": py(y), "fill": colour.get(g, GROUP_COLOURS[0])}
                   for x, y, g in points],
        "x_ticks": [{"x": px(t), "label": _fmt(t), "y1": bottom, "y2": bottom + 4,
                     "label_y": bottom + 16} for t in _ticks(x_low, x_high)
                    if x_low <= t <= x_high],
        "y_ticks": [{"y": py(t), "label": _fmt(t), "label_x": left - 6, "label_y": py(t) + 4}
                    for t in _ticks(y_low, y_high) if y_low <= t <= y_high],
        "x_label": x_label, "y_label": y_label, "x_label_y": height - 6,
        "legend": [{"label": g, "fill": colour[g]} for g in groups],
    }


def curve(points: Sequence[tuple[int, float | None, float | None, float | None]], *,
          x_label: str, y_label: str, width: int = 420, height: int = 240) -> dict:
    """A correlation (-1..1) per x, x evenly spaced in the given order: the mean as a line with
    dots, its interval as a band. Points are (x, mean, low, high); None where undefined."""
    left, right, top, bottom = 52, width - 12, 12, height - 44
    step = (right - left) / max(1, len(points) - 1)

    def px(index: int) -> float:
        return round(left + index * step if len(points) > 1 else (left + right) / 2, 1)

    def py(value: float) -> float:
        return round(bottom - (max(-1.0, min(1.0, value)) + 1) / 2 * (bottom - top), 1)

    means = [(px(i), py(mean)) for i, (_, mean, _, _) in enumerate(points) if mean is not None]
    banded = [(px(i), py(low), py(high)) for i, (_, _, low, high) in enumerate(points)
              if low is not None and high is not None]
    band = [f"{x},{high}" for x, _, high in banded] + [f"{x},{low}" for x, low, _ in
                                                       reversed(banded)]
    return {
        "width": width, "height": height,
        "plot": {"left": left, "right": right, "top": top, "bottom": bottom},
        "line": " ".join(f"{x},{y}" for x, y in means),
        "band": " ".join(band),
        "dots": [{"cx": x, "cy": y} for x, y in means],
        "x_ticks": [{"x": px(i), "label": str(x), "y1": bottom, "y2": bottom + 4,
                     "label_y": bottom + 16} for i, (x, _, _, _) in enumerate(points)],
        "y_ticks": [{"y": py(t), "label": _fmt(t), "label_x": left - 6, "label_y": py(t) + 4}
                    for t in (-1.0, -0.5, 0.0, 0.5, 1.0)],
        "x_label": x_label, "y_label": y_label, "x_label_y": height - 6,
    }
