"""iEvaLM's metric and PEPPER's PCIR_avg variants (issue 30 items 1 and 2), by hand and against
the released code's formulas (RUCAIBox/iEvaLM-CRS src/model/metric.py + script/Rec_eval.py;
happysnail06/PEPPER src/eval/crs_eval.py), re-typed here as the reference."""

import math

import pytest

from evaluation.lib.metrics import ievalm
from evaluation.lib.metrics.preference import (
    PCIR_EQ3,
    PCIR_TABLES,
    PCIR_VARIANTS,
    SimulatedUser,
    pcir_avg,
    preference_report,
)
from evaluation.lib.simulators.users import dataset_context
from evaluation.lib.stats.clustered import cluster_mean


class ReleasedRecMetric:
    """iEvaLM's `RecMetric` (src/model/metric.py L3-47), recall part, as released."""

    def __init__(self, k_list):
        self.k_list = k_list
        self.metric = {f"recall@{k}": 0 for k in k_list}
        self.metric["count"] = 0

    def evaluate(self, preds, labels):
        for label in labels:
            if label == -100:
                continue
            for k in self.k_list:
                self.metric[f"recall@{k}"] += int(label in preds[:k])
            self.metric["count"] += 1

    def report(self):
        return {k: (v / self.metric["count"] if k != "count" else v)
                for k, v in self.metric.items()}


def released_rec_eval(dialogues):
    """Rec_eval.py L34-50: the last turn with `rec_items` of each dialogue, every label."""
    metric = ReleasedRecMetric([1, 10, 25, 50])
    for rankings, labels in dialogues:
        for rec_items in rankings[::-1]:
            if rec_items:
                metric.evaluate(list(rec_items), labels)
                break
    return metric.report()


def filler(n, prefix="f"):
    return [f"{prefix}{i}" for i in range(n)]


# The issue's hand dialogue: the target at rank 20, then absent, then at rank 8.
RANK_20 = tuple(filler(19) + ["t"] + filler(30, "g"))
ABSENT = tuple(filler(50, "h"))
RANK_8 = tuple(filler(7, "k") + ["t"] + filler(42, "m"))


def ievalm_protocol(rankings, targets, accept_at=ievalm.ACCEPT_AT):
    """The lists iEvaLM's dialogue keeps: it stops at the first list that is accepted."""
    kept = []
    for ranked in rankings:
        kept.append(ranked)
        if ievalm.accepts(ranked, targets, accept_at):
            break
    return tuple(kept)


def test_the_issues_hand_dialogue():
    kept = ievalm_protocol([RANK_20, ABSENT, RANK_8], ["t"])
    assert kept == (RANK_20,)  # the target is in the top 50 at turn 1: accepted, stopped
    s = ievalm.ievalm_summaries([ievalm.IEvaLMDialogue("u", ("t",), kept)])
    assert s["ievalm_recall@1"].value == 0 and s["ievalm_recall@10"].value == 0
    assert s["ievalm_recall@25"].value == 1 and s["ievalm_recall@50"].value == 1
    # Concord's earlier numbers, PEPPER-style over the three lists had the user kept talking:
    report = preference_report([SimulatedUser("u", ("t",), (RANK_20, ABSENT, RANK_8))],
                               turns=3, ks=(10,))
    assert report.summaries["pc@10"].value == 1
    assert report.summaries["recall@10"].value == pytest.approx(1 / 3)
    # and on the dialogue as iEvaLM stops it, the coverage curve stays at its last list
    stopped = preference_report([SimulatedUser("u", ("t",), kept)], turns=3, ks=(10, 25))
    assert stopped.pc[10] == [0, 0, 0] and stopped.pc[25] == [1, 1, 1]


def test_accept_at_top_50_not_51():
    late = tuple(filler(50) + ["t"])
    assert not ievalm.accepts(late, ["t"]) and ievalm.accepts(late[:49] + ("t",), ["t"])
    assert ievalm.accepts(RANK_8, ["x", "t"])  # any one of the targets


