"""The arena-vs-human agreement numbers (leaderboard/lib/arena_agreement.py) by hand."""

import math

import pytest
from scipy import stats

from leaderboard.lib.arena_agreement import (
    Label,
    choice_labels,
    human_means,
    label_choices,
    rank_agreement,
)


def test_a_systems_mean_and_its_dialogue_clustered_interval_by_hand():
    # System X: dialogue d1 labelled 4 and 2 (mean 3), d2 labelled 1 and 1 (mean 1), d3: 2.
    labels = [Label("X", "d1", "face.overall", 4), Label("X", "d1", "face.overall", 2),
              Label("X", "d2", "face.overall", 1), Label("X", "d2", "face.overall", 1),
              Label("X", "d3", "face.overall", 2), Label("X", "d3", "core.overall", 90)]
    estimate = human_means(labels, "face.overall")["X"]
    assert estimate.value == pytest.approx(10 / 5)
    assert estimate.n == {"units": 5, "clusters": 3}
    # Delete-one-dialogue jackknife of the pooled mean: without d1 (1+1+2)/3, without d2
    # (4+2+2)/3, without d3 (4+2+1+1)/4; SE^2 = (G-1)/G * sum (theta_-g - mean(theta_-g))^2.
    leave_outs = [4 / 3, 8 / 3, 2.0]
    centre = sum(leave_outs) / 3
    se = math.sqrt(2 / 3 * sum((x - centre) ** 2 for x in leave_outs))
    assert se == pytest.approx(math.sqrt(16 / 27))
    # Degrees of freedom (Satterthwaite, unequal dialogues): weights n_g/N = .4 .4 .2, shares
    # q = w^2 (1 + 1/n_g) = .24 .24 .08, df = (sum q)^2 / sum q^2 - 1 = .3136/.1216 - 1.
    df = 0.56 ** 2 / (0.24 ** 2 + 0.24 ** 2 + 0.08 ** 2) - 1
    half = stats.t.ppf(0.975, df) * se  # scipy only for Student's t quantile
    assert estimate.ci_low == pytest.approx(2 - half)
    assert estimate.ci_high == pytest.approx(2 + half)


def test_a_system_with_one_dialogue_has_a_mean_and_no_interval():
    estimate = human_means([Label("Y", "d9", "face.overall", 3),
                            Label("Y", "d9", "face.overall", 1)], "face.overall")["Y"]
    assert estimate.value == 2 and estimate.ci_low is None and estimate.ci_high is None


def test_rank_agreement_by_hand():
    ratings = {"A": 1100.0, "B": 1050.0, "C": 990.0, "D": 900.0, "E": None}
    human = {"A": 3.5, "B": 2.0, "C": 3.0, "D": 1.0, "E": 4.0, "F": 2.5}
    result = rank_agreement(ratings, human)
    # A, B, C, D are the systems with both (E has no rating, F no votes): rating ranks
    # 1 2 3 4, human ranks 1 3 2 4: d = 0, -1, 1, 0 -> rho = 1 - 6*2/(4*15) = 0.8.
    assert result["spearman"].statistic == pytest.approx(0.8)
    assert result["spearman"].n == 4
    # Pairs: (A,B)+ (A,C)+ (A,D)+ (B,C)- (B,D)+ (C,D)+ -> tau = (5 - 1)/6.
    assert result["kendall"].statistic == pytest.approx(4 / 6)
    assert result["kendall"].n == 4


def test_rank_agreement_is_undefined_below_three_systems():
    result = rank_agreement({"A": 1010.0, "B": 990.0}, {"A": 3.0, "B": 1.0})
    assert result["spearman"].statistic is None and result["spearman"].n == 2
    assert "fewer than 3" in result["spearman"].undefined_reason


def test_a_nominal_label_is_compared_by_the_share_of_each_category():
    choices = label_choices([("satisfaction", "satisfaction", "dialogue", False),
                             ("face.overall", "Overall", "dialogue", True),
                             ("face.relevance", "Relevance", "turn", True)],
                            {"satisfaction": {"satisfied", "frustrated"}})
    assert [c["key"] for c in choices] == ["satisfaction=frustrated", "satisfaction=satisfied",
                                           "face.overall"]
    rows = [("X", "c1", "satisfaction", "satisfied"), ("X", "c2", "satisfaction", "frustrated"),
            ("X", "c3", "satisfaction", "satisfied"), ("X", "c3", "face.overall", 2)]
    labels = choice_labels(rows, choices[1])
    assert [label.value for label in labels] == [1.0, 0.0, 1.0]
    assert human_means(labels, "satisfaction=satisfied")["X"].value == pytest.approx(2 / 3)
    assert [label.value for label in choice_labels(rows, choices[2])] == [2.0]
