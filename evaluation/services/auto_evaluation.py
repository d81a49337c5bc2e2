"""Automatic LLM runs on new uploads (docs/llm.md, "Automatic runs on new submissions").

A leaderboard's operator (staff) chooses per benchmark which LLM evaluators run on every new
upload (`AutoEvaluator`: evaluator, model, FACE instruction version, a cost budget per
submission and per UTC day). `submission_submit` calls `auto_evaluations_start` in the upload's
transaction: each configured evaluator that reads the upload's protocol is estimated
(`llm_run_estimate`, the estimate the submission's "run an LLM evaluator" page shows) and
either queued at once (`llm_run_create`, the run that page queues) or, when the estimate would
go over a budget or its cost is unknown while a budget is set, recorded as waiting for approval
(`AutoEvaluation`), which staff approve or reject from the submission's page.

The day's budget counts the estimates of the runs this configuration started that day
(approved ones on the day of their approval); the configuration's row is locked while it is
read, so two uploads at once cannot both squeeze under it.
"""

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from core.roles import staff_only
from evaluation.lib.formats.submission import TURN
from evaluation.lib.llm import registry
from evaluation.lib.llm.gateway import LLMConfigurationError
from evaluation.models import AutoEvaluation, AutoEvaluator, Benchmark, Submission
from evaluation.selectors.auto_evaluation import auto_evaluation_spent_today
from evaluation.selectors.benchmarks import scored_splits
from evaluation.services.face_optimization import FaceOptimizationError, face_instructions_resolve
from evaluation.services.llm_models import model_options
from evaluation.services.llm_runs import (
    DuplicateRun,
    LLMRunFailed,
    llm_run_create,
    llm_run_estimate,
)
from evaluation.services.spending import EXEMPT

# What a bad choice raises: shown to the operator as it is.
CHOICE_ERRORS = (ValueError, LLMConfigurationError, FaceOptimizationError, LLMRunFailed)


def _require_staff(user) -> None:
    if not (user is not None and user.is_staff):
        raise PermissionDenied(staff_only("run a leaderboard's automatic LLM evaluators: they "
                                          "spend the operator's money"))


# --- the configuration ---------------------------------------------------------------------


def auto_evaluator_save(*, benchmark: Benchmark, evaluator: str, model: str, user,
                        instructions: str = "", max_cost_per_submission: float | None = None,
                        max_cost_per_day: float | None = None,
                        enabled: bool = True) -> AutoEvaluator:
    """Create or change BENCHMARK's automatic run of EVALUATOR (one per evaluator). Staff
    only; an evaluator of a protocol the benchmark does not take, a negative budget, FACE
    instructions on another evaluator or an unknown instruction version raise ValueError (or
    FaceOptimizationError), and nothing is saved."""
    _require_staff(user)
    spec = registry.get(evaluator)
    if spec.protocol not in (benchmark.protocols or [TURN]):
        raise ValueError(f"{evaluator} reads `{spec.protocol}` submissions, which "
                         f"{benchmark.name} does not take")
    if instructions and "face" not in spec.options:
        raise ValueError("instruction versions are for FACE only")
    for budget in (max_cost_per_submission, max_cost_per_day):
        if budget is not None and budget < 0:
            raise ValueError("a budget is 0 or more US dollars (empty: no limit)")
    model_options(model=model)  # a missing model is refused here, not at the next upload
    if instructions:
        face_instructions_resolve([instructions])
    config, _ = AutoEvaluator.objects.update_or_create(
        benchmark=benchmark, evaluator=evaluator,
        defaults={"model": model, "instructions": instructions, "enabled": enabled,
                  "max_cost_per_submission": max_cost_per_submission,
                  "max_cost_per_day": max_cost_per_day, "updated_by": user})
    return config


def auto_evaluator_delete(*, auto_evaluator: AutoEvaluator, user) -> None:
    """Stop running it on new uploads; runs it started and decisions it waits for stay."""
    _require_staff(user)
    auto_evaluator.delete()


# --- on a new upload -----------------------------------------------------------------------


def _options(config: AutoEvaluator) -> dict:
    """The plain-JSON choices of one automatic run, kept for its approval."""
    return {"evaluator": config.evaluator, "model": model_options(model=config.model),
            "instructions": config.instructions}


def _run_keywords(options: dict) -> dict:
    """`llm_run_create`/`llm_run_estimate` keywords of stored OPTIONS."""
    face = None
    if "face" in registry.get(options["evaluator"]).options:
        versions = [options["instructions"]] if options.get("instructions") else []
        face = {"instructions": face_instructions_resolve(versions)}
    return {"evaluator": options["evaluator"], "model": options["model"], "face": face}


