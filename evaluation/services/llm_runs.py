"""LLM evaluator runs: CoRE (metrics spec §B), the Trace LLM judge (§A), the PEPPER judge (§D)
and FACE (FACE §2: particles, Eq. 1 scores, optimized instructions).

Thin Django glue around the pure LLM layer (`evaluation/lib/llm/`): it builds the model
configuration from the operator's model profiles and the run's options, gives the gateway the
database-backed response cache (so a re-run makes no LLM call), reads the stored submission,
stores every unit's result with the judge's rationale (`UnitScore.detail`) and every debate
round (`DebateTurn`), the run's token and cost accounting (`Run.usage`, cost null when unknown)
and the system-level summaries with studentized cluster CIs. `run_process` (services) calls
`llm_run_execute` for runs whose evaluator is not the Trace suite.
"""

import logging
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluation import ports
from evaluation.lib.formats.submission import TURN, iter_log_records, iter_turn_records
from evaluation.lib.llm import core_debate, core_factors, core_routing, core_rubrics
from evaluation.lib.llm import estimate as run_estimate
from evaluation.lib.llm.adapters import judged_turns, log_cluster
from evaluation.lib.llm.conversation import ConversationLog
from evaluation.lib.llm.core_debate import DebateResult, DebateSettings
from evaluation.lib.llm.core_recall_persuasiveness import score_persuasiveness, session_recall
from evaluation.lib.llm.estimate import RunEstimate
from evaluation.lib.llm.evaluators import (
    CORE,
    DEBATE_SCORE,
    EVALUATORS,
    FACE,
    FACTOR_MEAN,
    PEPPER_JUDGE,
    PERSUASIVENESS,
    SESSION_RECALL_KS,
    TRACE_JUDGE,
    criterion_metric,
    factor_metric,
    llm_config_hash,
    pepper_metric,
    session_recall_metric,
)
from evaluation.lib.llm.face import engine as face_engine
from evaluation.lib.llm.face.aspects import ASPECTS as FACE_ASPECTS
from evaluation.lib.llm.face.aspects import TURN as FACE_TURN
from evaluation.lib.llm.face.aspects import parse_aspects
from evaluation.lib.llm.face.prompts import initial_instruction
from evaluation.lib.llm.face.scoring import LogprobsUnavailable
from evaluation.lib.llm.gateway import (
    LLMGateway,
    ModelConfig,
    token_cost,
)
from evaluation.lib.llm.judging import AspectScore
from evaluation.lib.llm.pepper_judge import judge_pepper_log
from evaluation.lib.llm.trace_judge import judge_trace_turn
from evaluation.lib.progress import Progress, no_progress
from evaluation.models import DebateTurn, FaceTurn, Job, LLMSpend, Run, Submission, UnitScore
from evaluation.selectors.benchmarks import benchmark_bundle, scored_splits
from evaluation.services import spending as spending_rules
from evaluation.services.jobs import ExpectedFailure, job_create
from evaluation.services.llm_models import (
    RunUsage,
    llm_gateway,
    model_config,
    run_evaluation_grade,
)
from evaluation.services.results import summaries_upsert

logger = logging.getLogger(__name__)

UNITS_PER_CHUNK = 10


class LLMRunFailed(ExpectedFailure):
    """Not one usable answer: the model is unreachable, refused every call or never parsed."""


# --- creating a run ------------------------------------------------------------------------

DEBATE_DEFAULTS = {"max_rounds": 4, "agreement_tolerance": 0.0, "buffer": "all_rounds",
                   "factor_view": "own_factors"}


def llm_run_config(*, evaluator: str, model: dict, debate_model: dict | None = None,
                   judges: Sequence[dict] = (), human_study: str | None = None,
                   debate: dict | None = None, use_debate: bool = True,
                   max_reasks: int = 2, splits: Sequence[str] = (), domain: str = "",
                   face: dict | None = None, limit: int | None = None,
                   dialogues: Sequence[str] = (), stop_after: int | None = None) -> dict:
    """The plain-JSON configuration of an LLM run; `llm_config_hash` identifies it.

    LIMIT and DIALOGUES restrict a run to its first LIMIT units and/or the units of the named
    dialogues (a cheap trial); STOP_AFTER overrides CONCORD_LLM_STOP_AFTER_FAILED_UNITS.
    """
    config = {"evaluator": evaluator, "model": dict(model), "max_reasks": max_reasks,
              "splits": sorted(splits)}
    if limit is not None:
        if limit < 1:
            raise ValueError("--limit must be at least 1")
        config["limit"] = int(limit)
    if dialogues:
        config["dialogues"] = sorted(set(dialogues))
    if stop_after is not None:
        if stop_after < 0:
            raise ValueError("--stop-after must be 0 (never) or more")
        config["stop_after"] = int(stop_after)
    if evaluator == CORE:
        candidates = _unique_models([model, *judges])
        config.update({
            "debate_model": dict(debate_model or model),
            "debate": ({**DEBATE_DEFAULTS, **(debate or {}), "domain": domain or "items"}
                       if use_debate else None),
            "judges": candidates if len(candidates) > 1 else [],
            "human_study": human_study if len(candidates) > 1 else None,
        })
    if evaluator == PEPPER_JUDGE:
        config["domain"] = domain or "items"
    if evaluator == FACE:
        config.update(face_config(**(face or {})))
    return config


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


