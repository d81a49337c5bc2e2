"""Reads for the judge-bias probes of an LLM run (the run page's "Judge-bias probes" section;
evaluation/lib/stats/judge_probes.py): the run's turn-level scores, the submission's response
lengths, the judge's model and the systems ranked on the benchmark. Cached per run and finish
time: the submission file is read once."""

from django.conf import settings
from django.core.cache import cache

from evaluation.lib.formats.submission import TURN, iter_turn_records
from evaluation.lib.stats import judge_probes
from evaluation.models import Dialogue, Split, Submission

CACHE_SECONDS = 3600
PAIRWISE_EVALUATORS: frozenset[str] = frozenset()  # no pairwise LLM judge exists yet


def _lengths(submission, max_bytes: int) -> dict[str, int]:
    """unit id (dialogue#turn) -> the response's length in words, for a `turn` submission."""
    if submission.protocol != TURN:
        return {}
    with submission.file.open("rb") as handle:
        return {f"{r['dialogue_id']}#{int(r['turn_index'])}": len(str(r["response"]).split())
                for r in iter_turn_records(handle, max_bytes=max_bytes)}


def judge_models(config: dict) -> list[str]:
    """The litellm model strings an LLM run's configuration judges with."""
    entries = [config.get("model"), config.get("debate_model"), *(config.get("judges") or [])]
    return sorted({e["model"] for e in entries if isinstance(e, dict) and e.get("model")})


def ranked_systems(benchmark_id: int, own_system) -> list[tuple[str, str]]:
    """(name, text read for its model family) of the systems with a published submission on
    the benchmark, and the run's own system."""
    systems = {own_system.pk: own_system}
    for submission in (Submission.objects.filter(benchmark_id=benchmark_id, is_public=True)
                       .select_related("system")):
        systems[submission.system_id] = submission.system
    return sorted((s.name, " ".join([s.name, s.description, s.family, s.team]))
                  for s in systems.values())


def run_judge_probes(*, run, include_hidden: bool) -> dict:
    key = (f"judge-probes:{run.pk}:{run.job.finished_at.isoformat() if run.job.finished_at else ''}"
           f":{int(include_hidden)}")
    cached = cache.get(key)
    if cached is not None:
        return cached
    scores = run.unit_scores.filter(unit_type="turn", value__isnull=False)
    if not include_hidden:
        hidden = Dialogue.objects.filter(benchmark_id=run.submission.benchmark_id,
                                         split=Split.HIDDEN).values("external_id")
        scores = scores.exclude(dialogue_id__in=hidden)
    by_metric: dict[str, dict] = {}
    clusters = {}
    for metric, unit, dialogue, value in scores.values_list("metric", "unit_id", "dialogue_id",
                                                            "value"):
        by_metric.setdefault(metric, {})[unit] = value
        clusters[unit] = dialogue
    lengths = _lengths(run.submission, settings.MAX_UPLOAD_BYTES) if by_metric else {}
    length_rows = [{"metric": metric, **judge_probes.length_slope(values, lengths, clusters)}
                   for metric, values in sorted(by_metric.items())] if lengths else []
    models = judge_models(run.config)
    systems = ranked_systems(run.submission.benchmark_id, run.submission.system)
    preference = [{"model": m, **judge_probes.self_preference(m, systems)} for m in models]
    report = {
        "length": length_rows,
        "length_note": ("" if length_rows else
                        "no turn-level scores with response texts (a log submission, or a "
                        "dialogue-level evaluator): the length probe needs both"),
        "pairwise": run.evaluator in PAIRWISE_EVALUATORS,
        "self_preference": preference,
        "flag": any(p["flag"] for p in preference),
    }
    cache.set(key, report, CACHE_SECONDS)
    return report
