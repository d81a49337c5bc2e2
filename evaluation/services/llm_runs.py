"""LLM evaluator runs: any evaluator of the registry (`evaluation.lib.llm.registry`): the
Trace LLM judge (§A), the PEPPER judge (§D), CoRE (§B) and FACE (FACE §2) are built in.

Thin Django glue around the pure LLM layer (`evaluation/lib/llm/`): it builds the model
configuration from the operator's model profiles and the run's options, gives the gateway the
database-backed response cache (so a re-run makes no LLM call), reads the stored submission,
stores every unit's result with the judge's rationale (`UnitScore.detail`) and every debate
round (`DebateTurn`), the run's token and cost accounting (`Run.usage`, cost null when unknown)
and the system-level summaries with studentized cluster CIs. `run_process` (services) calls
`llm_run_execute` for runs whose evaluator is registered. An evaluator that scores each unit
with one prompt runs here (its `score`); one with a `runner` (CoRE, FACE:
`evaluation.services.llm_runs_builtin`) gets the units read here and stores through here.
"""

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from evaluation import ports
from evaluation.lib.formats.submission import TURN, iter_log_records, iter_turn_records
from evaluation.lib.llm import registry
from evaluation.lib.llm.adapters import judged_turns, log_cluster
from evaluation.lib.llm.conversation import ConversationLog
from evaluation.lib.llm.estimate import RunEstimate
from evaluation.lib.llm.evaluators import DEBATE_DEFAULTS, llm_config_hash, unique_models
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, token_cost
from evaluation.lib.llm.judging import AspectScore
from evaluation.lib.llm.registry import EstimateInputs, LLMEvaluator, ScoreContext
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

def llm_run_config(*, evaluator: str, model: dict, debate_model: dict | None = None,
                   judges: Sequence[dict] = (), human_study: str | None = None,
                   debate: dict | None = None, use_debate: bool = True,
                   max_reasks: int = 2, splits: Sequence[str] = (), domain: str = "",
                   face: dict | None = None, limit: int | None = None,
                   dialogues: Sequence[str] = (), stop_after: int | None = None) -> dict:
    """The plain-JSON configuration of an LLM run; `llm_config_hash` identifies it. The
    evaluator adds its own keys (`LLMEvaluator.configure`) from the other options.

    LIMIT and DIALOGUES restrict a run to its first LIMIT units and/or the units of the named
    dialogues (a cheap trial); STOP_AFTER overrides CONCORD_LLM_STOP_AFTER_FAILED_UNITS.
    """
    spec = registry.get(evaluator)
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
    options = {"model": model, "debate_model": debate_model, "judges": judges,
               "human_study": human_study, "debate": debate, "use_debate": use_debate,
               "domain": domain, "face": face}
    config.update(spec.configure(config, options))
    return config


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

    For an evaluator that routes judges (CoRE) with more than one judge model, the factors are
    routed by QWK against the human CoRE ratings of HUMAN_STUDY (default: the newest study on
    the benchmark with the CoRE form).

    The run's estimate is reserved on USER's LLM budget in the transaction that creates it
    (`evaluation.services.spending`; SPENDING: CHECK, RECORD without a check, EXEMPT for the
    automatic runs, which have budgets of their own): BudgetExceeded stores nothing. The same
    configuration already queued or running on SUBMISSION raises DuplicateRun naming it.
    """
    spec = _spec_for(evaluator, submission)
    benchmark = submission.benchmark
    if spec.protocol == TURN:
        # by default what the submitter's Trace run is scored on: no hidden split before the
        # release (a judge's averages over hidden turns would answer questions about them)
        splits = sorted(splits) if splits else scored_splits(submission=submission)
    if spec.judge_routing and len(unique_models([model, *judges])) > 1 and not human_study:
        study = human_core_study(benchmark=benchmark)
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
    spec = _spec_for(evaluator, submission)
    benchmark = submission.benchmark
    config = llm_run_config(evaluator=evaluator, model=model, limit=limit, dialogues=dialogues,
                            face=face, domain=benchmark.domain)

    def price(prompt_tokens: int, answer_tokens: int) -> float | None:
        return token_cost(model["model"], prompt_tokens, answer_tokens)

    if spec.protocol == TURN:
        splits = sorted(splits) if splits else scored_splits(submission=submission)
    entries, _extra = _read_units(submission, spec, splits)
    inputs = EstimateInputs(
        config=config, use_debate=use_debate, max_rounds=max_rounds,
        item_names=dict(benchmark.items.values_list("external_id", "name")))
    return spec.estimate([payload for _unit, _cluster, payload in _selected(config, entries)],
                         price, inputs)


def _spec_for(evaluator: str, submission) -> LLMEvaluator:
    """The registered EVALUATOR, if it reads SUBMISSION's protocol (else ValueError)."""
    spec = registry.get(evaluator)
    if submission.protocol != spec.protocol:
        raise ValueError(f"{evaluator} reads protocol `{spec.protocol}` submissions; this one is "
                         f"`{submission.protocol}`")
    return spec


