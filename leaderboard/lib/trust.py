"""Which measured agreement with humans a leaderboard column shows (its trust column).

Candidates are rows of metric leaderboards: one evaluator's metric correlated (Spearman ρ, with
its 95% dialogue-jackknife interval) with one study's human labels of one aspect. The rule:

1. only rows with at least MIN_CLUSTERS dialogues behind the interval (where the interval's
   coverage is measured: `bench_calibration`), never units an evaluator was trained on (those
   rows are not even stored);
2. agreement is read in the metric's direction: ρ for a higher-is-better metric, −ρ for a
   lower-is-better one (a good turn count is a low one);
3. the best is the row with the largest lower 95% bound of that agreement — the agreement we can
   be most confident of, so a lucky ρ on 12 dialogues does not beat a solid one on 300; ties go
   to more units, then to the study and aspect names (a stable choice).

No candidate: "not validated". Pure Python: nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

MIN_CLUSTERS = 10
RULE = (f"the largest lower 95% bound of the metric's agreement with human labels (Spearman ρ, "
        f"sign turned for lower-is-better metrics) among the metric leaderboards of this "
        f"benchmark's studies with at least {MIN_CLUSTERS} labelled dialogues; held-out units "
        f"only")


@dataclass(frozen=True)
class Candidate:
    """One metric-leaderboard row: evaluator·metric vs one study's aspect."""

    evaluator: str
    metric: str
    value: float
    ci_low: float
    ci_high: float
    units: int
    clusters: int
    study: str  # slug
    study_title: str
    aspect: str
    aspect_label: str
    candidates: int = 1  # how many rows the choice was made from (set by `best`)
    current: bool = True  # False: its interval was stored by an older method
    simulated: bool = False  # the study's labels come from simulated annotators (the demo)

    def agreement_low(self, higher_is_better: bool) -> float:
        return self.ci_low if higher_is_better else -self.ci_high


def best(candidates: Iterable[Candidate], *, higher_is_better: bool,
         min_clusters: int = MIN_CLUSTERS) -> Candidate | None:
    """The candidate the rule above picks, with ``candidates`` set to how many qualified."""
    usable = [c for c in candidates if c.clusters >= min_clusters]
    if not usable:
        return None
    chosen = max(usable, key=lambda c: (c.agreement_low(higher_is_better), c.units,
                                        c.study, c.aspect))
    return Candidate(**{**chosen.__dict__, "candidates": len(usable)})
