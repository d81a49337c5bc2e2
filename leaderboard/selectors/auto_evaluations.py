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
