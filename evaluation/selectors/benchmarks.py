"""Reads for benchmarks (the bundle of a stored benchmark, page summaries, dialogue views) and
for evaluation runs (results, unit-level exports, paired comparisons)."""

import json
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence

from django.db.models import Count

from evaluation.lib import scenarios
from evaluation.lib.columns import axis_place
from evaluation.lib.formats.bundle import Bundle
from evaluation.lib.formats.public_bundle import HIDDEN, bundle_zip, public_bundle
from evaluation.lib.formats.submission import (
    SubmissionReference,
    iter_turn_records,
    log_dialogue_lines,
    turn_line,
)
from evaluation.lib.highlight import quote_segments, span_segments
from evaluation.lib.llm import registry as llm_registry
from evaluation.lib.metrics.recovery import no_hit_note
from evaluation.lib.metrics.suite import CLOSED, SUITE_NAME, SuiteConfig, metric_specs
from evaluation.lib.rankers import generate_submission
from evaluation.lib.runconfig import suite_config_from_options
from evaluation.lib.stats.comparison import compare_systems_from_sums
from evaluation.models import (
    BENCHMARK_FIELDS,
    ITEM_FIELDS,
    Benchmark,
    Citation,
    Dialogue,
    DialogueItem,
    Item,
    Job,
    Review,
    Run,
    Split,
    Turn,
    TurnItem,
)
from evaluation.selectors.run_chunks import run_cluster_sums


def _present(obj, fields) -> dict:
    return {key: getattr(obj, key) for key in fields if getattr(obj, key) is not None}


def benchmark_bundle(*, benchmark: Benchmark) -> Bundle:
    """The benchmark as plain records in bundle form (the inverse of the importer)."""
    meta = {"slug": benchmark.slug, **{key: getattr(benchmark, key) for key in BENCHMARK_FIELDS}}
    meta = {key: value for key, value in meta.items() if value != ""}
    items = list(benchmark.items.order_by("pk"))
    item_ids = {item.pk: item.external_id for item in items}
    reviews = list(benchmark.reviews.order_by("pk"))
    review_ids = {review.pk: review.external_id for review in reviews}
    return Bundle(
        benchmark=meta,
        items=[{"id": item.external_id, **_present(item, ITEM_FIELDS)} for item in items],
        reviews=[{"id": r.external_id, "item_id": item_ids[r.item_id], "text": r.text,
                  **_present(r, ("stars",))} for r in reviews],
        dialogues=_dialogue_records(benchmark, item_ids, review_ids),
    )


def benchmark_public_bundle(*, benchmark: Benchmark) -> Bundle:
    """What an outside researcher may download: every split but `hidden` in full, and the
    hidden dialogues as the contexts a system answers, without gold (formats.md §1)."""
    return public_bundle(benchmark_bundle(benchmark=benchmark))


def benchmark_public_zip(*, benchmark: Benchmark) -> tuple[str, bytes]:
    """(file name, bytes) of the public bundle as a .zip `import_benchmark` reads back."""
    folder = f"{benchmark.slug}-public"
    return f"{folder}.zip", bundle_zip(benchmark_public_bundle(benchmark=benchmark), folder)


def public_splits(benchmark: Benchmark) -> list[str]:
    """The splits whose gold is public, in the benchmark's order."""
    return [split for split in benchmark.splits if split != HIDDEN]


def benchmark_sample_submission(*, benchmark: Benchmark, baseline: str = "tfidf") -> str:
    """A complete, valid `turn` submission for the public splits, written by a reference
    baseline (TF-IDF: no model needed) from the public bundle alone, as a researcher would."""
    bundle = benchmark_public_bundle(benchmark=benchmark)
    lines = generate_submission(baseline, items=bundle.items, reviews=bundle.reviews,
                                dialogues=bundle.dialogues, splits=public_splits(benchmark))
    return "".join(turn_line(line) for line in lines)


