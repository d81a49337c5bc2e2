"""Reads for a simulation's part of the run page: the simulator's configuration, failures, the
PC_t curve per K (PEPPER Fig. 3 style) and the dialogues, hidden parts only where allowed."""

from evaluation.lib import charts
from evaluation.lib.columns import shown_on
from evaluation.lib.metrics import ievalm as ievalm_metric
from evaluation.lib.metrics.preference import KS, PCIR_EQ3, PCIR_VARIANTS
from evaluation.lib.metrics.suite import SUITE_NAME
from evaluation.lib.metrics.types import SIMULATION
from evaluation.lib.simulators.leakage import FUZZY_THRESHOLD, KIND_LABELS, NAMED_TARGET
from evaluation.lib.stats.methods import interval_is_current
from evaluation.models import MetricSummary, Simulation

CHART_KS = (1, 10, 50)
DIALOGUES_SHOWN = 50
LEAKED_SHOWN = 50


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
        dialogues.append({"user_id": row.user_id, "status": row.status,
                          "turns": _flagged_turns(row, show),
                          # the form's "turns": exchanges (a user message and the answer)
                          "exchanges": sum(1 for t in row.turns if t.get("role") == "system"),
                          "error_kind": row.error_kind, "error": row.error,
                          "hidden": row.hidden if show else None,
                          "targets": row.target_item_ids if show else None,
                          "source": row.source_dialogue_id if show_sources else None,
                          "leakage": _leak_view(row.leakage, show)})
    trace_run = report.get("trace_run")
    # the Trace metrics whose specs choose this section (its Trace run's page has them all)
    trace_shown = shown_on(SUITE_NAME, SIMULATION)
    trace = list(MetricSummary.objects.filter(run_id=trace_run, metric__in=trace_shown)
                 .values("metric", "axis", "value", "ci_low", "ci_high", "n",
                         "undefined_reason", "ci_method", "ci_version")) if trace_run else []
    trace.sort(key=lambda row: trace_shown.index(row["metric"]))
    for row in trace:  # an interval stored by an older method is marked (recompute_intervals)
        row["ci_current"] = interval_is_current(row.pop("ci_method"), row.pop("ci_version"))
    summaries = report.get("summaries", {})
    ievalm = [{"metric": name, "label": _ievalm_label(name), **summaries[name]}
              for name in (*(f"{ievalm_metric.RECALL}@{k}" for k in ievalm_metric.IEVALM_KS),
                           ievalm_metric.PERSUASIVENESS) if name in summaries]
    return {"simulation": simulation, "config": simulation.config, "curves": curves,
            "ievalm": ievalm, "is_ievalm": simulation.simulator == "ievalm",
            "pcir_label": report.get("pcir_label") or PCIR_VARIANTS[PCIR_EQ3],
            "leakage": _leakage(simulation, visible_hidden),
            "trace_run": trace_run, "trace": trace,
            "table": table, "failed": report.get("failed"),
            "failures_by_kind": report.get("failures_by_kind", {}),
            "overhead_ms": report.get("overhead_ms_per_turn"), "dialogues": dialogues,
            "dialogue_count": simulation.dialogues.count()}


def _ievalm_label(name: str) -> str:
    if name == ievalm_metric.PERSUASIVENESS:
        return ievalm_metric.LABELS[name]
    return ievalm_metric.LABELS[ievalm_metric.RECALL].replace("@K", "@" + name.split("@")[1])


def _leak_view(audit: dict, show: bool) -> dict | None:
    """A dialogue's audit as the viewer may see it: the reasons' kinds for everyone; which
    target, how it matched and at which turn only where its hidden part may be shown."""
    if not audit:
        return None
    reasons = []
    for flag in audit.get("flags", []):
        reason = {"kind": flag["kind"], "label": KIND_LABELS.get(flag["kind"], flag["kind"])}
        if show:
            reason.update(item_id=flag["item_id"], match=flag["match"], turn=flag["turn"],
                          score=flag["score"], evidence=flag["evidence"])
        reasons.append(reason)
    if not show:  # one line per kind, nothing that points at a turn
        reasons = list({r["kind"]: r for r in reasons}.values())
    return {"leaked": audit.get("leaked"), "first_turn_success": audit.get("first_turn_success"),
            "reasons": reasons}


def _flagged_turns(row, show: bool) -> list[dict]:
    """The dialogue's turns, those a leak flag points at marked (`flag`), where allowed."""
    if not show or not row.leakage:
        return row.turns
    flagged: dict[int, list[str]] = {}
    for flag in row.leakage.get("flags", []):
        if flag["turn"] is not None and flag["kind"] == NAMED_TARGET:
            flagged.setdefault(flag["turn"], []).append(
                f"names target {flag['item_id']} ({flag['match']}: {flag['evidence']})")
    return [{**turn, "flag": "; ".join(flagged[turn.get("index", i)])}
            if turn.get("index", i) in flagged else turn for i, turn in enumerate(row.turns)]


def _leakage(simulation: Simulation, visible_hidden: set[str] | None) -> dict | None:
    """The run page's leakage section: the summary stored when the simulation finished, the
    sanitised run, and every leaked dialogue (up to LEAKED_SHOWN) with its reasons."""
    summary = (simulation.report or {}).get("leakage")
    if summary is None:
        return None
    leaked = []
    for row in (simulation.dialogues.filter(leakage__leaked=True).order_by("position")
                .only("user_id", "position", "leakage", "turns")[:LEAKED_SHOWN]):
        show = visible_hidden is None or row.user_id in visible_hidden
        view = _leak_view(row.leakage, show)
        turns = [t for t in _flagged_turns(row, show) if t.get("flag")]
        leaked.append({"user_id": row.user_id, **view, "turns": turns})
    return {**summary, "kinds": [(KIND_LABELS[k], n) for k, n in summary["by_kind"].items()],
            "leaked_dialogues": leaked, "sanitised_run_id": simulation.sanitised_run_id,
            "kept": summary["dialogues"] - summary["leaked"],
            "fuzzy_threshold": FUZZY_THRESHOLD}


# the job page's headline: PEPPER-style coverage PC@10, or iEvaLM's own Recall@10
HEADLINE = "pc@10"
IEVALM_HEADLINE = f"{ievalm_metric.RECALL}@10"


def simulation_job_summary(*, job) -> dict | None:
    """What a simulation job's page says above its progress: the simulation (system,
    benchmark, simulator, users × turns) and, once it succeeded, its headline number
    (preference coverage PC@10 at the last turn, or iEvaLM's Recall@10 of the final list,
    with its interval); None for other jobs."""
    simulation = (Simulation.objects.filter(job=job).select_related("system", "benchmark")
                  .first())
    if simulation is None:
        return None
    metric = IEVALM_HEADLINE if simulation.simulator == ievalm_metric.SIMULATOR else HEADLINE
    headline = (MetricSummary.objects.filter(run_id=simulation.run_id, metric=metric)
                .values("metric", "value", "ci_low", "ci_high", "n").first()
                if simulation.run_id else None)
    return {"simulation": simulation, "headline": headline}
