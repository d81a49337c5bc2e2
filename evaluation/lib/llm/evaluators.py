"""The built-in LLM evaluators, registered in `evaluation.lib.llm.registry` on import: what
each declares (metrics spec, preamble): name, version, the protocol it reads, the unit it
scores, its metrics with range and direction, its prompts and their answer formats, its
configuration, estimate, run and run page; and the run configuration's hash.

- ``core``: CoRE (metrics spec §B) on ``log`` submissions, unit = log: the
  twelve factors (0–4), their mean, the four-role debate's final score (0–100), and beside it
  Recall@1/5/10 on the session list and the iEvaLM persuasiveness score (0–2).
- ``trace_judge``: the Trace LLM judge (Appendix J; metrics spec §A) on ``turn``
  submissions, unit = recommend/compare turn: five criteria 1–5.
- ``pepper_judge``: the PEPPER qualitative judge (§3.3.2; metrics spec §D) on ``log``
  submissions, unit = log: three criteria 1–5.
- ``face``: FACE (§2) on ``log`` submissions: per system turn relevance and
  interestingness, per log understanding, task completion, interest arousal, efficiency and
  overall impression, each the mean of particle scores read from score distributions (Eq. 1).

Pure Python: no Django import.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from evaluation.lib.llm import estimate as estimates
from evaluation.lib.llm.core_debate import DebateSettings, debate_format
from evaluation.lib.llm.core_factors import FACTOR_FORMAT
from evaluation.lib.llm.core_recall_persuasiveness import PERSUASIVENESS_FORMAT
from evaluation.lib.llm.core_rubrics import FACTOR_GUIDELINES
from evaluation.lib.llm.face.aspects import ASPECTS as FACE_ASPECTS
from evaluation.lib.llm.face.aspects import parse_aspects
from evaluation.lib.llm.face.prompts import DECOMPOSITION_FORMAT, initial_instruction, score_format
from evaluation.lib.llm.pepper_judge import ANSWER_FORMAT as PEPPER_FORMAT
from evaluation.lib.llm.pepper_judge import PEPPER_ASPECTS, judge_pepper_log
from evaluation.lib.llm.registry import EstimateInputs, LLMEvaluator, Prompt, ScoreContext, register
from evaluation.lib.llm.trace_judge import ANSWER_FORMAT as TRACE_FORMAT
from evaluation.lib.llm.trace_judge import CRITERION_ANCHORS, TRACE_CRITERIA, judge_trace_turn
from evaluation.lib.metrics.types import ACCURACY, MetricSpec

CORE, TRACE_JUDGE, PEPPER_JUDGE, FACE = "core", "trace_judge", "pepper_judge", "face"
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
                        "iEvaLM persuasiveness (0–2, iEvaLM's rubric, as CoRE §6.3–6.4 use it) "
                        "of the system's last explanation, an LLM in the user's place."))
    specs += [
        MetricSpec(session_recall_metric(k), ACCURACY, "dialogue", "higher", (0, 1),
                   f"Share of the ground-truth items in the first {k} of the session list.")
        for k in SESSION_RECALL_KS
    ]
    return tuple(specs)


# --- configurations ------------------------------------------------------------------------

DEBATE_DEFAULTS = {"max_rounds": 4, "agreement_tolerance": 0.0, "buffer": "all_rounds",
                   "factor_view": "own_factors"}


def unique_models(entries: Iterable[dict]) -> list[dict]:
    """Model entries, one per model name (the first of each)."""
    seen: dict[str, dict] = {}
    for entry in entries:
        seen.setdefault(entry["model"], dict(entry))
    return list(seen.values())


def _core_configure(config: Mapping[str, Any], options: Mapping[str, Any]) -> dict:
    model = options["model"]
    candidates = unique_models([model, *(options.get("judges") or ())])
    debate = options.get("debate")
    return {
        "debate_model": dict(options.get("debate_model") or model),
        "debate": ({**DEBATE_DEFAULTS, **(debate or {}), "domain": options.get("domain")
                    or "items"} if options.get("use_debate", True) else None),
        "judges": candidates if len(candidates) > 1 else [],
        "human_study": options.get("human_study") if len(candidates) > 1 else None,
    }


def _domain_configure(config: Mapping[str, Any], options: Mapping[str, Any]) -> dict:
    return {"domain": options.get("domain") or "items"}


def face_config(*, aspects: Sequence[str] = (), instructions: dict | None = None) -> dict:
    """FACE's part of a run configuration: the aspects and, per aspect, its instruction set.

    INSTRUCTIONS maps an aspect to an optimized set {"version", "texts", "train_dialogues"}
    (`face_instructions_resolve`); an aspect without one uses FACE's initial instruction (FACE
    Appendix E.2.4, "FACE w/o train"). The dialogues any set was trained on are kept, so their
    scores are reported apart from the held-out ones (study report, metric leaderboard).
    """
    instructions = instructions or {}
    aspects = parse_aspects([*aspects, *instructions]) if aspects else tuple(FACE_ASPECTS)
    sets, trained = {}, set()
    for aspect in aspects:
        chosen = instructions.get(aspect)
        if chosen:
            sets[aspect] = {"version": chosen["version"], "texts": list(chosen["texts"])}
            trained |= set(chosen.get("train_dialogues") or ())
        else:
            sets[aspect] = {"version": None,
                            "texts": [initial_instruction(FACE_ASPECTS[aspect])]}
    return {"aspects": list(aspects), "instructions": sets, "train_dialogues": sorted(trained)}


def _face_configure(config: Mapping[str, Any], options: Mapping[str, Any]) -> dict:
    return face_config(**(options.get("face") or {}))


# --- estimates -----------------------------------------------------------------------------


def _core_estimate(logs, price, inputs: EstimateInputs):
    debate = None
    if inputs.use_debate:
        domain = (inputs.config.get("debate") or {}).get("domain") or "items"
        debate = DebateSettings(**{**DEBATE_DEFAULTS, "max_rounds": inputs.max_rounds,
                                   "domain": domain})
    return estimates.estimate_core(logs, price, item_names=inputs.item_names, debate=debate)


def _face_estimate(logs, price, inputs: EstimateInputs):
    return estimates.estimate_face(logs, price, instructions={
        aspect: chosen["texts"] for aspect, chosen in inputs.config["instructions"].items()})


def _core_unavailable(collected: Collection[str]) -> dict[str, str]:
    return {session_recall_metric(k): "no log has ground-truth items"
            for k in SESSION_RECALL_KS if session_recall_metric(k) not in collected}


# --- the built-in evaluators ---------------------------------------------------------------


def _trace_score(turn, ctx: ScoreContext):
    return judge_trace_turn(turn, gateway=ctx.gateway, config=ctx.config,
                            max_reasks=ctx.max_reasks, meter=ctx.meter)


def _pepper_score(log, ctx: ScoreContext):
    return judge_pepper_log(log, gateway=ctx.gateway, config=ctx.config,
                            domain=ctx.run_config.get("domain") or "items",
                            max_reasks=ctx.max_reasks, meter=ctx.meter)


def _tags(keys: Sequence[str], value: int) -> str:
    return "".join(f"<{key}>{value}</{key}>" for key in keys)


register(LLMEvaluator(
    CORE, "1.1.0", "log", "dialogue", "CoRE: twelve factors and a four-role debate",
    _core_metrics(), scores="logs",
    docs="CoRE (Wang et al.): twelve factors 0–4 and a four-role debate 0–100 per log, with "
         "iEvaLM persuasiveness and Recall@k on the session list.",
    prompts=(
        Prompt("factor", "one factor's counting rule; a rationale, then <rating>",
               FACTOR_FORMAT, example="Two turns ignore the request.\n<rating>2</rating>"),
        Prompt("debate", "one role's statement and score in one round (JSON)",
               format_for=debate_format,
               example='{"evaluator":"Common User","statement":"Fine.","score":70}'),
        Prompt("persuasiveness", "the last explanation's persuasiveness; <rating> 0–2",
               PERSUASIVENESS_FORMAT, example="Partly convincing.\n<rating>1</rating>"),
    ),
    options=frozenset({"debate", "judges", "domain"}), configure=_core_configure,
    estimate=_core_estimate, runner="evaluation.services.llm_runs_builtin.execute_core",
    template="evaluation/_run_llm_core.html",
    report="evaluation.selectors.llm_reports.core_report",
    unavailable=_core_unavailable, judge_routing=True))

register(LLMEvaluator(
    TRACE_JUDGE, "1.0.0", "turn", "turn", "Trace LLM judge",
    tuple(_judge(criterion_metric(c), "turn", 1, 5, f"{CRITERION_ANCHORS[c][0]} (1–5).")
          for c in TRACE_CRITERIA), scores="turns",
    docs="The Trace LLM judge (Appendix J): five criteria 1–5 on each recommend/compare turn, "
         "seeing the dialogue so far and the cited reviews.",
    prompts=(Prompt("judge", "a short reasoning, then the five criteria's tags", TRACE_FORMAT,
                    example="Good.\n" + _tags(TRACE_CRITERIA, 4)),),
    estimate=lambda turns, price, inputs: estimates.estimate_trace_judge(turns, price),
    score=_trace_score, metric_of=criterion_metric,
    columns=tuple((criterion_metric(c), CRITERION_ANCHORS[c][0]) for c in TRACE_CRITERIA)))

register(LLMEvaluator(
    PEPPER_JUDGE, "1.0.0", "log", "dialogue", "PEPPER qualitative judge",
    tuple(_judge(pepper_metric(a), "dialogue", 1, 5, f"PEPPER {a} (1–5).")
          for a in PEPPER_ASPECTS), scores="logs",
    docs="The PEPPER qualitative judge (§3.3.2): proactiveness, coherence and personalization "
         "1–5 per log.",
    prompts=(Prompt("judge", "a short reasoning, then the three criteria's tags", PEPPER_FORMAT,
                    example="Asks well.\n" + _tags(PEPPER_ASPECTS, 3)),),
    options=frozenset({"domain"}), configure=_domain_configure,
    estimate=lambda logs, price, inputs: estimates.estimate_pepper_judge(
        logs, price, domain=inputs.config["domain"]),
    score=_pepper_score, metric_of=pepper_metric,
    columns=tuple((pepper_metric(a), a.capitalize()) for a in PEPPER_ASPECTS)))

register(LLMEvaluator(
    FACE, "1.0.0", "log", "dialogue", "FACE: particles scored from score distributions",
    tuple(_judge(a.metric, a.level, a.low, a.high,
                 f"FACE {a.key.replace('_', ' ')}: {a.question} Mean over the "
                 f"{'turn' if a.level == 'turn' else 'dialogue'}'s particles and the "
                 f"instructions of Eq. 1 expectations ({a.low}–{a.high}).")
          for a in FACE_ASPECTS.values()), scores="particles",
    docs="FACE (Joko et al.): each system turn decomposed into particles, each particle scored "
         "per aspect from the grade token's log-probabilities (Eq. 1), means per turn and log.",
    prompts=(
        Prompt("decompose", "reasoning, then the particles as a JSON list in a code block",
               DECOMPOSITION_FORMAT, example='Two particles.\n```json\n[{"dialogue_act":'
               '"recommendation","mention":"Try X","user_feedback":""}]\n```'),
        Prompt("score", "a brief reasoning, then the line \"Score: N\" (its logprobs)",
               format_for=score_format, example="Relevant.\nScore: 1"),
    ),
    options=frozenset({"face"}), configure=_face_configure, estimate=_face_estimate,
    runner="evaluation.services.llm_runs_builtin.execute_face",
    template="evaluation/_run_llm_face.html",
    report="evaluation.selectors.llm_reports.face_report"))


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
