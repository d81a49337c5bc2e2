"""The runs of the built-in LLM evaluators that do more than score each unit with one
prompt: CoRE (metrics spec §B: the judge per factor, the twelve factors, the four-role debate,
persuasiveness, Recall@k) and FACE (FACE §2: particles, Eq. 1 scores, optimized instructions).
Their registered objects name these functions as their `runner`
(`evaluation.lib.llm.evaluators`); `evaluation.services.llm_runs` reads the units, calls them,
and stores what they return (unit values, debate turns, FACE's turns and particles)."""

import statistics
from collections import defaultdict
from collections.abc import Sequence

from evaluation import ports
from evaluation.lib.llm import core_debate, core_factors, core_routing, core_rubrics
from evaluation.lib.llm.adapters import log_cluster
from evaluation.lib.llm.conversation import ConversationLog
from evaluation.lib.llm.core_debate import DebateResult, DebateSettings
from evaluation.lib.llm.core_recall_persuasiveness import score_persuasiveness, session_recall
from evaluation.lib.llm.evaluators import (
    DEBATE_SCORE,
    FACTOR_MEAN,
    PERSUASIVENESS,
    SESSION_RECALL_KS,
    factor_metric,
    session_recall_metric,
)
from evaluation.lib.llm.face import engine as face_engine
from evaluation.lib.llm.face.aspects import ASPECTS as FACE_ASPECTS
from evaluation.lib.llm.face.aspects import TURN as FACE_TURN
from evaluation.lib.llm.face.scoring import LogprobsUnavailable
from evaluation.lib.llm.gateway import ModelConfig
from evaluation.lib.progress import Progress
from evaluation.models import DebateTurn, FaceTurn, Run
from evaluation.services.llm_models import model_config
from evaluation.services.llm_runs import (
    LLMRunFailed,
    RunContext,
    UnitOutcome,
    UnitValue,
    count,
    human_core_study,
    score_units,
)

# --- CoRE ----------------------------------------------------------------------------------


def execute_core(ctx: RunContext, entries: Sequence[tuple], progress: Progress) -> dict:
    """CoRE on every log: the judge per factor (routed by QWK when there are several), the
    twelve factors, the debate, persuasiveness and Recall@k on the session list."""
    item_names = dict(ctx.run.submission.benchmark.items.values_list("external_id", "name"))
    factor_configs, routing = _core_routing(ctx, item_names, progress)
    debate = ctx.run.config.get("debate")
    debate_settings = (DebateSettings(**{**debate,
                                         "factor_view": core_debate.stored_factor_view(debate)},
                                      max_reasks=ctx.max_reasks)
                       if debate else None)
    debate_config = model_config(ctx.run.config["debate_model"])

    def score_log(entry: tuple) -> UnitOutcome:
        return _core_log(ctx, entry[2], factor_configs=factor_configs,
                         debate_config=debate_config, debate_settings=debate_settings,
                         item_names=item_names)

    result = score_units(ctx, entries, score_log, progress)
    return {**result, "routing": routing}


def _core_log(ctx: RunContext, log: ConversationLog, *, factor_configs, debate_config,
              debate_settings, item_names) -> UnitOutcome:
    unit, cluster = log.log_id, log_cluster(log)
    factors = core_factors.score_factors(log, gateway=ctx.gateway, config=factor_configs,
                                         item_names=item_names, max_reasks=ctx.max_reasks,
                                         meter=ctx.usage.stage("factors"))
    outcome = UnitOutcome(unit, cluster, [])

    def add(metric: str, value, detail: dict | None = None) -> None:
        outcome.values.append(UnitValue(metric, "dialogue", unit, cluster, value, detail or {}))

    for key, result in factors.items():
        add(factor_metric(key), result.score, _judge_detail(result))
        count(outcome, result.failure, f"{key}: {result.failure}")
    scored = [r.score for r in factors.values() if r.score is not None]
    add(FACTOR_MEAN, statistics.fmean(scored) if scored else None,
        {"scored": len(scored), "of": len(factors)})
    if debate_settings is not None:
        debate = core_debate.run_debate(log, factors, gateway=ctx.gateway,
                                        config=debate_config, settings=debate_settings,
                                        item_names=item_names, meter=ctx.usage.stage("debate"))
        add(DEBATE_SCORE, debate.final_score,
            {"stopped": debate.stopped, "failure": debate.failure, "rounds": len(debate.rounds),
             "role_scores": dict(debate.role_scores)})
        count(outcome, debate.failure, f"debate: {debate.failure}")
        outcome.debate = _debate_rows(ctx.run, unit, cluster, debate)
    persuasion = score_persuasiveness(log, gateway=ctx.gateway, config=ctx.config,
                                      item_names=item_names, max_reasks=ctx.max_reasks,
                                      meter=ctx.usage.stage("persuasiveness"))
    add(PERSUASIVENESS, persuasion.score, _judge_detail(persuasion))
    count(outcome, persuasion.failure, f"persuasiveness: {persuasion.failure}")
    for k, value in session_recall(log, SESSION_RECALL_KS).items():
        add(session_recall_metric(k), value)
    return outcome