def _unique_models(entries: Iterable[dict]) -> list[dict]:
    seen: dict[str, dict] = {}
    for entry in entries:
        seen.setdefault(entry["model"], dict(entry))
    return list(seen.values())


def llm_run_create(*, submission, evaluator: str, model: dict, user=None,
                   debate_model: dict | None = None, judges: Sequence[dict] = (),
                   human_study: str | None = None, debate: dict | None = None,
                   use_debate: bool = True, max_reasks: int = 2,
                   splits: Sequence[str] | None = None, enqueue: bool = True,
                   face: dict | None = None, limit: int | None = None,
                   dialogues: Sequence[str] = (), stop_after: int | None = None,
                   spending: str = spending_rules.CHECK) -> Run:
    """A queued run of LLM EVALUATOR on SUBMISSION; its task is sent when the transaction
    commits (`enqueue`), otherwise the caller runs `run_process` itself.

    For CoRE with more than one judge model, the factors are routed by QWK against the human
    CoRE ratings of HUMAN_STUDY (default: the newest study on the benchmark with the CoRE form).

    The run's estimate is reserved on USER's LLM budget in the transaction that creates it
    (`evaluation.services.spending`; SPENDING: CHECK, RECORD without a check, EXEMPT for the
    automatic runs, which have budgets of their own): BudgetExceeded stores nothing. The same
    configuration already queued or running on SUBMISSION raises DuplicateRun naming it.
    """
    spec = EVALUATORS.get(evaluator)
    if spec is None:
        raise ValueError(f"unknown LLM evaluator {evaluator!r} (choose from "
                         f"{', '.join(EVALUATORS)})")
    if submission.protocol != spec.protocol:
        raise ValueError(f"{evaluator} reads protocol `{spec.protocol}` submissions; this one is "
                         f"`{submission.protocol}`")
    benchmark = submission.benchmark
    if spec.protocol == TURN:
        # by default what the submitter's Trace run is scored on: no hidden split before the
        # release (a judge's averages over hidden turns would answer questions about them)
        splits = sorted(splits) if splits else scored_splits(submission=submission)
    if evaluator == CORE and len(_unique_models([model, *judges])) > 1 and not human_study:
        study = _core_human_study(benchmark=benchmark)
        human_study = study.slug if study is not None else None
    config = llm_run_config(evaluator=evaluator, model=model, debate_model=debate_model,
                            judges=judges, human_study=human_study, debate=debate,
                            use_debate=use_debate, max_reasks=max_reasks, splits=splits or (),
                            domain=benchmark.domain, face=face, limit=limit,
                            dialogues=dialogues, stop_after=stop_after)
    estimate = None if spending == spending_rules.EXEMPT else llm_run_estimate(
        submission=submission, evaluator=evaluator, model=model, face=face, limit=limit,
        dialogues=dialogues, use_debate=use_debate, splits=splits,
        max_rounds=(debate or {}).get("max_rounds", DEBATE_DEFAULTS["max_rounds"]))
    with transaction.atomic():
        twin = _active_twin(submission, evaluator, llm_config_hash(config))
        if twin is not None:
            raise DuplicateRun(twin)
        job = job_create(kind=Job.Kind.EVALUATION, user=user,
                         params={"submission": submission.pk, "evaluator": evaluator},
                         task="evaluation.tasks.evaluate_llm_run_job" if enqueue else None)
        if estimate is not None:
            spending_rules.spending_reserve(
                user=user, kind=LLMSpend.Kind.RUN, estimate=estimate, model=model["model"],
                job=job, description=f"{evaluator} on submission {submission.pk}",
                enforce=spending == spending_rules.CHECK)
        return Run.objects.create(submission=submission, evaluator=evaluator,
                                  evaluator_version=spec.version, config=config,
                                  config_hash=llm_config_hash(config), job=job,
                                  **run_evaluation_grade([model, debate_model, *judges]))


