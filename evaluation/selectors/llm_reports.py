"""Reads for LLM evaluator runs: the run page's LLM section (tokens and money, and per unit what
the judge said: the generic table of an evaluator's scores with their rationale, or what the
evaluator's own `report` builds: CoRE's factors, debate transcript and agreement-over-rounds
chart, FACE's particles)."""

from collections import defaultdict

from django.core.paginator import Paginator

from evaluation.lib.charts import agreement_chart
from evaluation.lib.llm import core_debate, registry
from evaluation.lib.llm.core_rubrics import DEBATE_ROLES, FACTOR_GUIDELINES
from evaluation.lib.llm.evaluators import (
    DEBATE_SCORE,
    FACTOR_MEAN,
    PERSUASIVENESS,
    SESSION_RECALL_KS,
    factor_metric,
    session_recall_metric,
)
from evaluation.lib.llm.face.aspects import ASPECTS as FACE_ASPECTS
from evaluation.lib.llm.face.aspects import TURN as FACE_TURN
from evaluation.models import Dialogue, Split

UNITS_PER_PAGE = 10

# --- the run page's LLM section -------------------------------------------------------------


def run_llm_report(*, run, include_hidden: bool, page: str | None = None) -> dict:
    """Everything the run page shows about an LLM run: usage, and the evaluator's section
    (`template`), built by its `report` or, without one, the generic table of its scores."""
    spec = registry.get(run.evaluator)
    scores = run.unit_scores.all()
    hidden = Dialogue.objects.filter(benchmark_id=run.submission.benchmark_id,
                                     split=Split.HIDDEN).values("external_id")
    if not include_hidden:
        scores = scores.exclude(dialogue_id__in=hidden)
    build = registry.load(spec.report) if spec.report else aspects_report
    return {"title": spec.title, "evaluator": run.evaluator, "template": spec.template,
            "unit_word": spec.unit_word, "usage": usage_view(run.usage), "routing": None,
            "hidden_left_out": not include_hidden,
            "failed_units": (run.job.result or {}).get("failed_units", 0),
            **build(run, spec, scores, None if include_hidden else hidden, page)}


def _paged_units(spec, scores, page):
    """A page of the units that have the evaluator's first metric, and their scores."""
    primary = spec.metrics[0].name
    unit_ids = list(scores.filter(metric=primary).order_by("unit_id")
                    .values_list("unit_id", flat=True))
    units_page = Paginator(unit_ids, UNITS_PER_PAGE).get_page(page)
    rows = defaultdict(dict)
    for score in scores.filter(unit_id__in=list(units_page.object_list)):
        rows[score.unit_id][score.metric] = score
    return units_page, rows


def aspects_report(run, spec, scores, _hidden, page) -> dict:
    """The generic unit table: per unit its scores (`columns`, else every metric) and the
    judge's rationale or each failure."""
    units_page, rows = _paged_units(spec, scores, page)
    columns = list(spec.columns) or [(m.name, m.name) for m in spec.metrics]
    return {"page": units_page,
            "units": [_aspect_unit(unit, rows[unit], columns) for unit in units_page.object_list]}


def core_report(run, spec, scores, _hidden, page) -> dict:
    """CoRE's section: the judge per factor, per log its factors and debate, and the
    agreement-over-rounds chart."""
    units_page, rows = _paged_units(spec, scores, page)
    debates = _debates(run, units_page.object_list)
    report = {
        "routing": run.job.result.get("routing") if run.job.result else None,
        "page": units_page,
        "units": [_core_unit(unit, rows[unit], debates.get(unit))
                  for unit in units_page.object_list],
    }
    if run.config.get("debate"):
        max_rounds = int(run.config["debate"].get("max_rounds", 4))
        curve = core_debate.agreement_curve(_all_debates(run), max_rounds=max_rounds,
                                            tolerance=float(run.config["debate"].get(
                                                "agreement_tolerance", 0)))
        report["curve"] = curve
        view = core_debate.stored_factor_view(run.config["debate"])
        report["debate_form"] = {"factor_view": view, "text": core_debate.FACTOR_VIEWS[view]}
        report["chart"] = agreement_chart(curve)
    return report


