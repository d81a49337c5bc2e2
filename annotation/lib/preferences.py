"""The study report's pairwise-preference summary (issue 34.4; docs/statistics.md, "Pairwise
preferences in a study").

Each annotator's answer on a pairwise item ("a": the first system is better, "b": the second,
"tie") is one vote. Per system pair: wins, ties and losses of the pair's first system (pairs
and systems in name order), and its win rate (wins + ties / 2) / votes with a 95% studentized
cluster interval over dialogues on the logit scale (`cluster_t_logit_mean`, the interval of every
bounded mean in Concord: an annotator's several votes and a dialogue's several turns are
correlated, the dialogues are the independent units). Over all systems: Bradley–Terry strengths
on the Elo scale with percentile-bootstrap intervals and rank intervals, computed by the arena's
code (`evaluation.lib.stats.arena.arena_table`, method `bradley_terry`), a tie counting half a
win for each side as there.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from annotation.lib.labels import LabelRow, system_display
from evaluation.lib.stats.arena import METHOD_NAMES, arena_table
from evaluation.lib.stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from evaluation.lib.stats.clustered import cluster_mean

SEPARATOR = " vs "  # a pairwise label row's system: "<first> vs <second>" (NativeItem)
SCORES = {"a": 1.0, "tie": 0.5, "b": 0.0}
FLIPPED = {"a": "b", "b": "a", "tie": "tie"}


def preference_votes(rows: Sequence[LabelRow]) -> list[tuple[str, str, str, str]]:
    """(first, second, outcome, dialogue) per annotator's answer, each pair in name order (the
    outcome flipped to match); rows without an annotator, a pair or a known answer are left
    out."""
    votes = []
    for row in rows:
        first, separator, second = str(row.system).partition(SEPARATOR)
        if not row.annotator or not separator or row.value not in SCORES:
            continue
        first, second = system_display(first), system_display(second)
        if first == second:
            continue
        outcome = str(row.value)
        if second < first:
            first, second, outcome = second, first, FLIPPED[outcome]
        votes.append((first, second, outcome, row.dialogue_id))
    return votes


def pairwise_preferences(rows: Sequence[LabelRow], *, n_resamples: int = DEFAULT_RESAMPLES,
                         seed: int = DEFAULT_SEED) -> dict:
    """The summary of ROWS (the pairwise field's label rows): {} without a vote."""
    votes = preference_votes(rows)
    if not votes:
        return {}
    by_pair: dict[tuple[str, str], list] = defaultdict(list)
    for first, second, outcome, dialogue in votes:
        by_pair[(first, second)].append((outcome, dialogue))
    pairs = []
    for (first, second), cast in sorted(by_pair.items()):
        counts = Counter(outcome for outcome, _ in cast)
        estimate = cluster_mean([SCORES[outcome] for outcome, _ in cast],
                                [dialogue for _, dialogue in cast], bounds=(0.0, 1.0))
        pairs.append({"system": first, "opponent": second, "wins": counts["a"],
                      "ties": counts["tie"], "losses": counts["b"], "votes": len(cast),
                      "win_rate": estimate.to_dict()})
    table = arena_table([(first, second, outcome) for first, second, outcome, _ in votes],
                        method="bt", n_resamples=n_resamples, seed=seed)
    method = METHOD_NAMES["bt"]
    params = {**table.params, "valid_resamples": table.valid_resamples}
    strengths = []
    for row in table.rows:
        note = row.ci_note or table.ci_note or ""
        strengths.append({
            "system": row.system, "votes": row.votes, "wins": row.wins, "losses": row.losses,
            "ties": row.ties, "rank": row.rank, "rank_low": row.rank_low,
            "rank_high": row.rank_high,
            "strength": {"value": row.rating, "ci_low": row.ci_low, "ci_high": row.ci_high,
                         "method": method, "undefined_reason": (
                             None if row.rating is not None
                             else table.undefined_reason),
                         "params": {**params, **({"ci_note": note} if note else {})},
                         "n": {"votes": row.votes}}})
    return {"pairs": pairs, "strengths": strengths, "votes": len(votes),
            "systems": len(table.rows)}