def _dialogue_records(benchmark, item_ids, review_ids) -> list[dict]:
    """Flat rows, never model instances: a 10,000-dialogue benchmark has 436,000 of them, and
    building instances took most of validating a submission against it."""
    pool = defaultdict(lambda: defaultdict(list))
    for dialogue_id, role, item_id in (
            DialogueItem.objects.filter(dialogue__benchmark=benchmark).order_by("position")
            .values_list("dialogue_id", "role", "item_id")):
        pool[dialogue_id][role].append(item_ids[item_id])
    turns = defaultdict(list)
    for row in (Turn.objects.filter(dialogue__benchmark=benchmark).order_by("index")
                .values_list("dialogue_id", "pk", "index", "role", "text", "action")):
        turns[row[0]].append(row[1:])
    turn_items = defaultdict(lambda: defaultdict(list))
    for turn_id, role, item_id in (
            TurnItem.objects.filter(turn__dialogue__benchmark=benchmark).order_by("position")
            .values_list("turn_id", "role", "item_id")):
        turn_items[turn_id][role].append(item_ids[item_id])
    citations = defaultdict(list)
    for turn_id, label, review_id, quote, start, end in (
            Citation.objects.filter(turn__dialogue__benchmark=benchmark).order_by("position")
            .values_list("turn_id", "label", "review_id", "quote", "start", "end")):
        citations[turn_id].append({"label": label, "review_id": review_ids[review_id],
                                   "quote": quote, "start": start, "end": end})
    return [{
        "id": external_id, "split": split, "scenario": scenario,
        "candidate_item_ids": pool[pk]["candidate"],
        "target_item_ids": pool[pk]["target"], "seen_item_ids": pool[pk]["seen"],
        "turns": [{"index": index, "role": role, "text": text, "action": action,
                   "referenced_item_ids": turn_items[turn_pk]["referenced"],
                   "citations": citations[turn_pk],
                   "gold_item_ids": turn_items[turn_pk]["gold"],
                   "alternative_item_ids": turn_items[turn_pk]["alternative"]}
                  for turn_pk, index, role, text, action in turns[pk]],
    } for pk, external_id, split, scenario in benchmark.dialogues.order_by("pk").values_list(
        "pk", "external_id", "split", "scenario")]


def benchmark_summary(*, benchmark: Benchmark, include_hidden: bool) -> dict:
    """Counts for the benchmark page: splits, difficulty mix, item types, cities, turns."""
    dialogues = benchmark.dialogues.all()
    splits = dict(dialogues.values_list("split").annotate(n=Count("id")).order_by("split"))
    difficulty = Counter(dict(
        dialogues.exclude(difficulty=None).values_list("difficulty").annotate(n=Count("id"))
    ))
    items = benchmark.items.all()
    # blank types and cities are not recorded ones: a data set without places shows no chart
    types = dict(items.exclude(type="").values_list("type").annotate(n=Count("id"))
                 .order_by("-n", "type"))
    cities = dict(items.exclude(city=None).exclude(city="").values_list("city")
                  .annotate(n=Count("id")).order_by("-n", "city"))
    turns = Turn.objects.filter(dialogue__benchmark=benchmark)
    return {
        "items": items.count(),
        "reviews": benchmark.reviews.count(),
        "dialogues": sum(splits.values()),
        "turns": turns.count(),
        "evaluated_turns": turns.filter(role="system", action__in=["recommend", "compare"]).count(),
        "rejections": turns.filter(action="reject_and_refine").count(),
        "splits": bar_rows([(name, splits.get(name, 0)) for name in benchmark.splits]),
        "difficulty": bar_rows(sorted(difficulty.items(), key=_difficulty_order)),
        "item_types": bar_rows(list(types.items())),
        "cities": bar_rows(list(cities.items())),
        "hidden_shown": include_hidden,
        "hidden_count": splits.get("hidden", 0),
    }


def bar_rows(pairs: list[tuple[str, int]]) -> list[tuple[str, int, int]]:
    """(label, count, bar width in percent of the largest count) for a bar chart."""
    top = max((count for _, count in pairs), default=0)
    return [(label, count, round(100 * count / top) if top else 0) for label, count in pairs]


_DIFFICULTY_RANK = {"easy": 0, "medium": 1, "hard": 2}


def _difficulty_order(pair):
    return (_DIFFICULTY_RANK.get(pair[0], 9), pair[0])


