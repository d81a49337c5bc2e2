"""Reads for a Trace run scored in chunks (docs/operations.md, "Runs over several workers").

A chunk task reads only its own dialogues (bundle-form records, gold included), the catalogue's
items and the reviews its submitted turns cite, with one flat query per table: never the whole
benchmark. The final task reads the run's values reduced per metric and dialogue (the chunks
store them so).
"""

import io
import json
from collections import defaultdict

from django.db.models import Count, F, Sum

from evaluation.lib.formats.submission import iter_turn_records
from evaluation.lib.stats.cluster_sums import ClusterSums, merge_cluster_sums
from evaluation.models import (
    EVALUATED_ACTIONS,
    ITEM_FIELDS,
    Citation,
    Dialogue,
    DialogueItem,
    Item,
    Review,
    RunChunk,
    Turn,
    TurnItem,
    UnitScore,
)


def run_dialogues(*, benchmark, splits) -> list[tuple[int, str, int]]:
    """(pk, external id, answered turns) of the benchmark's dialogues on SPLITS, in bundle order.

    Answered turns are the system recommend/compare turns, the units the chunks are sized by.
    """
    answered = dict(
        Turn.objects.filter(dialogue__benchmark=benchmark, dialogue__split__in=splits,
                            role=Turn.Role.SYSTEM, action__in=EVALUATED_ACTIONS)
        .values_list("dialogue_id").annotate(n=Count("id")).order_by()
    )
    return [(pk, external_id, answered.get(pk, 0)) for pk, external_id in
            Dialogue.objects.filter(benchmark=benchmark, split__in=splits)
            .order_by("pk").values_list("pk", "external_id")]


def item_records(*, benchmark) -> list[dict]:
    """The catalogue in bundle form (a chunk needs every item: open pools, recommended items)."""
    rows = Item.objects.filter(benchmark=benchmark).order_by("pk").values_list(
        "external_id", *ITEM_FIELDS)
    return [{"id": row[0], **{key: value for key, value in zip(ITEM_FIELDS, row[1:], strict=True)
                              if value is not None}} for row in rows]


def review_records(*, benchmark, external_ids) -> list[dict]:
    """The benchmark's reviews among EXTERNAL_IDS in bundle form (the ones a chunk cites)."""
    rows = Review.objects.filter(benchmark=benchmark, external_id__in=list(external_ids)) \
        .values_list("external_id", "item__external_id", "text")
    return [{"id": rid, "item_id": item_id, "text": text} for rid, item_id, text in rows]


def dialogue_records(*, dialogue_pks: list[int]) -> list[dict]:
    """Bundle-form records of these dialogues, in the given order (five queries)."""
    head = {pk: (external_id, split, scenario) for pk, external_id, split, scenario in
            Dialogue.objects.filter(pk__in=dialogue_pks)
            .values_list("pk", "external_id", "split", "scenario")}
    pool = defaultdict(lambda: defaultdict(list))
    for dialogue_id, role, item in (DialogueItem.objects.filter(dialogue_id__in=dialogue_pks)
                                    .order_by("position")
                                    .values_list("dialogue_id", "role", "item__external_id")):
        pool[dialogue_id][role].append(item)
    turns = defaultdict(list)
    for row in (Turn.objects.filter(dialogue_id__in=dialogue_pks).order_by("index")
                .values_list("pk", "dialogue_id", "index", "role", "text", "action")):
        turns[row[1]].append(row)
    turn_items = defaultdict(lambda: defaultdict(list))
    for turn_id, role, item in (TurnItem.objects.filter(turn__dialogue_id__in=dialogue_pks)
                                .order_by("position")
                                .values_list("turn_id", "role", "item__external_id")):
        turn_items[turn_id][role].append(item)
    citations = defaultdict(list)
    for turn_id, label, review, quote, start, end in (
            Citation.objects.filter(turn__dialogue_id__in=dialogue_pks).order_by("position")
            .values_list("turn_id", "label", "review__external_id", "quote", "start", "end")):
        citations[turn_id].append({"label": label, "review_id": review, "quote": quote,
                                   "start": start, "end": end})
    records = []
    for pk in dialogue_pks:
        external_id, split, scenario = head[pk]
        records.append({
            "id": external_id, "split": split, "scenario": scenario,
            "candidate_item_ids": pool[pk]["candidate"], "target_item_ids": pool[pk]["target"],
            "seen_item_ids": pool[pk]["seen"],
            "turns": [{"index": index, "role": role, "text": text, "action": action,
                       "referenced_item_ids": turn_items[turn_pk]["referenced"],
                       "citations": citations[turn_pk],
                       "gold_item_ids": turn_items[turn_pk]["gold"],
                       "alternative_item_ids": turn_items[turn_pk]["alternative"]}
                      for turn_pk, _, index, role, text, action in turns[pk]],
        })
    return records


def run_cluster_sums(*, run) -> ClusterSums:
    """Per metric: dialogue ids, the sum and count of the run's values on each, and the sum of
    the squares of all its values.

    A run scored in chunks has them stored on its chunks (each reduced its own values): they
    are merged. Otherwise (a run of an LLM evaluator, or chunks stored before they carried
    their sums) the database reduces the unit values in one grouped query.
    """
    merged = chunked_runs_cluster_sums(run_ids=[run.pk])
    if run.pk in merged:
        return merged[run.pk]
    rows = (UnitScore.objects.filter(run=run).exclude(value=None)
            .values_list("metric", "dialogue_id")
            .annotate(total=Sum("value"), n=Count("value"), squares=Sum(F("value") * F("value")))
            .order_by())
    sums: dict[str, tuple[list, list, list, list]] = defaultdict(lambda: ([], [], [], [0.0]))
    for metric, dialogue_id, total, n, squares in rows:
        clusters, totals, counts, square_sum = sums[metric]
        clusters.append(dialogue_id)
        totals.append(total)
        counts.append(n)
        square_sum[0] += squares
    return {metric: (c, t, n, q[0]) for metric, (c, t, n, q) in sums.items()}


def chunked_runs_cluster_sums(*, run_ids) -> dict[int, ClusterSums]:
    """`run_cluster_sums` of those of RUN_IDS whose every chunk stored its reduction (one
    query); the other runs are left out."""
    parts: dict[int, list] = defaultdict(list)
    for run_id, part in RunChunk.objects.filter(run_id__in=run_ids).values_list(
            "run_id", "cluster_sums"):
        parts[run_id].append(part)
    return {run_id: merge_cluster_sums(stored) for run_id, stored in parts.items()
            if all(part is not None for part in stored)}


def chunk_dialogue_records(*, run, dialogue) -> list[dict] | None:
    """The run's submission lines for DIALOGUE, read by the byte ranges of the chunk that holds
    it (about 1,000 answered turns) instead of the whole file; None when no chunk of RUN holds
    it (a run made before chunks, an LLM run), and the caller reads the file."""
    for dialogue_ids, line_ranges in run.chunks.values_list("dialogue_ids", "line_ranges"):
        if dialogue.pk in dialogue_ids:
            # A line of this dialogue holds its id as a JSON string: only those are parsed.
            needle = json.dumps(dialogue.external_id).encode()
            buffer = io.BytesIO()
            with run.submission.file.open("rb") as handle:
                for start, end in line_ranges:
                    handle.seek(start)
                    for line in handle.read(end - start).splitlines(keepends=True):
                        if needle in line:
                            buffer.write(line)
            buffer.seek(0)
            return [record for record in iter_turn_records(buffer)
                    if record["dialogue_id"] == dialogue.external_id]
    return None