class DuplicateRun(ValueError):
    """The same evaluator with the same configuration is already queued or running on the
    submission: RUN is that run."""

    def __init__(self, run: Run):
        super().__init__(f"An identical {run.evaluator} run of this submission is already "
                         f"{run.job.status} (run {run.pk}, job {run.job_id}: /jobs/{run.job_id}/); "
                         "it was not started twice.")
        self.run = run


def _active_twin(submission, evaluator: str, config_hash: str) -> Run | None:
    """A queued or live running run of the same configuration on SUBMISSION, read under the
    submission's row lock (held until the caller commits), so identical concurrent starts
    make one run. A running job whose worker died (stale heartbeat) does not count."""
    Submission.objects.select_for_update().filter(pk=submission.pk).exists()
    alive = Q(job__heartbeat_at__isnull=True) | Q(
        job__heartbeat_at__gte=timezone.now() - Job.stale_after())
    return (Run.objects.filter(submission=submission, evaluator=evaluator,
                               config_hash=config_hash)
            .filter(Q(job__status=Job.Status.QUEUED) | (Q(job__status=Job.Status.RUNNING) & alive))
            .select_related("job").order_by("pk").first())


def llm_run_estimate(*, submission, evaluator: str, model: dict,
                     face: dict | None = None, limit: int | None = None,
                     dialogues: Sequence[str] = (), use_debate: bool = True,
                     max_rounds: int = DEBATE_DEFAULTS["max_rounds"],
                     splits: Sequence[str] | None = None) -> RunEstimate:
    """Tokens and cost of running EVALUATOR on SUBMISSION, estimated from the real prompts of
    the units it would judge (`evaluation.lib.llm.estimate`; SPLITS as for `llm_run_create`).
    Reads only; a bad choice raises ValueError (or LLMRunFailed for dialogues the submission
    lacks)."""
    spec = EVALUATORS.get(evaluator)
    if spec is None:
        raise ValueError(f"unknown LLM evaluator {evaluator!r}")
    if submission.protocol != spec.protocol:
        raise ValueError(f"{evaluator} reads protocol `{spec.protocol}` submissions; this one is "
                         f"`{submission.protocol}`")
    config = llm_run_config(evaluator=evaluator, model=model, limit=limit, dialogues=dialogues,
                            face=face, domain=submission.benchmark.domain)

    def price(prompt_tokens: int, answer_tokens: int) -> float | None:
        return token_cost(model["model"], prompt_tokens, answer_tokens)

    if evaluator == TRACE_JUDGE:
        judged, _missing = _judged_turns(
            submission, sorted(splits) if splits else scored_splits(submission=submission))
        turns = [turn for _unit, _cluster, turn in _selected(config, judged)]
        return run_estimate.estimate_trace_judge(turns, price)
    logs = _selected(config, _read_logs(submission))
    if evaluator == PEPPER_JUDGE:
        return run_estimate.estimate_pepper_judge(logs, price, domain=config["domain"])
    if evaluator == FACE:
        return run_estimate.estimate_face(logs, price, instructions={
            aspect: chosen["texts"] for aspect, chosen in config["instructions"].items()})
    item_names = dict(submission.benchmark.items.values_list("external_id", "name"))
    debate = (DebateSettings(**{**DEBATE_DEFAULTS, "max_rounds": max_rounds,
                                "domain": submission.benchmark.domain or "items"})
              if use_debate else None)
    return run_estimate.estimate_core(logs, price, item_names=item_names, debate=debate)


# --- executing a run -----------------------------------------------------------------------


@dataclass
class UnitValue:
    """One metric value of one unit, with what the judge said about it."""

    metric: str
    unit_type: str
    unit_id: str
    dialogue_id: str
    value: float | None
    detail: dict = field(default_factory=dict)


@dataclass
class UnitOutcome:
    unit_id: str
    dialogue_id: str
    values: list[UnitValue]
    debate: list[DebateTurn] = field(default_factory=list)
    usable: int = 0  # usable LLM scores
    failures: list[str] = field(default_factory=list)
    face_turns: list[FaceTurn] = field(default_factory=list)


