"""What each LLM evaluator declares (metrics spec, preamble): name, version, the protocol it
reads, the unit it scores, its metrics with range and direction, and a hashed configuration.

- ``core``: CoRE (metrics spec §B) on ``log`` submissions, unit = log: the
  twelve factors (0–4), their mean, the four-role debate's final score (0–100), and beside it
  Recall@1/5/10 on the session list and the iEvaLM persuasiveness score (0–2).
- ``trace_judge``: the Trace LLM judge (Appendix J; metrics spec §A) on ``turn``
  submissions, unit = recommend/compare turn: five criteria 1–5.
- ``face``: FACE (§2) on ``log`` submissions: per system turn relevance and
  interestingness, per log understanding, task completion, interest arousal, efficiency and
  overall impression, each the mean of particle scores read from score distributions (Eq. 1).
- ``pepper_judge``: the PEPPER qualitative judge (§3.3.2; metrics spec §D) on ``log``
  submissions, unit = log: three criteria 1–5.

Pure Python: no Django import.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaluation.lib.llm.core_rubrics import FACTOR_GUIDELINES
from evaluation.lib.llm.face.aspects import ASPECTS as FACE_ASPECTS
from evaluation.lib.llm.names import CORE, FACE, PEPPER_JUDGE, TRACE_JUDGE
from evaluation.lib.llm.pepper_judge import PEPPER_ASPECTS
from evaluation.lib.llm.trace_judge import CRITERION_ANCHORS, TRACE_CRITERIA
from evaluation.lib.metrics.types import ACCURACY, MetricSpec

LLM_JUDGE = "LLM judge"
SESSION_RECALL_KS = (1, 5, 10)


def factor_metric(factor: str) -> str:
    return f"core.{factor}"


def criterion_metric(criterion: str) -> str:
    return f"judge.{criterion}"


def pepper_metric(aspect: str) -> str:
    return f"pepper.{aspect}"


FACTOR_MEAN = "core.factor_mean"
DEBATE_SCORE = "core.debate"
PERSUASIVENESS = "persuasiveness"


def session_recall_metric(k: int) -> str:
    return f"session_recall@{k}"


@dataclass(frozen=True)
class LLMEvaluator:
    name: str
    version: str
    protocol: str  # the submission protocol it reads: "log" or "turn"
    unit: str  # "dialogue" (a log) or "turn"
    title: str
    metrics: tuple[MetricSpec, ...]

    def metric(self, name: str) -> MetricSpec | None:
        return next((spec for spec in self.metrics if spec.name == name), None)


def _judge(name: str, unit: str, low: float, high: float, description: str) -> MetricSpec:
    return MetricSpec(name, LLM_JUDGE, unit, "higher", (low, high), description)


def _core_metrics() -> tuple[MetricSpec, ...]:
    specs = [
        _judge(factor_metric(g.key), "dialogue", 0, 4, f"CoRE {g.dimension.lower()}: {g.name} "
               "(0–4, the judge's counting rule).")
        for g in FACTOR_GUIDELINES
    ]
    specs.append(_judge(FACTOR_MEAN, "dialogue", 0, 4,
                        "Mean of the twelve factors of a log (over the factors that were scored)."))
    specs.append(_judge(DEBATE_SCORE, "dialogue", 0, 100,
                        "Final debate score: mean of the four roles' last scores (0–100)."))
    specs.append(_judge(PERSUASIVENESS, "dialogue", 0, 2,
                        "iEvaLM persuasiveness of the system's last explanation (0–2)."))
    specs += [
        MetricSpec(session_recall_metric(k), ACCURACY, "dialogue", "higher", (0, 1),
                   f"Share of the ground-truth items in the first {k} of the session list.")
        for k in SESSION_RECALL_KS
    ]
    return tuple(specs)


EVALUATORS: dict[str, LLMEvaluator] = {
    CORE: LLMEvaluator(CORE, "1.0.0", "log", "dialogue",
                       "CoRE: twelve factors and a four-role debate", _core_metrics()),
    TRACE_JUDGE: LLMEvaluator(
        TRACE_JUDGE, "1.0.0", "turn", "turn", "Trace LLM judge",
        tuple(_judge(criterion_metric(c), "turn", 1, 5, f"{CRITERION_ANCHORS[c][0]} (1–5).")
              for c in TRACE_CRITERIA)),
    PEPPER_JUDGE: LLMEvaluator(
        PEPPER_JUDGE, "1.0.0", "log", "dialogue", "PEPPER qualitative judge",
        tuple(_judge(pepper_metric(a), "dialogue", 1, 5, f"PEPPER {a} (1–5).")
              for a in PEPPER_ASPECTS)),
    FACE: LLMEvaluator(
        FACE, "1.0.0", "log", "dialogue",
        "FACE: particle scores from score distributions",
        tuple(_judge(a.metric, a.level, a.low, a.high,
                     f"FACE {a.key.replace('_', ' ')}: {a.question} Mean over the "
                     f"{'turn' if a.level == 'turn' else 'dialogue'}'s particles and the "
                     f"instructions of Eq. 1 expectations ({a.low}–{a.high}).")
              for a in FACE_ASPECTS.values())),
}

# Where a model is reached and with which credentials (the operator's profile; older
# configurations: an address and a variable): not what it answers, so neither part of the
# configuration hash nor of the cache key (the same model behind another host is the same).
_LOCATION_KEYS = frozenset({"profile", "api_base", "api_key_env"})


def llm_config_hash(config: Mapping[str, Any]) -> str:
    """SHA-256 of the run configuration's canonical JSON, without model locations."""
    payload = json.dumps(_without_locations(config), sort_keys=True, separators=(",", ":"),
                         ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _without_locations(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_locations(v) for k, v in value.items() if k not in _LOCATION_KEYS}
    if isinstance(value, list | tuple):
        return [_without_locations(v) for v in value]
    return value