def _over_budget(config: AutoEvaluator, cost: float | None) -> str:
    """Why a run of estimated COST may not start by itself ("" when it may)."""
    per_submission, per_day = config.max_cost_per_submission, config.max_cost_per_day
    if per_submission is None and per_day is None:
        return ""
    if cost is None:
        return (f"the cost of {config.model} is unknown (litellm has no price for it), so it "
                "cannot be checked against the budget")
    if per_submission is not None and cost > per_submission:
        return (f"the estimated ${cost:.4f} is over the budget of ${per_submission:.4f} per "
                "submission")
    if per_day is not None:
        spent = auto_evaluation_spent_today(config)
        if spent + cost > per_day:
            return (f"the estimated ${cost:.4f} would bring today's automatic {config.evaluator} "
                    f"runs to ${spent + cost:.4f}, over the budget of ${per_day:.4f} per day")
    return ""


def _splits(submission: Submission) -> list[str] | None:
    """A `turn` file's automatic runs cover the splits its Trace run scores: no hidden one
    before the release (issue 18)."""
    return scored_splits(submission=submission) if submission.protocol == TURN else None


def _llm_run(submission: Submission, options: dict, user):
    """Queue it (its budgets are the configuration's, not the uploader's allowance); the same
    run already queued or running is used instead of a second one."""
    try:
        return llm_run_create(submission=submission, user=user, enqueue=True,
                              splits=_splits(submission), spending=EXEMPT,
                              **_run_keywords(options))
    except DuplicateRun as twin:
        return twin.run


def auto_evaluations_start(*, submission: Submission) -> list[AutoEvaluation]:
    """Estimate, then start or hold, every automatic LLM evaluator of SUBMISSION's benchmark
    that reads its protocol. Runs are queued when the caller's transaction commits; their jobs
    belong to the uploader, who follows them on the submission's page. A configuration that no
    longer works (a deleted instruction version) is recorded as waiting, with the reason."""
    configs = [config for config in AutoEvaluator.objects.filter(
        benchmark=submission.benchmark, enabled=True).order_by("evaluator")
        if registry.get(config.evaluator).protocol == submission.protocol]
    planned = []
    for config in configs:  # estimated before any lock: it reads the whole file
        options = _options(config)
        try:
            estimate = llm_run_estimate(submission=submission, splits=_splits(submission),
                                        **_run_keywords(options))
        except CHOICE_ERRORS as exc:
            planned.append((config, options, None, f"no estimate: {exc}"))
        else:
            planned.append((config, options, estimate, ""))
    made = []
    with transaction.atomic():
        for config, options, estimate, problem in planned:
            # The day's spending is read under the configuration's row lock (held until the
            # upload commits), so concurrent uploads cannot both fit under its budget.
            config = AutoEvaluator.objects.select_for_update().filter(pk=config.pk).first()
            if config is None:
                continue  # removed meanwhile
            cost = estimate.cost_usd if estimate is not None else None
            reason = problem or _over_budget(config, cost)
            evaluation = AutoEvaluation(
                auto_evaluator=config, submission=submission, evaluator=config.evaluator,
                options=options, estimate=estimate.to_dict() if estimate else {},
                cost_usd=cost, reason=reason,
                status=AutoEvaluation.Status.WAITING if reason else AutoEvaluation.Status.STARTED)
            if not reason:
                evaluation.run = _llm_run(submission, options, submission.created_by)
            evaluation.save()
            made.append(evaluation)
    return made


# --- staff decide --------------------------------------------------------------------------


def _waiting(evaluation: AutoEvaluation) -> AutoEvaluation:
    locked = AutoEvaluation.objects.select_for_update().select_related(
        "submission__benchmark").get(pk=evaluation.pk)
    if locked.status != AutoEvaluation.Status.WAITING:
        raise ValueError(f"this {locked.evaluator} run was already "
                         f"{locked.get_status_display().lower()}")
    return locked


def auto_evaluation_approve(*, evaluation: AutoEvaluation, user) -> AutoEvaluation:
    """Start a waiting automatic run as it was estimated (staff only). A choice that no longer
    works raises (ValueError, FaceOptimizationError, …) and leaves it waiting."""
    _require_staff(user)
    with transaction.atomic():
        locked = _waiting(evaluation)
        locked.run = _llm_run(locked.submission, locked.options, locked.submission.created_by)
        locked.status = AutoEvaluation.Status.STARTED
        locked.decided_by, locked.decided_at = user, timezone.now()
        locked.save(update_fields=["run", "status", "decided_by", "decided_at"])
    return locked


def auto_evaluation_reject(*, evaluation: AutoEvaluation, user) -> AutoEvaluation:
    """Never run it (staff only)."""
    _require_staff(user)
    with transaction.atomic():
        locked = _waiting(evaluation)
        locked.status = AutoEvaluation.Status.REJECTED
        locked.decided_by, locked.decided_at = user, timezone.now()
        locked.save(update_fields=["status", "decided_by", "decided_at"])
    return locked

