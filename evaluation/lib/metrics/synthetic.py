"""Deterministic synthetic inputs for timing the Trace metric suite (shapes as in the Trace paper).

The generator mimics Trace's structure: cities × three item types, several reviews per item,
8-item candidate pools, dialogues with four recommend/compare system turns and one
reject_and_refine, and responses that quote their cited reviews (mostly verbatim, sometimes
altered) with ``[Rn]`` labels and aspect terms. Every text is distinct, so no cache can flatter
the measured speed. Run ``python -m evaluation.lib.metrics.synthetic 10000 100000`` for figures.
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass

from evaluation.lib.metrics.suite import SuiteConfig, evaluate_submission
from evaluation.lib.metrics.types import (
    Citation,
    ItemInfo,
    ReferenceDialogue,
    ReferenceTurn,
    ReviewInfo,
    SubmittedTurn,
)

CITIES = {
    "Philadelphia": (39.9526, -75.1652),
    "Tampa": (27.9506, -82.4572),
    "Nashville": (36.1627, -86.7816),
    "New Orleans": (29.9511, -90.0715),
    "Tucson": (32.2226, -110.9747),
    "Reno": (39.5296, -119.8138),
    "Boise": (43.6150, -116.2023),
    "Indianapolis": (39.7684, -86.1581),
}
TYPES = ("restaurant", "hotel", "attraction")
REC_TURNS_PER_DIALOGUE = 4
ITEMS_PER_CITY_TYPE = 24
REVIEWS_PER_ITEM = 4

_WORDS = (
    "the a staff room table view food night menu place service quick friendly slow loud warm "
    "fresh crispy spicy sweet bright clean small large walk block street corner river park "
    "downtown museum tour garden patio bar lobby pool bed breakfast coffee seafood wine vegan "
    "quiet cozy romantic parking wifi cheap upscale affordable tasty great lovely decent "
    "excellent friendly noisy busy calm historic scenic lively casual elegant trendy"
).split()


@dataclass(frozen=True)
class SyntheticInputs:
    """Everything :func:`evaluate_submission` needs, for ``n_turns`` evaluated system turns."""

    dialogues: list[ReferenceDialogue]
    items: list[ItemInfo]
    reviews: list[ReviewInfo]
    submitted_turns: list[SubmittedTurn]


def _sentence(rng: random.Random, length: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(length))


def _catalogue(rng: random.Random) -> tuple[list[ItemInfo], dict[str, list[ReviewInfo]]]:
    items, reviews = [], {}
    for city, (lat, lon) in CITIES.items():
        for item_type in TYPES:
            for n in range(ITEMS_PER_CITY_TYPE):
                item_id = f"{city[:3].lower()}-{item_type[:1]}{n}"
                price = None if item_type == "attraction" else rng.randint(1, 4)
                items.append(
                    ItemInfo(
                        item_id,
                        item_type,
                        city,
                        lat + rng.gauss(0, 0.02),
                        lon + rng.gauss(0, 0.02),
                        price,
                        f"Place {item_id}",
                    )
                )
                reviews[item_id] = [
                    ReviewInfo(f"{item_id}-r{j}", item_id, _sentence(rng, 60) + ".")
                    for j in range(REVIEWS_PER_ITEM)
                ]
    return items, reviews


def _quote_from(rng: random.Random, review: ReviewInfo, verbatim: bool) -> str:
    words = review.text.rstrip(".").split()
    start = rng.randrange(0, len(words) - 10)
    span = words[start : start + rng.randint(6, 10)]
    if not verbatim:
        span[rng.randrange(len(span))] = rng.choice(_WORDS)
    return " ".join(span)


def _response(rng: random.Random, gold: ItemInfo, cited: list[ReviewInfo]) -> str:
    parts = [f"I recommend {gold.name}, {_sentence(rng, 12)}."]
    for label, review in enumerate(cited, start=1):
        quote = _quote_from(rng, review, verbatim=rng.random() < 0.85)
        parts.append(f'One guest wrote "{quote}" [R{label}] and {_sentence(rng, 10)}.')
    parts.append(f"It is {rng.choice(['quiet', 'cozy', 'lively'])} with {_sentence(rng, 8)}.")
    return " ".join(parts)


def _dialogue(
    rng: random.Random, number: int, pool: list[ItemInfo], reviews: dict[str, list[ReviewInfo]]
) -> tuple[ReferenceDialogue, list[SubmittedTurn]]:
    dialogue_id = f"syn-{number}"
    budget = rng.choice(["cheap", "moderate", "upscale", "no fuss"])
    user_actions = ["provide_preference", "reject_and_refine", "ask_detail", "provide_preference"]
    turns: list[ReferenceTurn] = [
        ReferenceTurn(
            0, "user", f"Hi, looking for something {budget}. {_sentence(rng, 8)}", "greet_and_seek"
        ),
    ]
    submitted = []
    for slot in range(REC_TURNS_PER_DIALOGUE):
        gold = rng.choice(pool)
        alternatives = tuple(
            item.id for item in rng.sample(pool, rng.randint(0, 2)) if item != gold
        )
        index = len(turns)
        action = "compare" if slot == 2 else "recommend"
        turns.append(
            ReferenceTurn(
                index, "system", _sentence(rng, 40), action, (gold.id,), alternatives, (gold.id,)
            )
        )
        turns.append(ReferenceTurn(index + 1, "user", _sentence(rng, 10), user_actions[slot]))
        ranked = [item.id for item in pool]
        rng.shuffle(ranked)
        cited = rng.sample(reviews[gold.id], 2)
        submitted.append(
            SubmittedTurn(
                dialogue_id,
                index,
                _response(rng, gold, cited),
                tuple(ranked),
                tuple(Citation(f"R{n}", review.id) for n, review in enumerate(cited, start=1)),
            )
        )
    dialogue = ReferenceDialogue(
        dialogue_id, "test", {"city": pool[0].city}, tuple(item.id for item in pool), tuple(turns)
    )
    return dialogue, submitted


def generate_inputs(n_turns: int, seed: int = 42) -> SyntheticInputs:
    """Synthetic benchmark + submission with ``n_turns`` evaluated system turns (rounded up to
    whole dialogues of four)."""
    rng = random.Random(seed)
    items, reviews = _catalogue(rng)
    groups: dict[tuple[str | None, str], list[ItemInfo]] = {}
    for item in items:
        groups.setdefault((item.city, item.type), []).append(item)
    keys = sorted(groups, key=str)
    dialogues, submitted = [], []
    for number in range(-(-n_turns // REC_TURNS_PER_DIALOGUE)):
        pool = rng.sample(groups[keys[number % len(keys)]], 8)
        dialogue, turns = _dialogue(rng, number, pool, reviews)
        dialogues.append(dialogue)
        submitted.extend(turns)
    all_reviews = [review for item_reviews in reviews.values() for review in item_reviews]
    return SyntheticInputs(dialogues, items, all_reviews, submitted)


def time_suite(n_turns: int, *, text_metrics: bool = True, seed: int = 42) -> dict[str, float]:
    """Time :func:`evaluate_submission` alone (not input generation) on ``n_turns`` turns.

    ``turns_per_second`` divides by this process's CPU time, i.e. throughput per core, which
    stays meaningful on a busy machine; ``wall_seconds`` is reported beside it.
    """
    inputs = generate_inputs(n_turns, seed)
    config = SuiteConfig(text_metrics=text_metrics)
    wall_start, cpu_start = time.perf_counter(), time.process_time()
    result = evaluate_submission(
        inputs.dialogues, inputs.items, inputs.reviews, inputs.submitted_turns, config
    )
    cpu_seconds = time.process_time() - cpu_start
    wall_seconds = time.perf_counter() - wall_start
    turns = len(inputs.submitted_turns)
    return {
        "turns": turns,
        "cpu_seconds": cpu_seconds,
        "wall_seconds": wall_seconds,
        "turns_per_second": turns / cpu_seconds,
        "values": len(result.values),
        "text_metrics": text_metrics,
    }


def main(argv: list[str]) -> None:
    """Print throughput for each turn count given on the command line (default 10k, 100k)."""
    for n_turns in [int(arg) for arg in argv] or [10_000, 100_000]:
        for text_metrics in (True, False):
            report = time_suite(n_turns, text_metrics=text_metrics)
            print(
                f"{report['turns']:>7} turns  text_metrics={text_metrics!s:<5}  "
                f"{report['cpu_seconds']:7.2f} s CPU  {report['wall_seconds']:7.2f} s wall  "
                f"{report['turns_per_second']:8.0f} turns/s/core"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
