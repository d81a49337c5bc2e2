"""Reads for a simulation's part of the run page: the simulator's configuration, failures, the
PC_t curve per K (PEPPER Fig. 3 style) and the dialogues, hidden parts only where allowed."""

from evaluation.lib import charts
from evaluation.lib.metrics.preference import KS
from evaluation.lib.stats.methods import interval_is_current
from evaluation.models import MetricSummary, Simulation

CHART_KS = (1, 10, 50)
# The Trace metrics the simulation's section shows (its Trace run's page has them all).
TRACE_SHOWN = ("recall@1", "recall@5", "mrr", "tsr", "t2r", "rejection_recovery", "gs", "cd",
               "pc", "spatial_coherence", "price_alignment", "itinerary_diversity", "non_answer")
DIALOGUES_SHOWN = 50


def simulation_report(*, simulation: Simulation, visible_hidden: set[str] | None,
                      show_sources: bool = False) -> dict:
    """VISIBLE_HIDDEN: users (opaque ids) whose targets and preferences may be shown (None:
    all); SHOW_SOURCES (staff): the benchmark dialogue each user simulates."""
    report = simulation.report or {}
    turns = list(range(1, simulation.turns + 1))
    curves = []
    for k in CHART_KS:
        values = report.get(f"pc@{k}")
        if values:
            curves.append({"k": k, "final": values[-1], "chart": charts.curve(
                [(t, v, None, None) for t, v in zip(turns, values, strict=True)],
                x_label="turn t", y_label=f"PC_t@{k}", y_range=(0.0, 1.0))})
    table = [{"k": k, "pc": report.get(f"pc@{k}", []), "pcir": report.get(f"pcir@{k}", []),
              "recall": report.get(f"recall@{k}", [])} for k in KS if report.get(f"pc@{k}")]
    dialogues = []
    for row in simulation.dialogues.order_by("position")[:DIALOGUES_SHOWN]:
        show = visible_hidden is None or row.user_id in visible_hidden
        dialogues.append({"user_id": row.user_id, "status": row.status, "turns": row.turns,
                          # the form's "turns": exchanges (a user message and the answer)
                          "exchanges": sum(1 for t in row.turns if t.get("role") == "system"),
                          "error_kind": row.error_kind, "error": row.error,
                          "hidden": row.hidden if show else None,
                          "targets": row.target_item_ids if show else None,
                          "source": row.source_dialogue_id if show_sources else None})
    trace_run = report.get("trace_run")
    trace = list(MetricSummary.objects.filter(run_id=trace_run, metric__in=TRACE_SHOWN)
                 .values("metric", "axis", "value", "ci_low", "ci_high", "n",
                         "undefined_reason", "ci_method", "ci_version")) if trace_run else []
    trace.sort(key=lambda row: TRACE_SHOWN.index(row["metric"]))
    for row in trace:  # an interval stored by an older method is marked (recompute_intervals)
        row["ci_current"] = interval_is_current(row.pop("ci_method"), row.pop("ci_version"))
    return {"simulation": simulation, "config": simulation.config, "curves": curves,
            "trace_run": trace_run, "trace": trace,
            "table": table, "failed": report.get("failed"),
            "failures_by_kind": report.get("failures_by_kind", {}),
            "overhead_ms": report.get("overhead_ms_per_turn"), "dialogues": dialogues,
            "dialogue_count": simulation.dialogues.count()}


HEADLINE = "pc@10"


def simulation_job_summary(*, job) -> dict | None:
    """What a simulation job's page says above its progress: the simulation (system,
    benchmark, simulator, users × turns) and, once it succeeded, its headline number
    (preference coverage PC@10 at the last turn, with its interval); None for other jobs."""
    simulation = (Simulation.objects.filter(job=job).select_related("system", "benchmark")
                  .first())
    if simulation is None:
        return None
    headline = (MetricSummary.objects.filter(run_id=simulation.run_id, metric=HEADLINE)
                .values("metric", "value", "ci_low", "ci_high", "n").first()
                if simulation.run_id else None)
    return {"simulation": simulation, "headline": headline}