def dialogue_list(*, benchmark: Benchmark, include_hidden: bool, split: str | None = None,
                  difficulty: str | None = None):
    queryset = benchmark.dialogues.annotate(turn_count=Count("turns")).order_by("external_id")
    if not include_hidden:
        queryset = queryset.exclude(split="hidden")
    if split:
        queryset = queryset.filter(split=split)
    if difficulty:
        queryset = queryset.filter(difficulty=difficulty)
    return queryset


def dialogue_detail(*, dialogue: Dialogue) -> dict:
    """Everything the dialogue viewer shows, in three queries plus one per link table."""
    turns = list(dialogue.turns.order_by("index"))
    links = TurnItem.objects.filter(turn__dialogue=dialogue).select_related("item")
    citations = Citation.objects.filter(turn__dialogue=dialogue).select_related("review__item")
    by_turn_items = defaultdict(lambda: defaultdict(list))
    for link in links.order_by("position"):
        by_turn_items[link.turn_id][link.role].append(link.item)
    by_turn_citations = defaultdict(list)
    for citation in citations.order_by("position"):
        by_turn_citations[citation.turn_id].append(citation)
    pool_links = DialogueItem.objects.filter(dialogue=dialogue).select_related("item")
    pool = defaultdict(list)
    for link in pool_links.order_by("position"):
        pool[link.role].append(link.item)
    return {
        "scenario_rows": scenarios.rows(dialogue.scenario or {}),
        "turns": [_turn_view(t, by_turn_items[t.pk], by_turn_citations[t.pk]) for t in turns],
        "candidates": pool["candidate"],
        "targets": pool["target"],
        "cited_reviews": _cited_reviews(by_turn_citations),
    }


def scenario_rows(scenario: dict) -> list[tuple[str, str]]:
    """Flatten a free-form dict (an item's attributes) into readable (key, text) rows: words
    instead of snake_case keys, yes/no instead of Python's True/False; list entries that are
    objects go on lines of their own."""
    return [(scenarios.words(key), scenarios.text(value)) for key, value in scenario.items()]


def _turn_view(turn: Turn, items: dict, citations: list[Citation]) -> dict:
    gold = {item.pk for item in items["gold"]}
    alternatives = {item.pk for item in items["alternative"]}
    cards = list(items["referenced"])
    cards += [i for i in items["gold"] + items["alternative"] if i not in cards]
    return {
        "turn": turn,
        "segments": quote_segments(turn.text, [(c.quote, c) for c in citations]),
        "cards": [{"item": item, "gold": item.pk in gold, "alternative": item.pk in alternatives}
                  for item in cards],
        "citations": citations,
    }


def _cited_reviews(by_turn_citations) -> list[dict]:
    spans: dict[int, list] = defaultdict(list)
    reviews: dict[int, Review] = {}
    for citations in by_turn_citations.values():
        for c in citations:
            reviews[c.review_id] = c.review
            spans[c.review_id].append((c.start, c.end, c))
    return [{"review": review, "item": review.item,
             "segments": span_segments(review.text, spans[pk])}
            for pk, review in sorted(reviews.items(), key=lambda kv: kv[1].external_id)]


def item_detail(*, item: Item) -> dict:
    return {"item": item, "reviews": list(item.reviews.order_by("external_id")),
            "attribute_rows": scenario_rows(item.attributes or {})}


# --- evaluation runs (metrics.md §A, formats.md §2–3) ---------------------------------------


def benchmark_submission_reference(*, benchmark: Benchmark,
                                   pool_mode: str = CLOSED) -> SubmissionReference:
    """What a submission for BENCHMARK is checked against: dialogues, pools, ids."""
    bundle = benchmark_bundle(benchmark=benchmark)
    return SubmissionReference.from_records(items=bundle.items, reviews=bundle.reviews,
                                            dialogues=bundle.dialogues, pool_mode=pool_mode)


def submission_splits(*, submission) -> list[str]:
    """The splits of the dialogues a `turn` submission answers."""
    with submission.file.open("rb") as handle:
        dialogue_ids = {record["dialogue_id"] for record in iter_turn_records(handle)}
    return sorted(set(
        submission.benchmark.dialogues.filter(external_id__in=dialogue_ids)
        .values_list("split", flat=True)
    ))


