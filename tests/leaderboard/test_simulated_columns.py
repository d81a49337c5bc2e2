"""Which columns a simulated board shows (leaderboard/selectors/columns.py): an iEvaLM 2.0 run
leads with iEvaLM's own metrics, its PEPPER-style curves under "all metrics"; an iEvaLM 1.0
run, stored before those metrics existed, shows its coverage columns instead of none."""

from leaderboard.selectors.columns import board_columns, metric_bounds
from leaderboard.selectors.runs import BoardRun

EVALUATOR = "simulation.ievalm"


def run(run_id):
    return BoardRun(run_id, EVALUATOR, "2.0", "h", "u", True, 1, "s", "S", "", "", False, None)


def summaries(*metrics):
    return {m: ("axis", "higher") for m in metrics}


def test_ievalm_2_leads_with_its_own_metrics():
    table = {1: summaries("pc@10", "recall@10", "ievalm_recall@10", "ievalm_recall@1",
                          "persuasiveness")}
    shown, more = board_columns([run(1)], table, all_columns=False)
    assert [c.metric for c in shown] == ["ievalm_recall@1", "ievalm_recall@10",
                                         "persuasiveness"] and more
    every, _ = board_columns([run(1)], table, all_columns=True)
    assert {c.metric for c in every} == set(table[1])
    assert metric_bounds(EVALUATOR, "persuasiveness") == (0.0, 2.0)
    assert metric_bounds(EVALUATOR, "ievalm_recall@10") == (0.0, 1.0)


def test_an_ievalm_1_run_still_shows_its_columns():
    shown, more = board_columns([run(2)], {2: summaries("pc@10", "pcir_avg@10")},
                                all_columns=False)
    assert [c.metric for c in shown] == ["pc@10", "pcir_avg@10"] and not more