def llm_run_execute(*, run: Run, progress: Progress = no_progress) -> dict:
    """Score the run's submission with its LLM evaluator; results are upserted per unit, so
    executing a run twice leaves the rows of executing it once (and, cached, costs nothing)."""
    executor = {CORE: _execute_core, TRACE_JUDGE: _execute_trace_judge,
                PEPPER_JUDGE: _execute_pepper_judge, FACE: _execute_face}.get(run.evaluator)
    if executor is None:
        raise ValueError(f"unknown LLM evaluator {run.evaluator!r}")
    for options in _models_of(run.config):
        model_config(options).resolved_api_key()  # a missing key fails the run before any call
    return executor(run, progress)


def _models_of(config: dict) -> list[dict]:
    return [config["model"], *([config["debate_model"]] if config.get("debate_model") else []),
            *config.get("judges", [])]


@dataclass
class _Context:
    run: Run
    gateway: LLMGateway
    usage: RunUsage
    config: ModelConfig
    max_reasks: int


def _context(run: Run) -> _Context:
    return _Context(run=run, gateway=llm_gateway(), usage=RunUsage(),
                    config=model_config(run.config["model"]),
                    max_reasks=int(run.config.get("max_reasks", 2)))


def _unit_cluster(unit) -> str:
    """The dialogue of a unit: a log's, or a judged turn's (unit id, cluster, turn)."""
    return unit[1] if isinstance(unit, tuple) else log_cluster(unit)


def _selected(config: dict, units: Sequence) -> list:
    """The units a trial run scores: those of `dialogues`, then the first `limit`."""
    chosen = list(units)
    if config.get("dialogues"):
        wanted = set(config["dialogues"])
        chosen = [unit for unit in chosen if _unit_cluster(unit) in wanted]
        if not chosen:
            raise LLMRunFailed(f"none of the dialogues {', '.join(sorted(wanted))} is in the "
                               "submission")
    if config.get("limit"):
        chosen = chosen[:int(config["limit"])]
    return chosen


def _score_units(ctx: _Context, units: Sequence, score_unit: Callable[[object], UnitOutcome],
                 progress: Progress) -> dict:
    """Score units chunk by chunk (concurrently within a chunk, progress per finished unit),
    storing each chunk. When the first `stop_after` units all fail, the run stops there."""
    run, spec = ctx.run, EVALUATORS[ctx.run.evaluator]
    units = _selected(run.config, units)
    stop_after = int(run.config.get("stop_after", settings.LLM_STOP_AFTER_FAILED_UNITS))
    collected: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    failures: dict[str, str] = {}
    usable = 0
    done = 0
    progress("score", 0, len(units))
    # The first chunk is the first `stop_after` units, so a hopeless run stops after them.
    bounds = [0, *range(min(stop_after, UNITS_PER_CHUNK) or UNITS_PER_CHUNK, len(units),
                        UNITS_PER_CHUNK), len(units)]
    for first, (start, end) in enumerate(zip(bounds, bounds[1:], strict=False)):
        if start >= end:
            continue
        chunk = list(units[start:end])
        outcomes: list[UnitOutcome | None] = [None] * len(chunk)
        with ThreadPoolExecutor(max_workers=min(ctx.gateway.max_concurrency,
                                                len(chunk))) as pool:
            futures = {pool.submit(score_unit, unit): n for n, unit in enumerate(chunk)}
            for future in as_completed(futures):
                outcomes[futures[future]] = future.result()
                done += 1
                progress("score", done, len(units))
        _store(run, outcomes)
        for outcome in outcomes:
            usable += outcome.usable
            for reason in outcome.failures:
                failures.setdefault(outcome.unit_id, reason)
            for value in outcome.values:
                if value.value is not None:
                    collected[value.metric][0].append(value.value)
                    collected[value.metric][1].append(value.dialogue_id)
        _save_usage(ctx, units=len(units))
        if first == 0 and stop_after and len(units) > end and not usable and \
                len(failures) >= len(chunk):
            raise LLMRunFailed(
                f"stopped early: the first {len(chunk)} units all failed, so the other "
                f"{len(units) - end} were not tried (first failure: "
                f"{next(iter(failures.values()))}); --stop-after 0 scores every unit anyway")
    unavailable = _unavailable(run.evaluator, collected)
    summaries_upsert(run, spec.metrics, collected, unavailable, progress)
    Run.objects.filter(pk=run.pk).update(unavailable=unavailable)
    if units and not usable:
        first_failure = next(iter(failures.values()), "no answer")
        raise LLMRunFailed(f"no usable LLM answer on any of the {len(units)} units (first "
                           f"failure: {first_failure})")
    return {"units": len(units), "failed_units": len(failures),
            "failures": dict(list(failures.items())[:20]), "usage": run.usage}


