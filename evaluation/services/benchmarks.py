"""Writes for benchmarks: import a validated bundle atomically, export it back (formats.md §1)."""

import logging
from pathlib import Path

from django.conf import settings
from django.db import transaction

from evaluation.lib.formats.bundle import Bundle, read_bundle, write_bundle
from evaluation.lib.formats.errors import FormatError, FormatIssue
from evaluation.lib.progress import Progress, no_progress
from evaluation.models import (
    BENCHMARK_FIELDS,
    ITEM_FIELDS,
    Benchmark,
    Citation,
    Dialogue,
    DialogueItem,
    Item,
    Review,
    Turn,
    TurnItem,
)
from evaluation.selectors.benchmarks import benchmark_bundle
from evaluation.services.downloads import benchmark_downloads_delete
from evaluation.services.jobs import task_enqueue

logger = logging.getLogger(__name__)


def benchmark_import(*, path: Path, replace: bool = False, owner=None,
                     progress: Progress = no_progress) -> Benchmark:
    """Validate the bundle at PATH fully, then store all of it in one transaction."""
    bundle = read_bundle(Path(path), max_bytes=settings.MAX_UPLOAD_BYTES,
                         max_total_bytes=settings.MAX_BUNDLE_BYTES)
    return benchmark_create_from_bundle(bundle=bundle, replace=replace, owner=owner,
                                        progress=progress)


@transaction.atomic
def benchmark_create_from_bundle(*, bundle: Bundle, replace: bool = False, owner=None,
                                 progress: Progress = no_progress) -> Benchmark:
    meta = bundle.benchmark
    existing = Benchmark.objects.select_for_update().filter(slug=meta["slug"]).first()
    if existing and not replace:
        raise FormatError([FormatIssue("benchmark.json", None, "$.slug",
                                       f"benchmark {meta['slug']!r} already exists "
                                       "(use --replace to overwrite it)")])
    if existing:
        benchmark_delete(benchmark=existing)
    benchmark = Benchmark.objects.create(
        slug=meta["slug"], owner=owner,
        **{key: meta.get(key, "") for key in BENCHMARK_FIELDS},
    )
    items = _create_items(benchmark, bundle.items)
    progress("items", len(items), len(items))
    reviews = _create_reviews(benchmark, bundle.reviews, items)
    progress("reviews", len(reviews), len(reviews))
    _create_dialogues(benchmark, bundle.dialogues, items, reviews, progress)
    task_enqueue("evaluation.tasks.build_downloads_job", benchmark.pk)
    return benchmark


def benchmark_delete(*, benchmark: Benchmark) -> None:
    """Delete a benchmark and everything in it, whatever its size.

    Through the ORM alone, deleting a 10,000-dialogue benchmark fails: the cascade collects the
    primary keys of its 50,000 turns and their links into statements with more than 65,535
    parameters (PostgreSQL's limit). The turn-level tables, which only this app references, go
    first with one DELETE each (a subquery on the benchmark, no signals: they have none); the
    ORM's cascade then handles the rest, which other apps may reference.
    """
    with transaction.atomic():
        turns = Turn.objects.filter(dialogue__benchmark=benchmark)
        for queryset in (Citation.objects.filter(turn__in=turns),
                         TurnItem.objects.filter(turn__in=turns), turns,
                         DialogueItem.objects.filter(dialogue__benchmark=benchmark)):
            queryset._raw_delete(queryset.db)
        benchmark_downloads_delete(benchmark=benchmark)
        benchmark.delete()


def _create_items(benchmark, records) -> dict[str, int]:
    objs = Item.objects.bulk_create(
        [Item(benchmark=benchmark, external_id=r["id"], **{k: r.get(k) for k in ITEM_FIELDS})
         for r in records],
        batch_size=1000,
    )
    return {obj.external_id: obj.pk for obj in objs}


def _create_reviews(benchmark, records, items) -> dict[str, int]:
    objs = Review.objects.bulk_create(
        [Review(benchmark=benchmark, external_id=r["id"], item_id=items[r["item_id"]],
                text=r["text"], stars=r.get("stars")) for r in records],
        batch_size=1000,
    )
    return {obj.external_id: obj.pk for obj in objs}


def _create_dialogues(benchmark, records, items, reviews, progress: Progress) -> None:
    batch = 200
    for offset in range(0, len(records), batch):
        chunk = records[offset:offset + batch]
        dialogues = Dialogue.objects.bulk_create([
            Dialogue(benchmark=benchmark, external_id=r["id"], split=r["split"],
                     scenario=r.get("scenario", {}),
                     difficulty=_difficulty(r.get("scenario", {})))
            for r in chunk
        ])
        links, turns, turn_records = [], [], []
        for dialogue, record in zip(dialogues, chunk, strict=True):
            for role, key in (("candidate", "candidate_item_ids"), ("target", "target_item_ids"),
                              ("seen", "seen_item_ids")):
                links += [DialogueItem(dialogue=dialogue, item_id=items[item_id], role=role,
                                       position=position)
                          for position, item_id in enumerate(record.get(key, []))]
            for turn in record["turns"]:
                turns.append(Turn(dialogue=dialogue, index=turn["index"], role=turn["role"],
                                  text=turn["text"], action=turn["action"]))
                turn_records.append(turn)
        DialogueItem.objects.bulk_create(links, batch_size=2000)
        Turn.objects.bulk_create(turns, batch_size=2000)
        _create_turn_links(turns, turn_records, items, reviews)
        progress("dialogues", offset + len(chunk), len(records))


def _create_turn_links(turns, turn_records, items, reviews) -> None:
    links, citations = [], []
    for turn, record in zip(turns, turn_records, strict=True):
        for role, key in (("referenced", "referenced_item_ids"), ("gold", "gold_item_ids"),
                          ("alternative", "alternative_item_ids")):
            links += [TurnItem(turn=turn, item_id=items[item_id], role=role, position=position)
                      for position, item_id in enumerate(record.get(key, []))]
        citations += [Citation(turn=turn, position=position, label=c["label"],
                               review_id=reviews[c["review_id"]], quote=c["quote"],
                               start=c["start"], end=c["end"])
                      for position, c in enumerate(record.get("citations", []))]
    TurnItem.objects.bulk_create(links, batch_size=2000)
    Citation.objects.bulk_create(citations, batch_size=2000)


def _difficulty(scenario: dict) -> str | None:
    value = scenario.get("difficulty") or scenario.get("difficulty_tier")
    return str(value)[:30] if value is not None else None


def benchmark_export(*, benchmark: Benchmark, directory: Path) -> None:
    write_bundle(benchmark_bundle(benchmark=benchmark), Path(directory))