def test_pairs_are_weighted_as_the_released_code_weighs_them():
    dialogues = [
        # two gold items: one at rank 1 of the final list, one at rank 30
        ("a", ("x", "y"), (("q",) * 0 + tuple(filler(3)), ("x",) + tuple(filler(28)) + ("y",))),
        ("b", ("z",), (tuple(filler(5)),)),  # never found
        ("c", ("w",), (tuple(filler(9)) + ("w",), ())),  # last list empty: the one before
    ]
    ours = ievalm.ievalm_summaries(
        [ievalm.IEvaLMDialogue(u, t, r) for u, t, r in dialogues])
    released = released_rec_eval([(r, list(t)) for _, t, r in dialogues])
    assert released["count"] == 4  # (dialogue, gold item) pairs
    for k in (1, 10, 25, 50):
        assert ours[f"ievalm_recall@{k}"].value == pytest.approx(released[f"recall@{k}"])
    # by hand: R@1 = 1/4 (x), R@10 = 2/4 (x, w), R@25 = 2/4, R@50 = 3/4 (y at 30)
    assert [ours[f"ievalm_recall@{k}"].value for k in (1, 10, 25, 50)] == [0.25, 0.5, 0.5, 0.75]
    # a user-clustered interval: the pairs of user a are one cluster
    reference = cluster_mean([1, 1, 0, 1], ["a", "a", "b", "c"], bounds=(0.0, 1.0))
    got = ours["ievalm_recall@50"]
    assert (got.ci_low, got.ci_high, got.n["clusters"]) == (reference.ci_low,
                                                            reference.ci_high, 3)


def test_persuasiveness_is_the_mean_over_scored_dialogues():
    s = ievalm.ievalm_summaries([ievalm.IEvaLMDialogue("a", ("x",), (("x",),), 2),
                                 ievalm.IEvaLMDialogue("b", ("y",), (("x",),), 0),
                                 ievalm.IEvaLMDialogue("c", ("y",), (("x",),), 1),
                                 ievalm.IEvaLMDialogue("d", ("y",), (("x",),), None)])
    assert s["persuasiveness"].value == 1.0 and s["persuasiveness"].n["units"] == 3


def test_unit_values_sum_to_the_pair_weighted_mean():
    d = ievalm.IEvaLMDialogue("a", ("x", "y"), (("x", "q"),), 2)
    rows = ievalm.ievalm_unit_values(d, ks=(1,))
    assert rows == [("ievalm_recall@1", "x", 1.0), ("ievalm_recall@1", "y", 0.0),
                    ("persuasiveness", "", 2.0)]


# --- PEPPER's PCIR_avg ------------------------------------------------------------------------

def test_pcir_variants_by_hand():
    curve = [0.1, 0.1, 0.3, 0.5]
    assert pcir_avg(curve, PCIR_EQ3) == pytest.approx(0.5 / 4)  # Σ PCIR_t (Eq. 3) / T
    assert pcir_avg(curve, PCIR_TABLES) == pytest.approx((0.5 - 0.1) / 3)
    assert pcir_avg([0.4], PCIR_TABLES) is None and pcir_avg([0.4], PCIR_EQ3) == 0.4
    with pytest.raises(ValueError, match="unknown PCIR_avg variant"):
        pcir_avg(curve, "mean")
    assert set(PCIR_VARIANTS) == {PCIR_EQ3, PCIR_TABLES}


def test_the_report_computes_the_variant_it_names():
    users = [SimulatedUser("a", ("x", "y"), (("x",), ("q",), ("y",))),
             SimulatedUser("b", ("z",), (("q",), ("z",)))]
    eq3 = preference_report(users, turns=3, ks=(1,))
    tables = preference_report(users, turns=3, ks=(1,), pcir=PCIR_TABLES)
    # PC_t@1 = [0.25, 0.75, 1.0]; Eq. 3 mean of PCIR_t = 1.0 / 3; tables (1.0 - 0.25) / 2
    assert eq3.summaries["pcir_avg@1"].value == pytest.approx(1 / 3)
    assert sum(eq3.pcir[1]) / 3 == pytest.approx(1 / 3)  # the same as averaging Eq. 3
    assert tables.summaries["pcir_avg@1"].value == pytest.approx(0.375)
    assert sum(tables.pcir[1][1:]) / 2 == pytest.approx(0.375)
    assert eq3.as_json()["pcir_variant"] == "eq3" and \
        tables.as_json()["pcir_label"] == PCIR_VARIANTS[PCIR_TABLES]
    one = preference_report(users, turns=1, ks=(1,), pcir=PCIR_TABLES)
    assert one.summaries["pcir_avg@1"].value is None and "2 turns" in \
        one.summaries["pcir_avg@1"].undefined_reason