def scored_splits(*, submission) -> list[str]:
    """The splits a submitter's run is scored on: those the file answers, without `hidden`
    until the benchmark's owner releases the hidden scores (`benchmark_hidden_release`).

    Any score over hidden dialogues shown before then, even one aggregate, answers questions
    about their gold: resubmitting one turn's ranking permuted and reading the change in MRR
    recovers its gold item (issue 18). As on Kaggle's private leaderboard, hidden scores come
    when the phase ends, all at once.
    """
    splits = submission_splits(submission=submission)
    if submission.benchmark.hidden_released_at is None:
        splits = [split for split in splits if split != Split.HIDDEN]
    return splits


def submission_hidden_lines(*, submission) -> list[tuple[int, str]]:
    """(line number, dialogue id) of the logs of a `log` submission on hidden dialogues."""
    with submission.file.open("rb") as handle:
        lines = log_dialogue_lines(handle)
    hidden = set(submission.benchmark.dialogues.filter(
        split=HIDDEN, external_id__in={dialogue_id for _, dialogue_id in lines})
        .values_list("external_id", flat=True))
    return [(line, dialogue_id) for line, dialogue_id in lines if dialogue_id in hidden]


def latest_run(*, benchmark: Benchmark, system, evaluator: str = SUITE_NAME) -> Run | None:
    """The newest succeeded run of EVALUATOR on SYSTEM's submissions for BENCHMARK."""
    return (Run.objects.filter(submission__benchmark=benchmark, submission__system=system,
                               evaluator=evaluator, job__status=Job.Status.SUCCEEDED)
            .select_related("submission__system", "job").order_by("-created_at", "-pk").first())


def run_suite_config(run: Run) -> SuiteConfig:
    """The SuiteConfig a run was made with (its stored options)."""
    return suite_config_from_options(run.config.get("suite", {}))


def run_metric_specs(run: Run):
    """The metrics the run's evaluator can produce (the Trace suite's or an LLM evaluator's)."""
    if run.evaluator.startswith("simulation."):
        return ()  # preference coverage: its summaries carry everything the page shows
    spec = llm_registry.find(run.evaluator)
    if spec is not None:
        return spec.metrics
    return metric_specs(run_suite_config(run))


def run_results(*, run: Run) -> dict:
    """System-level results of a run: per metric value, 95% CI, std, n, direction, axis."""
    specs = {spec.name: spec for spec in run_metric_specs(run)}
    metrics = {}
    for summary in run.summaries.order_by("pk"):
        spec = specs.get(summary.metric)
        metrics[summary.metric] = {
            "axis": summary.axis, "unit": spec.unit if spec else None,
            "direction": summary.direction, "value": summary.value,
            "ci": [summary.ci_low, summary.ci_high], "std": summary.std, "n": summary.n,
            "undefined_reason": summary.undefined_reason or None,
            # False: the interval was stored by an older method (recompute_intervals)
            "ci_current": summary.ci_is_current,
        }
    _attach_no_hit_rule(run, metrics)
    submission = run.submission
    return {
        "run": run.pk, "job": run.job_id, "status": run.job.status,
        "system": submission.system.name, "benchmark": submission.benchmark.slug,
        "evaluator": run.evaluator, "evaluator_version": run.evaluator_version,
        "config_hash": run.config_hash, "splits": run.config.get("splits", []),
        "missing_turns": run.job.result.get("missing_turns", 0),
        "non_answers": _non_answers(metrics),
        "metrics": metrics, "unavailable": dict(run.unavailable),
    }


def _attach_no_hit_rule(run: Run, metrics: dict) -> None:
    """T2R's value rests on a rule for dialogues without a hit: say which, and for how many
    (metric `t2r_no_hit`: a 0/1 per dialogue, so mean × n is the count)."""
    t2r, flags = metrics.get("t2r"), metrics.get("t2r_no_hit")
    if t2r is None or flags is None or run.evaluator != SUITE_NAME:
        return
    t2r["no_hit"] = no_hit_note(run.config.get("suite", {}).get("t2r_no_hit"), flags["value"],
                                flags["n"])


def _non_answers(metrics: dict) -> dict | None:
    """How many evaluated turns the system did not answer (metric `non_answer`: a 0/1 per turn,
    so mean × n is the count), or None for evaluators without it."""
    summary = metrics.get("non_answer")
    if not summary or summary["value"] is None or not summary["n"]:
        return None
    count = round(summary["value"] * summary["n"])
    return {"count": count, "turns": summary["n"], "answered": summary["n"] - count,
            "share": summary["value"]}