def _unavailable(evaluator: str, collected) -> dict[str, str]:
    if evaluator != CORE:
        return {}
    return {session_recall_metric(k): "no log has ground-truth items"
            for k in SESSION_RECALL_KS if session_recall_metric(k) not in collected}


def _save_usage(ctx: _Context, *, units: int) -> None:
    ctx.run.usage = ctx.usage.summary(model=ctx.config.model, units=units)
    Run.objects.filter(pk=ctx.run.pk).update(usage=ctx.run.usage)


@transaction.atomic
def _store(run: Run, outcomes: Sequence[UnitOutcome]) -> None:
    values = [v for outcome in outcomes for v in outcome.values]
    UnitScore.objects.bulk_create(
        [UnitScore(run=run, metric=v.metric, unit_type=v.unit_type, unit_id=v.unit_id,
                   dialogue_id=v.dialogue_id, value=v.value, detail=v.detail) for v in values],
        batch_size=2000, update_conflicts=True,
        unique_fields=["run", "metric", "unit_type", "unit_id"],
        update_fields=["value", "dialogue_id", "detail"],
    )
    debated = [o.unit_id for o in outcomes if o.debate]
    if debated:
        # A re-executed debate replaces the stored one entirely (it cannot have more rounds).
        DebateTurn.objects.filter(run=run, unit_id__in=debated).delete()
        DebateTurn.objects.bulk_create([turn for o in outcomes for turn in o.debate])
    decomposed = [o.unit_id for o in outcomes if o.face_turns]
    if decomposed:
        FaceTurn.objects.filter(run=run, unit_id__in=decomposed).delete()
        FaceTurn.objects.bulk_create([turn for o in outcomes for turn in o.face_turns])


def _read_logs(submission) -> list[ConversationLog]:
    with submission.file.open("rb") as handle:
        return [ConversationLog.from_dict(record)
                for record in iter_log_records(handle, max_bytes=settings.MAX_UPLOAD_BYTES)]


# --- CoRE ----------------------------------------------------------------------------------


def _execute_core(run: Run, progress: Progress) -> dict:
    ctx = _context(run)
    benchmark = run.submission.benchmark
    progress("load", 0, 1)
    item_names = dict(benchmark.items.values_list("external_id", "name"))
    logs = _read_logs(run.submission)
    progress("load", 1, 1)
    factor_configs, routing = _core_routing(ctx, item_names, progress)
    debate = run.config.get("debate")
    debate_settings = (DebateSettings(**{**debate,
                                         "factor_view": core_debate.stored_factor_view(debate)},
                                      max_reasks=ctx.max_reasks)
                       if debate else None)
    debate_config = model_config(run.config["debate_model"])

    def score_log(log: ConversationLog) -> UnitOutcome:
        return _core_log(ctx, log, factor_configs=factor_configs, debate_config=debate_config,
                         debate_settings=debate_settings, item_names=item_names)

    result = _score_units(ctx, logs, score_log, progress)
    return {**result, "routing": routing}