def _judge_detail(result: core_factors.FactorResult) -> dict:
    detail = {"rationale": result.rationale, "attempts": result.attempts, "model": result.model}
    if result.failure:
        # What the model last said, so a reader can see why it was unusable.
        detail.update({"failure": result.failure, "answer": result.raw_answer})
    return detail


_ROLE_POSITION = {role.key: position for position, role in enumerate(core_rubrics.DEBATE_ROLES)}


def _debate_rows(run: Run, unit: str, cluster: str, debate: DebateResult) -> list[DebateTurn]:
    return [
        DebateTurn(run=run, unit_id=unit, dialogue_id=cluster, round=turn.round, role=turn.role,
                   position=_ROLE_POSITION.get(turn.role, 99), score=turn.score,
                   # A failed turn keeps the model's last answer (its statement was unusable).
                   statement=turn.answer if turn.failure else turn.statement,
                   failure=turn.failure or "",
                   carried_over=turn.carried_over, attempts=turn.attempts)
        for debate_round in debate.rounds for turn in debate_round.turns
    ]


def _core_routing(ctx: RunContext, item_names, progress: Progress):
    """Per-factor judge configs (mixture of evaluators, CoRE Appendix F) and the report."""
    judges = ctx.run.config.get("judges") or []
    single = {factor: ctx.config for factor in core_rubrics.FACTOR_KEYS}
    if len(judges) < 2:
        return single, {"mode": "single", "model": ctx.config.model,
                        "reason": "one judge model for every factor"}
    slug = ctx.run.config.get("human_study")
    study = human_core_study(benchmark=ctx.run.submission.benchmark, slug=slug) if slug else None
    human = ports.human_core_ratings.factor_scores(study=study) if study is not None else {}
    units = sorted({unit for scores in human.values() for unit in scores})
    if not units:
        reason = (f"study {slug!r} has no CoRE ratings" if slug
                  else "no human study with CoRE ratings on this benchmark")
        return single, {"mode": "default", "model": ctx.config.model,
                        "reason": f"{reason}: {ctx.config.model} judges every factor"}
    logs = ports.human_core_ratings.conversation_logs(study=study, unit_ids=units)
    configs = {entry["model"]: model_config(entry) for entry in judges}
    scores = _judge_study_logs(ctx, configs, logs, item_names, progress)
    by_unit: dict[str, dict[str, int]] = defaultdict(dict)
    for factor, per_unit in human.items():
        for unit, score in per_unit.items():
            by_unit[unit][factor] = score
    table = core_routing.qwk_by_factor(by_unit, scores)
    choices = core_routing.choose_judge_per_factor(table, preference=list(configs),
                                                   default_model=ctx.config.model)
    routed = core_routing.configs_for_choices(choices, configs, fallback=ctx.config)
    return routed, {
        "mode": "qwk", "study": study.slug, "units": len(logs), "qwk": table,
        "choices": {f: {"model": c.model, "qwk": c.qwk, "reason": c.reason,
                        "tied_with": list(c.tied_with)} for f, c in choices.items()},
    }


def _judge_study_logs(ctx: RunContext, configs: dict[str, ModelConfig], logs: dict[str, dict],
                      item_names, progress: Progress) -> dict[str, dict[str, dict[str, int]]]:
    """Every candidate judge's twelve scores on the study's conversations (cached like all)."""
    scores: dict[str, dict[str, dict[str, int]]] = {}
    units = list(logs)
    for done, (model, config) in enumerate(configs.items(), start=1):
        results = ctx.gateway.map(
            lambda unit, config=config: core_factors.score_factors(
                logs[unit], gateway=ctx.gateway, config=config, item_names=item_names,
                max_reasks=ctx.max_reasks, meter=ctx.usage.stage("routing")),
            units)
        scores[model] = {unit: {f: r.score for f, r in result.items()}
                         for unit, result in zip(units, results, strict=True)}
        progress("routing", done, len(configs))
    return scores


