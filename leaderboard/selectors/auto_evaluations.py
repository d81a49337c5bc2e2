"""The automatic LLM evaluators of a benchmark as their staff page shows them, and a
submission's automatic runs as its page shows them (docs/llm.md, "Automatic runs on new
submissions"). Reads only."""

from evaluation.lib.llm import registry
from evaluation.models import AutoEvaluation, AutoEvaluator, Benchmark, Submission
from evaluation.selectors.auto_evaluation import auto_evaluation_spent_today


def benchmark_auto_evaluators(*, benchmark: Benchmark) -> dict:
    """Per protocol the benchmark takes, its configured evaluators (with today's estimated
    spending), and the runs waiting for approval on any of its submissions."""
    configs = list(AutoEvaluator.objects.filter(benchmark=benchmark).select_related("updated_by"))
    protocols = benchmark.protocols or ["turn"]
    rows = {protocol: [] for protocol in protocols}
    for config in configs:
        protocol = registry.get(config.evaluator).protocol
        rows.setdefault(protocol, []).append(
            {"config": config, "spent_today": auto_evaluation_spent_today(config)})
    waiting = (AutoEvaluation.objects.filter(submission__benchmark=benchmark,
                                             status=AutoEvaluation.Status.WAITING)
               .select_related("submission__system").order_by("created_at", "pk"))
    return {"by_protocol": list(rows.items()), "waiting": list(waiting),
            "evaluators": registry.for_protocol(protocols)}


def submission_auto_evaluations(*, submission: Submission) -> list[AutoEvaluation]:
    return list(submission.auto_evaluations.select_related("run__job", "decided_by")
                .order_by("created_at", "pk"))


def log_scoring(*, submission: Submission) -> dict:
    """What scores a `log` submission and when, as its status card says it: the automatic runs
    the upload started (`started`), those waiting for staff (`waiting`) or rejected
    (`rejected`), and the evaluators the operator runs on new uploads of its benchmark
    (`configured`, enabled ones)."""
    evaluations = submission_auto_evaluations(submission=submission)
    by_status = {status: [e for e in evaluations if e.status == status]
                 for status in AutoEvaluation.Status.values}
    return {"started": by_status[AutoEvaluation.Status.STARTED],
            "waiting": by_status[AutoEvaluation.Status.WAITING],
            "rejected": by_status[AutoEvaluation.Status.REJECTED],
            "configured": upload_scoring(benchmarks=[submission.benchmark],
                                         protocol=submission.protocol).get(
                                             submission.benchmark_id, [])}


def upload_scoring(*, benchmarks, protocol: str = "log") -> dict[int, list[str]]:
    """Per benchmark id, the evaluators (with their model) the operator runs on new uploads of
    PROTOCOL: what scores an upload by itself."""
    names = [evaluator.name for evaluator in registry.for_protocol(protocol)]
    found: dict[int, list[str]] = {}
    for config in (AutoEvaluator.objects.filter(benchmark__in=benchmarks, enabled=True,
                                                evaluator__in=names)
                   .order_by("benchmark_id", "evaluator")):
        found.setdefault(config.benchmark_id, []).append(f"{config.evaluator} ({config.model})")
    return found


def log_upload_scoring(*, benchmarks) -> list[tuple[str, list[str]]]:
    """The upload form's note: per benchmark taking `log` files, what scores one by itself."""
    taking = [b for b in benchmarks if "log" in (b.protocols or [])]
    found = upload_scoring(benchmarks=taking)
    return [(b.name, found.get(b.pk, [])) for b in taking]