def usage_view(usage: dict) -> dict:
    """Run.usage for people: money is "unknown" (never $0) when any paid call had no price."""
    if not usage:
        return {}
    units = usage.get("units") or 0
    all_tokens = (usage.get("total_tokens", 0) + usage.get("cached_prompt_tokens", 0)
                  + usage.get("cached_completion_tokens", 0))
    return {
        **usage,
        "cost_known": usage.get("cost_usd") is not None,
        "cost_text": money(usage.get("cost_usd")),
        "known_part_text": money(usage.get("cost_known_part_usd")),
        "tokens_per_unit": round(all_tokens / units) if units else None,
        "stages": [{"name": name, **values, "cost_text": money(values.get("cost_usd"))}
                   for name, values in usage.get("stages", {}).items()],
    }


def money(value: float | None) -> str:
    """US dollars with enough decimals that a small cost does not read as $0; None: unknown."""
    if value is None:
        return "unknown"
    return f"${value:.4f}" if value == 0 or value >= 0.01 else f"${value:.6f}"


_FACTOR_NAMES = {g.key: g for g in FACTOR_GUIDELINES}
_ROLE_NAMES = {role.key: role.name for role in DEBATE_ROLES}


def _judged(score) -> dict:
    if score is None:
        return {"score": None, "failure": "not scored", "rationale": ""}
    detail = score.detail or {}
    return {"score": score.value, "rationale": detail.get("rationale", ""),
            "failure": detail.get("failure"), "answer": detail.get("answer", ""),
            "attempts": detail.get("attempts"), "model": detail.get("model", "")}


def _core_unit(unit: str, scores: dict, debate) -> dict:
    factors = [{"key": g.key, "name": g.name, "dimension": g.dimension,
                **_judged(scores.get(factor_metric(g.key)))} for g in FACTOR_GUIDELINES]
    final = scores.get(DEBATE_SCORE)
    mean = scores.get(FACTOR_MEAN)
    return {
        "unit_id": unit,
        "factors": factors,
        "factor_mean": mean.value if mean else None,
        "debate": _debate_view(debate, final),
        "persuasiveness": _judged(scores.get(PERSUASIVENESS)),
        "recall": [(k, getattr(scores.get(session_recall_metric(k)), "value", None))
                   for k in SESSION_RECALL_KS],
    }


def _debate_view(debate, final) -> dict | None:
    if final is None and debate is None:
        return None
    detail = final.detail if final else {}
    rounds = []
    for debate_round in (debate.rounds if debate else ()):
        rounds.append({"round": debate_round.round, "spread": debate_round.spread,
                       "agreed": debate_round.agreed,
                       "turns": [{"role": _ROLE_NAMES.get(t.role, t.role), "score": t.score,
                                  "statement": t.statement, "failure": t.failure,
                                  "carried_over": t.carried_over} for t in debate_round.turns]})
    return {"final": final.value if final else None, "stopped": detail.get("stopped", ""),
            "failure": detail.get("failure"), "rounds": rounds}


def _aspect_unit(unit: str, scores: dict, metrics: list[tuple[str, str]]) -> dict:
    judged = [(label, _judged(scores.get(metric))) for metric, label in metrics]
    rationale = next((j["rationale"] for _, j in judged if j["rationale"]), "")
    return {"unit_id": unit, "rationale": rationale,
            "scores": [{"name": label, **j} for label, j in judged]}


_DEBATE_FIELDS = ("unit_id", "round", "role", "score", "statement", "failure", "carried_over",
                  "attempts")


def _debates(run, unit_ids) -> dict[str, core_debate.DebateResult]:
    rows = defaultdict(list)
    for row in run.debate_turns.filter(unit_id__in=list(unit_ids)).values(*_DEBATE_FIELDS):
        rows[row["unit_id"]].append(row)
    tolerance = float((run.config.get("debate") or {}).get("agreement_tolerance", 0))
    return {unit: core_debate.DebateResult.from_records(records, tolerance=tolerance)
            for unit, records in rows.items()}