# --- FACE ----------------------------------------------------------------------------------


def execute_face(ctx: RunContext, entries: Sequence[tuple], progress: Progress) -> dict:
    """FACE on every log: particles per system turn, Eq. 1 scores per aspect and instruction,
    turn and dialogue means (FACE §2.1–2.2). A server without logprobs fails the run."""
    aspects = list(ctx.run.config.get("aspects") or [])
    sets = ctx.run.config["instructions"]

    def score_log(entry: tuple) -> UnitOutcome:
        return _face_log(ctx, entry[2], aspects, sets)

    try:
        return score_units(ctx, entries, score_log, progress)
    except LogprobsUnavailable as error:
        raise LLMRunFailed(str(error)) from error


def _face_log(ctx: RunContext, log: ConversationLog, aspects: Sequence[str],
              sets: dict) -> UnitOutcome:
    turns = [(turn.role, turn.text) for turn in log.turns]
    cluster = log_cluster(log)
    conversation = face_engine.decompose(ctx.gateway, ctx.config, turns,
                                         max_reasks=ctx.max_reasks,
                                         meter=ctx.usage.stage("particles"))
    outcome = UnitOutcome(log.log_id, cluster, [])
    for failed in conversation.failures:
        outcome.failures.append(f"turn {failed.turn_index}: {failed.failure}")
    particle_scores: dict[tuple[int, int], dict] = defaultdict(dict)
    for aspect in aspects:
        spec, texts = FACE_ASPECTS[aspect], sets[aspect]["texts"]
        result = face_engine.score_conversation(ctx.gateway, ctx.config, conversation, aspect,
                                                texts, max_reasks=ctx.max_reasks,
                                                meter=ctx.usage.stage("scores"))
        for key, scores in result.particles.items():
            values = [s.value for s in scores]
            particle_scores[key][aspect] = {
                "value": statistics.fmean([v for v in values if v is not None])
                if any(v is not None for v in values) else None,
                "per_instruction": [s.to_dict() for s in scores]}
        for turn_index, value in result.units.items():
            keys = [k for k in result.particles if turn_index is None or k[0] == turn_index]
            scores = [s for k in keys for s in result.particles[k]]
            detail = {"particles": len(keys), "instructions": len(texts),
                      "version": sets[aspect].get("version"),
                      "instruction_means": face_engine.instruction_means(
                          {k: result.particles[k] for k in keys}, len(texts)),
                      "flagged": sum(1 for s in scores if s.flagged)}
            uncertainty = face_engine.unit_uncertainty({k: result.particles[k] for k in keys},
                                                       len(texts))
            if value is not None and uncertainty is not None:
                detail["uncertainty"] = uncertainty
            failure = None
            if value is None:
                failure = ("no particles" if not keys else
                           next((s.failure for s in scores if s.failure), "no usable score"))
                detail["failure"] = failure
            if spec.level == FACE_TURN:
                unit_type, unit_id = "turn", f"{cluster}#{turn_index}"
            else:
                unit_type, unit_id = "dialogue", log.log_id
            outcome.values.append(UnitValue(spec.metric, unit_type, unit_id, cluster, value,
                                            detail))
            count(outcome, failure, f"{aspect} {unit_id}: {failure}")
    outcome.face_turns = [
        FaceTurn(run=ctx.run, unit_id=log.log_id, dialogue_id=cluster,
                 turn_index=d.turn_index, failure=d.failure or "", text=turns[d.turn_index][1],
                 reply=_reply(turns, d.turn_index),
                 answer=d.last_answer if d.failure else "", attempts=d.attempts,
                 particles=[{**p.to_dict(), "scores": particle_scores.get((d.turn_index, n), {})}
                            for n, p in enumerate(d.particles)])
        for d in conversation.decompositions]
    return outcome


def _reply(turns: Sequence[tuple[str, str]], index: int) -> str:
    following = turns[index + 1] if index + 1 < len(turns) else None
    return following[1] if following is not None and following[0] == "user" else ""