def _core_log(ctx: _Context, log: ConversationLog, *, factor_configs, debate_config,
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
        _count(outcome, result.failure, f"{key}: {result.failure}")
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
        _count(outcome, debate.failure, f"debate: {debate.failure}")
        outcome.debate = _debate_rows(ctx.run, unit, cluster, debate)
    persuasion = score_persuasiveness(log, gateway=ctx.gateway, config=ctx.config,
                                      item_names=item_names, max_reasks=ctx.max_reasks,
                                      meter=ctx.usage.stage("persuasiveness"))
    add(PERSUASIVENESS, persuasion.score, _judge_detail(persuasion))
    _count(outcome, persuasion.failure, f"persuasiveness: {persuasion.failure}")
    for k, value in session_recall(log, SESSION_RECALL_KS).items():
        add(session_recall_metric(k), value)
    return outcome


def _count(outcome: UnitOutcome, failure: str | None, message: str) -> None:
    if failure:
        outcome.failures.append(message)
    else:
        outcome.usable += 1


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


def _core_human_study(*, benchmark, slug: str | None = None):
    """The human study that routes CoRE's judges (`evaluation.ports`); None without one."""
    source = ports.human_core_ratings
    return source.find_study(benchmark=benchmark, slug=slug) if source is not None else None


def _core_routing(ctx: _Context, item_names, progress: Progress):
    """Per-factor judge configs (mixture of evaluators, CoRE Appendix F) and the report."""
    judges = ctx.run.config.get("judges") or []
    single = {factor: ctx.config for factor in core_rubrics.FACTOR_KEYS}
    if len(judges) < 2:
        return single, {"mode": "single", "model": ctx.config.model,
                        "reason": "one judge model for every factor"}
    slug = ctx.run.config.get("human_study")
    study = _core_human_study(benchmark=ctx.run.submission.benchmark, slug=slug) if slug else None
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


def _judge_study_logs(ctx: _Context, configs: dict[str, ModelConfig], logs: dict[str, dict],
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


# --- Trace LLM judge and PEPPER ------------------------------------------------------------


def _execute_trace_judge(run: Run, progress: Progress) -> dict:
    ctx = _context(run)
    progress("load", 0, 1)
    judged, missing = _judged_turns(run.submission, run.config.get("splits"))
    progress("load", 1, 1)

    def score_turn(entry) -> UnitOutcome:
        unit, cluster, turn = entry
        scores = judge_trace_turn(turn, gateway=ctx.gateway, config=ctx.config,
                                  max_reasks=ctx.max_reasks, meter=ctx.usage.stage("judge"))
        return _aspect_outcome(unit, cluster, "turn", scores, criterion_metric)

    result = _score_units(ctx, judged, score_turn, progress)
    return {**result, "unanswered_turns": len(missing)}


def _judged_turns(submission, splits):
    """The (unit, dialogue, JudgedTurn) entries the Trace judge scores, and the unanswered."""
    bundle = benchmark_bundle(benchmark=submission.benchmark)
    with submission.file.open("rb") as handle:
        submitted = {(r["dialogue_id"], int(r["turn_index"])): r
                     for r in iter_turn_records(handle, max_bytes=settings.MAX_UPLOAD_BYTES)}
    return judged_turns(
        bundle.dialogues, submitted, reviews={r["id"]: r for r in bundle.reviews},
        item_names={i["id"]: i.get("name", i["id"]) for i in bundle.items}, splits=splits)


def _execute_pepper_judge(run: Run, progress: Progress) -> dict:
    ctx = _context(run)
    progress("load", 0, 1)
    logs = _read_logs(run.submission)
    progress("load", 1, 1)
    domain = run.config.get("domain") or "items"

    def score_log(log: ConversationLog) -> UnitOutcome:
        scores = judge_pepper_log(log, gateway=ctx.gateway, config=ctx.config, domain=domain,
                                  max_reasks=ctx.max_reasks, meter=ctx.usage.stage("judge"))
        return _aspect_outcome(log.log_id, log_cluster(log), "dialogue", scores, pepper_metric)

    return _score_units(ctx, logs, score_log, progress)


def _aspect_outcome(unit: str, cluster: str, unit_type: str, scores: dict[str, AspectScore],
                    metric_name: Callable[[str], str]) -> UnitOutcome:
    outcome = UnitOutcome(unit, cluster, [])
    for aspect, score in scores.items():
        detail = {"rationale": score.rationale, "attempts": score.attempts}
        if score.failure:
            detail["failure"] = score.failure
        outcome.values.append(UnitValue(metric_name(aspect), unit_type, unit, cluster,
                                        score.score, detail))
        _count(outcome, score.failure, f"{aspect}: {score.failure}")
    return outcome


# --- FACE ----------------------------------------------------------------------------------


def _execute_face(run: Run, progress: Progress) -> dict:
    """FACE on every log: particles per system turn, Eq. 1 scores per aspect and instruction,
    turn and dialogue means (FACE §2.1–2.2). A server without logprobs fails the run."""
    ctx = _context(run)
    progress("load", 0, 1)
    logs = _read_logs(run.submission)
    progress("load", 1, 1)
    aspects = list(run.config.get("aspects") or [])
    sets = run.config["instructions"]

    def score_log(log: ConversationLog) -> UnitOutcome:
        return _face_log(ctx, log, aspects, sets)

    try:
        return _score_units(ctx, logs, score_log, progress)
    except LogprobsUnavailable as error:
        raise LLMRunFailed(str(error)) from error


def _face_log(ctx: _Context, log: ConversationLog, aspects: Sequence[str],
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
            _count(outcome, failure, f"{aspect} {unit_id}: {failure}")
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
