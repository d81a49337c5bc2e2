"""Choosing what a study judges: a seeded sample of dialogue turns, optionally stratified.

Trace's human study (§7.1 and Appendix K) judged 30 dialogues x 3 systems: the same
turn of the same dialogue answered by every system (a paired design). That is the default here.
`stratify="difficulty"` keeps the difficulty mix of the eligible dialogues (proportional
allocation, largest remainders); `stratify="system"` samples SIZE turns per system independently,
for submissions that do not all answer the same turns.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass

NONE, DIFFICULTY, SYSTEM = "", "difficulty", "system"


@dataclass(frozen=True)
class Unit:
    """A dialogue turn that can be judged, and which sources answered it."""

    dialogue: str
    turn_index: int
    difficulty: str
    sources: frozenset[str]


@dataclass(frozen=True)
class Pick:
    dialogue: str
    turn_index: int
    sources: tuple[str, ...]


def proportional_allocation(counts: dict[str, int], size: int) -> dict[str, int]:
    """Split SIZE over strata proportionally to COUNTS (largest remainders, capped by counts)."""
    total = sum(counts.values())
    size = min(size, total)
    if total == 0 or size == 0:
        return dict.fromkeys(counts, 0)
    exact = {k: size * n / total for k, n in counts.items()}
    alloc = {k: min(int(v), counts[k]) for k, v in exact.items()}
    order = sorted(counts, key=lambda k: (-(exact[k] - int(exact[k])), k))
    while sum(alloc.values()) < size:
        for key in order:
            if sum(alloc.values()) >= size:
                break
            if alloc[key] < counts[key]:
                alloc[key] += 1
    return alloc


def _one_turn_per_dialogue(units: list[Unit], rng: random.Random) -> list[Unit]:
    by_dialogue: dict[str, list[Unit]] = defaultdict(list)
    for unit in units:
        by_dialogue[unit.dialogue].append(unit)
    return [rng.choice(sorted(group, key=lambda u: u.turn_index))
            for _, group in sorted(by_dialogue.items())]


def sample_units(units: list[Unit], *, sources: list[str], size: int, seed: int,
                 stratify: str = NONE) -> list[Pick]:
    """At most SIZE dialogues (one turn each), or SIZE turns per source when stratify=system."""
    rng = random.Random(seed)
    wanted = sorted(set(sources))
    if stratify == SYSTEM:
        picks = []
        for source in wanted:
            answered = [u for u in units if source in u.sources]
            chosen = _one_turn_per_dialogue(answered, rng)
            rng.shuffle(chosen)
            picks += [Pick(u.dialogue, u.turn_index, (source,)) for u in chosen[:size]]
        return sorted(picks, key=lambda p: (p.dialogue, p.turn_index, p.sources))
    paired = [u for u in units if set(wanted) <= u.sources]
    candidates = _one_turn_per_dialogue(paired, rng)
    if stratify == DIFFICULTY:
        strata: dict[str, list[Unit]] = defaultdict(list)
        for unit in candidates:
            strata[unit.difficulty or "unknown"].append(unit)
        alloc = proportional_allocation({k: len(v) for k, v in strata.items()}, size)
        chosen = []
        for key in sorted(strata):
            chosen += rng.sample(strata[key], alloc[key])
    else:
        chosen = rng.sample(candidates, min(size, len(candidates)))
    return sorted((Pick(u.dialogue, u.turn_index, tuple(wanted)) for u in chosen),
                  key=lambda p: (p.dialogue, p.turn_index))
