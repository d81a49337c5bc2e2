"""Reads for benchmarks: the bundle of a stored benchmark, page summaries, dialogue views."""

from collections import Counter, defaultdict

from django.db.models import Count

from .formats.bundle import Bundle
from .highlight import quote_segments, span_segments
from .models import (
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


def _dialogue_records(benchmark, item_ids, review_ids) -> list[dict]:
    dialogues = list(benchmark.dialogues.order_by("pk"))
    pool = defaultdict(lambda: defaultdict(list))
    for link in DialogueItem.objects.filter(dialogue__benchmark=benchmark).order_by("position"):
        pool[link.dialogue_id][link.role].append(item_ids[link.item_id])
    turns = defaultdict(list)
    for turn in Turn.objects.filter(dialogue__benchmark=benchmark).order_by("index"):
        turns[turn.dialogue_id].append(turn)
    turn_items = defaultdict(lambda: defaultdict(list))
    for link in TurnItem.objects.filter(turn__dialogue__benchmark=benchmark).order_by("position"):
        turn_items[link.turn_id][link.role].append(item_ids[link.item_id])
    citations = defaultdict(list)
    for c in Citation.objects.filter(turn__dialogue__benchmark=benchmark).order_by("position"):
        citations[c.turn_id].append({"label": c.label, "review_id": review_ids[c.review_id],
                                     "quote": c.quote, "start": c.start, "end": c.end})
    records = []
    for d in dialogues:
        records.append({
            "id": d.external_id, "split": d.split, "scenario": d.scenario,
            "candidate_item_ids": pool[d.pk]["candidate"],
            "target_item_ids": pool[d.pk]["target"], "seen_item_ids": pool[d.pk]["seen"],
            "turns": [{"index": t.index, "role": t.role, "text": t.text, "action": t.action,
                       "referenced_item_ids": turn_items[t.pk]["referenced"],
                       "citations": citations[t.pk],
                       "gold_item_ids": turn_items[t.pk]["gold"],
                       "alternative_item_ids": turn_items[t.pk]["alternative"]}
                      for t in turns[d.pk]],
        })
    return records


def benchmark_summary(*, benchmark: Benchmark, include_hidden: bool) -> dict:
    """Counts for the benchmark page: splits, difficulty mix, item types, cities, turns."""
    dialogues = benchmark.dialogues.all()
    splits = dict(dialogues.values_list("split").annotate(n=Count("id")).order_by("split"))
    difficulty = Counter(dict(
        dialogues.exclude(difficulty=None).values_list("difficulty").annotate(n=Count("id"))
    ))
    items = benchmark.items.all()
    types = dict(items.values_list("type").annotate(n=Count("id")).order_by("-n", "type"))
    cities = dict(
        items.exclude(city=None).values_list("city").annotate(n=Count("id")).order_by("-n", "city")
    )
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
        "scenario_rows": scenario_rows(dialogue.scenario),
        "turns": [_turn_view(t, by_turn_items[t.pk], by_turn_citations[t.pk]) for t in turns],
        "candidates": pool["candidate"],
        "targets": pool["target"],
        "cited_reviews": _cited_reviews(by_turn_citations),
    }


def scenario_rows(scenario: dict) -> list[tuple[str, str]]:
    """Flatten a free-form scenario dict into readable (key, text) rows; list entries that are
    objects go on lines of their own."""

    def text(value) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{k.replace('_', ' ')}: {text(v)}" for k, v in value.items()
                             if v not in (None, "", [], {}))
        if isinstance(value, list):
            joiner = "\n" if any(isinstance(v, dict) for v in value) else ", "
            return joiner.join(text(v) for v in value)
        return str(value)

    return [(key.replace("_", " "), text(value)) for key, value in scenario.items()]


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
    return {"item": item, "reviews": list(item.reviews.order_by("external_id"))}