# PEPPER's Table 3 (PC_20@50) and Table 5 (PCIR_avg), T = 20 (seed 002, §4.4 and §4.5).
TABLE3_PC20_AT50 = {"redial/KBRD": 0.0309, "redial/BARCOR": 0.0744, "redial/UniCRS": 0.0838,
                    "redial/ChatGPT": 0.1232, "odkg/KBRD": 0.0897, "odkg/BARCOR": 0.1013,
                    "odkg/UniCRS": 0.1513, "odkg/ChatGPT": 0.2290}
TABLE3_PC20 = {  # PC_20@{1, 5, 10, 20, 50}
    "redial/KBRD": (0.0007, 0.0029, 0.0057, 0.0109, 0.0309),
    "redial/BARCOR": (0.0051, 0.0161, 0.0232, 0.0415, 0.0744),
    "redial/UniCRS": (0.0021, 0.0100, 0.0193, 0.0364, 0.0838),
    "redial/ChatGPT": (0.0157, 0.0288, 0.0442, 0.0674, 0.1232),
    "odkg/KBRD": (0.0049, 0.0110, 0.0210, 0.0436, 0.0897),
    "odkg/BARCOR": (0.0030, 0.0133, 0.0260, 0.0454, 0.1013),
    "odkg/UniCRS": (0.0052, 0.0215, 0.0415, 0.0763, 0.1513),
    "odkg/ChatGPT": (0.0237, 0.0568, 0.0876, 0.1364, 0.2290)}
TABLE5_PCIR_AVG = {"redial/KBRD": 0.0012, "redial/BARCOR": 0.0019, "redial/UniCRS": 0.0031,
                   "redial/ChatGPT": 0.0049, "odkg/KBRD": 0.0028, "odkg/BARCOR": 0.0029,
                   "odkg/UniCRS": 0.0060, "odkg/ChatGPT": 0.0089}


def test_the_papers_tables_disagree_with_eq3_telescoped():
    """The numbers docs/simulation.md quotes: PC_T / T is above Table 5 for every row, and the
    PC_1 that (PC_T − PC_1) / (T − 1) needs to give Table 5 is small and positive."""
    for row, pc_t in TABLE3_PC20_AT50.items():
        eq3 = pcir_avg([0.0] * 19 + [pc_t], PCIR_EQ3)
        assert eq3 > TABLE5_PCIR_AVG[row] + 0.0001, row
        implied_pc1 = pc_t - 19 * TABLE5_PCIR_AVG[row]
        assert 0 < implied_pc1 < pc_t, row
        assert pcir_avg([implied_pc1] + [0.0] * 18 + [pc_t], PCIR_TABLES) == pytest.approx(
            TABLE5_PCIR_AVG[row])
    # no K of Table 3 gives Table 5 by PC_T / T either (Table 5 rounded to 4 places)
    for row, pcs in TABLE3_PC20.items():
        assert not any(math.isclose(pc / 20, TABLE5_PCIR_AVG[row], abs_tol=5e-5)
                       for pc in pcs), row


# --- the dataset context of an iEvaLM dialogue ---------------------------------------------

def test_dataset_context_stops_before_the_recommendation_of_a_target():
    turns = [{"role": "user", "text": "Hi", "gold_item_ids": []},
             {"role": "system", "text": "What do you like?", "gold_item_ids": []},
             {"role": "user", "text": "Seafood.", "gold_item_ids": []},
             {"role": "system", "text": "Try X.", "gold_item_ids": ["x"]},
             {"role": "user", "text": "Cheaper?"},
             {"role": "system", "text": "Try Y.", "gold_item_ids": ["y"]}]
    assert dataset_context(turns, ["x"]) == (("user", "Hi"), ("system", "What do you like?"),
                                             ("user", "Seafood."))
    assert dataset_context(turns, ["y"])[-1] == ("user", "Cheaper?")
    assert dataset_context(turns, ["z"]) == dataset_context(turns, ["x"])  # first gold turn
    assert dataset_context(turns[:3], ["x"]) == ()  # no recommendation: no context
