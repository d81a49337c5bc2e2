"""iEvaLM's protocol and metric as its released code runs them (Wang et al., EMNLP 2023;
RUCAIBox/iEvaLM-CRS; docs/simulation.md, "iEvaLM as its code runs it").

- The user accepts as soon as one of its targets is anywhere in the system's top 50
  (`script/chat.py` L264-269: `rec_success` when a label is in `rec_items[0]`, the model's top
  50), and the dialogue stops there (L345-346).
- The reported recall is Recall@{1, 10, 25, 50} of the dialogue's *final* list — the last
  system turn that carried a list (`script/Rec_eval.py` L43-48) — one 0/1 hit per (dialogue,
  gold item) pair (`src/model/metric.py` L9-21: `int(label in pred_list[:k])`, `count` += 1
  per label), averaged over those pairs (L41-47).
- Persuasiveness is one 0–2 score per dialogue, averaged over dialogues (`Rec_eval.py` L37-39,
  L53-55).

Each mean is reported with the studentized cluster (jackknife-t) CI whose clusters are the
simulated users (a user with two targets is two pairs of one cluster). Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from evaluation.lib.metrics.preference import preference_specs
from evaluation.lib.metrics.types import MetricSpec
from evaluation.lib.stats.clustered import cluster_mean
from evaluation.lib.stats.results import Estimate

IEVALM_KS = (1, 10, 25, 50)  # Rec_eval.py L25: RecMetric([1, 10, 25, 50])
ACCEPT_AT = 50  # the models' top 50 (src/model/CHATGPT.py L162, KBRD.py topk(k=50))
RECALL = "ievalm_recall"
PERSUASIVENESS = "persuasiveness"
PERSUASIVENESS_RANGE = (0.0, 2.0)
LABELS = {
    RECALL: "iEvaLM Recall@K: the final list's hits, averaged over (dialogue, gold item) pairs "
            "(Rec_eval.py, metric.py)",
    PERSUASIVENESS: "iEvaLM persuasiveness (0–2, iEvaLM's rubric), averaged over dialogues",
}


SIMULATOR = "ievalm"  # the simulator whose runs report these (evaluator simulation.ievalm)
IEVALM_AXIS = "iEvaLM (final list)"
# the iEvaLM simulator's coverage curves; it sorts after IEVALM_AXIS where axes sort by name
PEPPER_STYLE_AXIS = "iEvaLM extra: PEPPER-style coverage"


def ievalm_specs(ks: Sequence[int] = IEVALM_KS) -> tuple[MetricSpec, ...]:
    """What an iEvaLM simulation stores and its board shows: iEvaLM's Recall@K and
    persuasiveness first (the headline), then the PEPPER-style coverage curves as the extra,
    on their own axis."""
    recall = tuple(MetricSpec(f"{RECALL}@{k}", IEVALM_AXIS, "dialogue", "higher", (0.0, 1.0),
                              LABELS[RECALL].replace("@K", f"@{k}"), headline=i + 1)
                   for i, k in enumerate(ks))
    persuasiveness = MetricSpec(PERSUASIVENESS, IEVALM_AXIS, "dialogue", "higher",
                                PERSUASIVENESS_RANGE, LABELS[PERSUASIVENESS],
                                headline=len(ks) + 1)
    coverage = tuple(replace(spec, axis=PEPPER_STYLE_AXIS, headline=0)
                     for spec in preference_specs())
    return (*recall, persuasiveness, *coverage)


def simulation_metric_range(metric: str) -> tuple[float, float]:
    """The range of a simulation run's metric: persuasiveness 0–2, every other (recall,
    coverage) a share of the targets."""
    return PERSUASIVENESS_RANGE if metric == PERSUASIVENESS else (0.0, 1.0)


def accepts(ranked: Sequence[str], targets: Sequence[str], accept_at: int = ACCEPT_AT) -> bool:
    """Whether iEvaLM's user accepts this list: a target among its first ACCEPT_AT items."""
    return bool(set(ranked[:accept_at]) & set(targets))


def final_list(rankings: Sequence[Sequence[str]]) -> Sequence[str]:
    """The last non-empty list of a dialogue (Rec_eval.py walks the turns backwards to the
    first that has `rec_items`); () when no turn had one."""
    return next((r for r in reversed(rankings) if r), ())


def pair_hits(rankings: Sequence[Sequence[str]], targets: Sequence[str],
              k: int) -> list[int]:
    """One 0/1 per gold item: is it in the first K of the final list (metric.py L20-21)."""
    final = list(final_list(rankings))[:k]
    return [int(target in final) for target in targets]


@dataclass(frozen=True)
class IEvaLMDialogue:
    user_id: str
    target_item_ids: tuple[str, ...]
    rankings: tuple[tuple[str, ...], ...]  # the system's lists at turns 1, 2, … (as stopped)
    persuasiveness: float | None = None  # 0–2, None when it could not be scored


def ievalm_summaries(dialogues: Sequence[IEvaLMDialogue],
                     ks: Sequence[int] = IEVALM_KS) -> dict[str, Estimate]:
    """`ievalm_recall@K` for every K and `persuasiveness`, each with its user-clustered CI."""
    out: dict[str, Estimate] = {}
    bounds = {"bounds": (0.0, 1.0)}
    for k in ks:
        values, clusters = [], []
        for d in dialogues:
            hits = pair_hits(d.rankings, d.target_item_ids, k)
            values += hits
            clusters += [d.user_id] * len(hits)
        out[f"{RECALL}@{k}"] = cluster_mean(values, clusters, **bounds)
    scored = [(d.persuasiveness, d.user_id) for d in dialogues if d.persuasiveness is not None]
    out[PERSUASIVENESS] = cluster_mean([s for s, _ in scored], [u for _, u in scored],
                                       bounds=PERSUASIVENESS_RANGE)
    return out


def ievalm_unit_values(dialogue: IEvaLMDialogue, ks: Sequence[int] = IEVALM_KS
                       ) -> list[tuple[str, str, float]]:
    """(metric, unit suffix, value) of one dialogue: a unit per gold item for recall (so that
    a board's per-dialogue sums give iEvaLM's pair-weighted mean), one for persuasiveness."""
    rows = []
    for k in ks:
        for target, hit in zip(dialogue.target_item_ids,
                               pair_hits(dialogue.rankings, dialogue.target_item_ids, k),
                               strict=True):
            rows.append((f"{RECALL}@{k}", target, float(hit)))
    if dialogue.persuasiveness is not None:
        rows.append((PERSUASIVENESS, "", float(dialogue.persuasiveness)))
    return rows


def summaries_json(summaries: Mapping[str, Estimate]) -> dict:
    return {name: {"value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high, "n": dict(e.n),
                   "undefined_reason": e.undefined_reason or ""}
            for name, e in summaries.items()}