def _all_debates(run) -> list[core_debate.DebateResult]:
    """Every debate of the run (failed ones flagged, so the curve leaves them out)."""
    failures = {unit: (detail or {}).get("failure")
                for unit, detail in run.unit_scores.filter(metric=DEBATE_SCORE)
                .values_list("unit_id", "detail")}
    rows = defaultdict(list)
    for row in run.debate_turns.values("unit_id", "round", "role", "score"):
        rows[row["unit_id"]].append(row)
    return [core_debate.DebateResult.from_records(records, failure=failures.get(unit))
            for unit, records in rows.items()]


# --- FACE: particles per turn ------------------------------------------------------------------


def face_report(run, spec, scores, hidden, page) -> dict:
    """The FACE run's logs, page by page: per system turn its text, the user's reply, its
    particles with their score per aspect (and the probability outside the grades), the turn's
    aspect scores, or why it could not be decomposed; the log's dialogue-level scores."""
    turns = run.face_turns.all()
    if hidden is not None:
        turns = turns.exclude(dialogue_id__in=hidden)
    log_ids = list(turns.order_by("unit_id").values_list("unit_id", flat=True).distinct())
    units_page = Paginator(log_ids, UNITS_PER_PAGE).get_page(page)
    on_page = list(units_page.object_list)
    by_unit = defaultdict(dict)
    for score in scores.filter(dialogue_id__in=turns.filter(unit_id__in=on_page)
                               .values("dialogue_id")):
        by_unit[score.unit_id][score.metric] = score
    aspects = [FACE_ASPECTS[a] for a in run.config.get("aspects", []) if a in FACE_ASPECTS]
    logs = defaultdict(list)
    for turn in turns.filter(unit_id__in=on_page).order_by("unit_id", "turn_index"):
        turn_scores = by_unit.get(f"{turn.dialogue_id}#{turn.turn_index}", {})
        logs[turn.unit_id].append({
            "index": turn.turn_index, "text": turn.text, "reply": turn.reply,
            "failure": turn.failure, "answer": turn.answer, "attempts": turn.attempts,
            "scores": [_face_score(a, turn_scores.get(a.metric)) for a in aspects
                       if a.level == FACE_TURN],
            "particles": [{**p, "aspects": [
                {"name": a.key.replace("_", " "), **_particle_score(p, a.key)}
                for a in aspects if a.key in p.get("scores", {})]} for p in turn.particles],
            "dialogue_id": turn.dialogue_id})
    units = [{"unit_id": unit, "turns": logs[unit],
              "failed_turns": sum(1 for t in logs[unit] if t["failure"]),
              "dialogue_scores": [_face_score(a, by_unit.get(unit, {}).get(a.metric))
                                  for a in aspects if a.level != FACE_TURN]}
             for unit in on_page]
    versions = {a: (entry or {}).get("version") for a, entry in
                (run.config.get("instructions") or {}).items()}
    return {"page": units_page, "units": units,
            "face": {"versions": versions, "trained_on": len(run.config.get("train_dialogues")
                                                             or [])}}


def _face_score(aspect, score) -> dict:
    detail = (score.detail or {}) if score is not None else {}
    return {"name": aspect.key.replace("_", " "), "low": aspect.low, "high": aspect.high,
            "value": score.value if score is not None else None,
            "failure": detail.get("failure") if score is not None else "not scored",
            "particles": detail.get("particles"), "flagged": detail.get("flagged", 0)}


def _particle_score(particle: dict, aspect: str) -> dict:
    entry = particle["scores"][aspect]
    per_instruction = entry.get("per_instruction", [])
    outside = [s["mass_outside"] for s in per_instruction if s.get("mass_outside") is not None]
    return {"value": entry.get("value"), "mass_outside": max(outside) if outside else None,
            "flagged": any(s.get("flagged") for s in per_instruction),
            "failure": next((s["failure"] for s in per_instruction if s.get("failure")), None)}
