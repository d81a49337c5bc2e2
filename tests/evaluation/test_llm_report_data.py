"""Pure data behind the CoRE run page: the agreement chart's coordinates (hand-computed) and a
stored debate read back from its rows."""

import math

from evaluation.lib.charts import agreement_chart
from evaluation.lib.llm.core_debate import DebateResult, agreement_curve


def test_agreement_chart_places_shares_in_the_plot_box_and_skips_undefined_points():
    curve = [{"round": 1, "all_agree": 0.0, "major_agree": 0.5, "debates": 2},
             {"round": 2, "all_agree": 0.5, "major_agree": 1.0, "debates": 2},
             {"round": 3, "all_agree": math.nan, "major_agree": 1.0, "debates": 2}]
    chart = agreement_chart(curve, width=420, height=220,
                            margin={"left": 40, "right": 20, "top": 10, "bottom": 30})
    # plot: x from 40 to 400 (360 wide, rounds 1..3 at 40, 220, 400), y from 10 to 190 (180 high)
    series = {s["key"]: s for s in chart["series"]}
    assert series["all_agree"]["polyline"] == "40.0,190.0 220.0,100.0"  # round 3 undefined
    assert series["major_agree"]["polyline"] == "40.0,100.0 220.0,10.0 400.0,10.0"
    assert [t["label"] for t in chart["y_ticks"]] == ["0%", "25%", "50%", "75%", "100%"]
    assert chart["x_ticks"][2] == {"x": 400.0, "label": "round 3"}
    assert chart["debates"] == 2


def test_a_stored_debate_reads_back_with_its_rounds_and_agreement():
    rows = [{"round": r, "role": role, "score": score, "statement": f"{role} {r}"}
            for r, scores in ((1, (40, 60, 60, 60)), (2, (60, 60, 60, 60)))
            for role, score in zip(("a", "b", "c", "d"), scores, strict=True)]
    debate = DebateResult.from_records(reversed(rows), final_score=60.0, stopped="agreement")
    assert [r.round for r in debate.rounds] == [1, 2]
    assert (debate.rounds[0].spread, debate.rounds[0].agreed) == (20.0, False)
    assert (debate.rounds[1].spread, debate.rounds[1].agreed) == (0.0, True)
    def key(row):
        return row["round"], row["role"]

    assert sorted(debate.records(), key=key) == sorted(
        ({**row, "failure": None, "carried_over": False} for row in rows), key=key)
    curve = agreement_curve([debate], max_rounds=3)
    assert [(c["all_agree"], c["major_agree"]) for c in curve] == [(0, 1), (1, 1), (1, 1)]