def _read_units(submission, spec: LLMEvaluator, splits) -> tuple[list[tuple], dict]:
    """The units SPEC scores on SUBMISSION as (unit id, dialogue id, payload): the judged
    turns (a `JudgedTurn`: context, response, cited reviews) of a `turn` submission, the
    `ConversationLog`s of a `log` one; and what the run's result says about them."""
    if spec.protocol == TURN:
        judged, missing = _judged_turns(submission, splits)
        return list(judged), {"unanswered_turns": len(missing)}
    return [(log.log_id, log_cluster(log), log) for log in _read_logs(submission)], {}


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
    spec = registry.get(run.evaluator)
    for options in _models_of(run.config):
        model_config(options).resolved_api_key()  # a missing key fails the run before any call
    ctx = _context(run)
    progress("load", 0, 1)
    entries, extra = _read_units(run.submission, spec, run.config.get("splits"))
    progress("load", 1, 1)
    if spec.runner:
        return {**registry.load(spec.runner)(ctx, entries, progress), **extra}

    def score_unit(entry) -> UnitOutcome:
        unit, cluster, payload = entry
        scores = spec.score(payload, ScoreContext(
            gateway=ctx.gateway, config=ctx.config, max_reasks=ctx.max_reasks,
            meter=ctx.usage.stage("judge"), run_config=run.config))
        return aspect_outcome(unit, cluster, spec.unit, scores, spec.metric_of)

    return {**score_units(ctx, entries, score_unit, progress), **extra}


def _models_of(config: dict) -> list[dict]:
    return [config["model"], *([config["debate_model"]] if config.get("debate_model") else []),
            *config.get("judges", [])]


@dataclass
class RunContext:
    run: Run
    gateway: LLMGateway
    usage: RunUsage
    config: ModelConfig
    max_reasks: int


def _context(run: Run) -> RunContext:
    return RunContext(run=run, gateway=llm_gateway(), usage=RunUsage(),
                      config=model_config(run.config["model"]),
                      max_reasks=int(run.config.get("max_reasks", 2)))


def _selected(config: dict, units: Sequence) -> list:
    """The units (unit id, dialogue id, payload) a trial run scores: those of `dialogues`,
    then the first `limit`."""
    chosen = list(units)
    if config.get("dialogues"):
        wanted = set(config["dialogues"])
        chosen = [unit for unit in chosen if unit[1] in wanted]
        if not chosen:
            raise LLMRunFailed(f"none of the dialogues {', '.join(sorted(wanted))} is in the "
                               "submission")
    if config.get("limit"):
        chosen = chosen[:int(config["limit"])]
    return chosen


def score_units(ctx: RunContext, units: Sequence, score_unit: Callable[[tuple], UnitOutcome],
                progress: Progress) -> dict:
    """Score units chunk by chunk (concurrently within a chunk, progress per finished unit),
    storing each chunk. When the first `stop_after` units all fail, the run stops there."""
    run, spec = ctx.run, registry.get(ctx.run.evaluator)
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
                f"{next(iter(failures.values()))}): fix what the failure names (the model, its "
                f"credential, the answers' format) and start the evaluation again")
    unavailable = spec.unavailable(set(collected))
    summaries_upsert(run, spec.metrics, collected, unavailable, progress)
    Run.objects.filter(pk=run.pk).update(unavailable=unavailable)
    if units and not usable:
        first_failure = next(iter(failures.values()), "no answer")
        raise LLMRunFailed(f"no usable LLM answer on any of the {len(units)} units (first "
                           f"failure: {first_failure})")
    return {"units": len(units), "failed_units": len(failures),
            "failures": dict(list(failures.items())[:20]), "usage": run.usage}


def _save_usage(ctx: RunContext, *, units: int) -> None:
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


def _judged_turns(submission, splits):
    """The (unit, dialogue, JudgedTurn) entries the Trace judge scores, and the unanswered."""
    bundle = benchmark_bundle(benchmark=submission.benchmark)
    with submission.file.open("rb") as handle:
        submitted = {(r["dialogue_id"], int(r["turn_index"])): r
                     for r in iter_turn_records(handle, max_bytes=settings.MAX_UPLOAD_BYTES)}
    return judged_turns(
        bundle.dialogues, submitted, reviews={r["id"]: r for r in bundle.reviews},
        item_names={i["id"]: i.get("name", i["id"]) for i in bundle.items}, splits=splits)


def aspect_outcome(unit: str, cluster: str, unit_type: str, scores: dict[str, AspectScore],
                    metric_name: Callable[[str], str]) -> UnitOutcome:
    outcome = UnitOutcome(unit, cluster, [])
    for aspect, score in scores.items():
        detail = {"rationale": score.rationale, "attempts": score.attempts}
        if score.failure:
            detail["failure"] = score.failure
        outcome.values.append(UnitValue(metric_name(aspect), unit_type, unit, cluster,
                                        score.score, detail))
        count(outcome, score.failure, f"{aspect}: {score.failure}")
    return outcome


def count(outcome: UnitOutcome, failure: str | None, message: str) -> None:
    if failure:
        outcome.failures.append(message)
    else:
        outcome.usable += 1


def human_core_study(*, benchmark, slug: str | None = None):
    """The human study that routes CoRE's judges (`evaluation.ports`); None without one."""
    source = ports.human_core_ratings
    return source.find_study(benchmark=benchmark, slug=slug) if source is not None else None
