"""The "agreement over rounds" chart of CoRE's debate (seed 000, §6.5 and Fig. 5) as plain
coordinates, so the page draws it as server-side SVG with no JavaScript.

Input: ``core.agreement_curve`` rows ``{round, all_agree, major_agree, debates}`` (shares 0–1,
NaN when no debate was usable). Output: SVG coordinates in a ``width`` × ``height`` box with the
plot inside ``margin``; a NaN share leaves its point out of the line.

Pure Python: no Django import.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

# "At least three" is drawn first (dashed) so that "all four", on top, stays visible where the
# two coincide.
SERIES = (("major_agree", "at least three agree"), ("all_agree", "all four roles agree"))


def agreement_chart(curve: Sequence[Mapping[str, Any]], *, width: int = 420, height: int = 220,
                    margin: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Polylines, points and axis ticks for the agreement curve."""
    box = {"left": 44, "right": 36, "top": 14, "bottom": 36, **(margin or {})}
    plot_w = width - box["left"] - box["right"]
    plot_h = height - box["top"] - box["bottom"]
    rounds = [int(row["round"]) for row in curve]
    last = max(rounds, default=1)

    def x(round_number: int) -> float:
        return box["left"] + (plot_w * (round_number - 1) / (last - 1) if last > 1 else plot_w / 2)

    def y(share: float) -> float:
        return box["top"] + plot_h * (1 - share)

    series = []
    for key, label in SERIES:
        points = [{"round": int(row["round"]), "share": float(row[key]),
                   "x": round(x(int(row["round"])), 1), "y": round(y(float(row[key])), 1)}
                  for row in curve if not math.isnan(float(row[key]))]
        series.append({"key": key, "label": label, "points": points,
                       "polyline": " ".join(f"{p['x']},{p['y']}" for p in points)})
    return {
        "width": width, "height": height,
        "plot": {"left": box["left"], "top": box["top"], "right": width - box["right"],
                 "bottom": height - box["bottom"]},
        "series": series,
        "x_ticks": [{"x": round(x(r), 1), "label": f"round {r}"} for r in rounds],
        "y_ticks": [{"y": round(y(share), 1), "label": f"{round(share * 100)}%"}
                    for share in (0.0, 0.25, 0.5, 0.75, 1.0)],
        "debates": max((int(row.get("debates", 0)) for row in curve), default=0),
    }