def run_unit_rows(*, run: Run, include_hidden: bool) -> Iterator[dict]:
    """Unit-level values as formats.md §3 rows, hidden-split dialogues only when asked.

    `evaluator` carries name, version and configuration hash (`trace@1.0.0:1a2b3c4d5e6f`), so a
    row read back elsewhere still says exactly how it was made.
    """
    submission = run.submission
    scores = run.unit_scores.exclude(value=None)
    if not include_hidden:
        hidden = Dialogue.objects.filter(benchmark_id=submission.benchmark_id,
                                         split=Split.HIDDEN).values("external_id")
        scores = scores.exclude(dialogue_id__in=hidden)
    evaluator = f"{run.evaluator}@{run.evaluator_version}:{run.config_hash[:12]}"
    system, benchmark = submission.system.slug, submission.benchmark.slug
    fields = ("metric", "unit_type", "unit_id", "value")
    for metric, unit_type, unit_id, value in (scores.order_by("metric", "unit_type", "unit_id")
                                              .values_list(*fields).iterator(chunk_size=5000)):
        yield {"system": system, "benchmark": benchmark, "evaluator": evaluator,
               "metric": metric, "unit_type": unit_type, "unit_id": unit_id, "value": value}


ClusterSums = dict[str, tuple[Sequence, Sequence[float], Sequence[float]]]


def runs_compare(*, run_a: Run, run_b: Run, metrics: list[str] | None = None,
                 sums: tuple[ClusterSums, ClusterSums] | None = None) -> list[dict]:
    """Per metric: paired jackknife-t CI of mean(A) − mean(B) and the per-dialogue
    paired t-test (statistics.md "Comparing systems"), over the dialogues both runs scored.

    Both need only each run's per-dialogue sums and counts: SUMS gives them per run as
    {metric: (dialogue ids, sums, counts)} (the leaderboard's stored ones); without it the
    database reduces the runs' unit values (one grouped query per run), never Python.
    """
    directions = dict(run_a.summaries.order_by("pk").values_list("metric", "direction"))
    axes = dict(run_a.summaries.values_list("metric", "axis"))
    if sums is None:
        sums = tuple({metric: reduced[:3] for metric, reduced in run_cluster_sums(run=run).items()}
                     for run in (run_a, run_b))
    a, b = sums
    names = [m for m in directions if m in a and m in b and (not metrics or m in metrics)]
    rows = []
    for metric in names:
        comparison = compare_systems_from_sums(
            "A", *a[metric], "B", *b[metric],
            confidence=0.95,
        )
        difference = comparison.difference
        better = None
        if comparison.significant:
            a_higher = difference.value > 0
            better = "A" if a_higher == (directions[metric] == "higher") else "B"
        rows.append({"metric": metric, "axis": axes[metric], "direction": directions[metric],
                     "mean_a": difference.params.get("mean_a"),
                     "mean_b": difference.params.get("mean_b"),
                     "difference": difference.value, "ci": [difference.ci_low, difference.ci_high],
                     "significant": comparison.significant, "better": better,
                     "shared_dialogues": difference.n.get("shared_clusters", 0),
                     "method": difference.method,
                     "t_test": comparison.t_test.to_dict(),
                     "undefined_reason": difference.undefined_reason})
    return rows


def metrics_by_axis(metrics: dict) -> list[tuple[str, list[tuple[str, dict]]]]:
    """Metrics of `run_results` grouped by axis, axes in the leaderboard's order."""
    groups: dict[str, list] = defaultdict(list)
    for name, row in metrics.items():
        groups[row["axis"]].append((name, row))
    return sorted(groups.items(), key=lambda kv: (axis_place(kv[0]), kv[0]))


def pretty_json(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def baselines_job_latest(*, benchmark: Benchmark):
    """The newest job evaluating reference baselines of BENCHMARK on a worker (`load_demo`
    leaves the sentence-model ones to it), or None."""
    return Job.objects.filter(params__baselines=benchmark.pk).order_by("-pk").first()
