"""Constraints, dialogue plans and candidate pools of the demo dialogues."""

from __future__ import annotations

import random
from dataclasses import dataclass

from evaluation.lib.demo.vocabulary import (
    ASPECTS,
    BUDGET_PRICE_RANGE,
    PERSONA_CATEGORIES,
    PERSONAS,
    POOL_SIZE,
)

# --------------------------------------------------------------------------------------------
# Constraints
# --------------------------------------------------------------------------------------------

# A constraint is a (kind, value) tuple: ("category", "Italian"), ("budget", "cheap"),
# ("aspect", "parking"), ("noise", "quiet"|"lively"), ("neighborhood", "Fishtown").
HARD_KINDS = ("category", "budget")


def _satisfies(item: dict, constraint: tuple) -> bool:
    kind, value = constraint
    attrs = item["attributes"]
    if kind == "category":
        return item["categories"][0] == value
    if kind == "budget":
        low, high = BUDGET_PRICE_RANGE[value]
        return low <= item["price_level"] <= high
    if kind == "aspect":
        return attrs.get(value) is True
    if kind == "noise":
        return attrs["noise"] == ("quiet" if value == "quiet" else "loud")
    return attrs["neighborhood"] == value


def _n_satisfied(item: dict, constraints) -> int:
    return sum(1 for c in constraints if _satisfies(item, c))


def _span_tag(constraint: tuple) -> str:
    kind, value = constraint
    return {"category": "category", "budget": "price", "neighborhood": "location"}.get(
        kind, value)


def _budget_word(rng: random.Random, price: int) -> str:
    options = {1: ("cheap", "cheap", "affordable"), 2: ("affordable", "affordable", "cheap"),
               3: ("moderate", "moderate", "upscale"), 4: ("upscale", "luxury")}
    return rng.choice(options[price])


def _target_constraints(rng: random.Random, target: dict) -> list[tuple]:
    """All constraints the target satisfies, in a stable order."""
    attrs = target["attributes"]
    found = [("category", target["categories"][0]),
             ("budget", _budget_word(rng, target["price_level"]))]
    found += [("aspect", a) for a in ASPECTS[target["type"]] if attrs[a]]
    if attrs["noise"] == "quiet":
        found.append(("noise", "quiet"))
    elif attrs["noise"] == "loud":
        found.append(("noise", "lively"))
    found.append(("neighborhood", attrs["neighborhood"]))
    return found


def _persona_constraint(key: str, persona: str, target: dict) -> tuple | None:
    """The constraint a persona key stands for, if the target satisfies it."""
    if key.startswith("budget:"):
        word = key.split(":", 1)[1]
        constraint = ("budget", word)
    elif key == "category":
        kind = target["categories"][0]
        return ("category", kind) if kind in PERSONA_CATEGORIES.get(persona, ()) else None
    elif key in ("quiet", "lively"):
        constraint = ("noise", key)
    else:
        constraint = ("aspect", key)
    return constraint if _satisfies(target, constraint) else None


def _pick_persona(rng: random.Random, target: dict) -> tuple[str, str, tuple | None]:
    fitting, generic = [], []
    for name, intro, keys in PERSONAS[target["type"]]:
        if not keys:
            generic.append((name, intro, None))
        for key in keys:
            constraint = _persona_constraint(key, name, target)
            if constraint:
                fitting.append((name, intro, constraint))
    if fitting and rng.random() < 0.75:
        return rng.choice(fitting)
    return rng.choice(generic)


@dataclass
class _Plan:
    constraints: list          # every constraint, in the order the user states it
    opening: list              # stated in the greeting
    rounds: list               # one list per provide_preference turn
    rejections: list           # one reason per reject_and_refine turn
    decoys: list               # the item rejected for each reason
    twins: int = 0             # other items in the city/type satisfying everything


@dataclass
class _Shape:
    n_constraints: int
    n_rejections: int
    n_rounds: int
    final_compare: bool
    followup: str | None       # None, "compare" or "detail"


def _pick_shape(rng: random.Random, difficulty: str) -> _Shape:
    final_compare = rng.random() < 0.35
    if difficulty == "easy":
        shape = _Shape(3, 1, 1, final_compare, rng.choice((None, None, "compare", "detail")))
    elif difficulty == "medium":
        rounds = rng.choice((1, 2))
        options = ("compare", "detail") if rounds == 1 else (None, "compare", "detail")
        shape = _Shape(4, 1, rounds, final_compare, rng.choice(options))
    else:
        rejections, rounds, followup = rng.choice(
            ((2, 2, None), (2, 1, "compare"), (2, 1, "detail"), (1, 2, "compare")))
        shape = _Shape(5, rejections, rounds, final_compare, followup)
    if shape.final_compare and shape.followup == "compare":
        shape.followup = "detail"  # one comparison of the same pair is enough
    return shape


def _plan(rng, target, group, shape, persona_c, solo=False) -> _Plan | None:
    """Choose constraints, rejection reasons and decoys; prefer plans where the target is unique."""
    best = None
    for n_constraints in range(shape.n_constraints, 1, -1):
        for _ in range(60):
            plan = _try_plan(rng, target, group, shape, persona_c, n_constraints, solo)
            if plan and (best is None or plan.twins < best.twins):
                best = plan
            if best and best.twins == 0:
                return best
        if best:
            return best
    return None


def _relaxed_shapes(shape: _Shape) -> list[_Shape]:
    """The planned shape, then simpler ones for targets whose catalogue neighbours do not allow
    it (for example when no item differs from the target in exactly the right way)."""
    one_rejection = _Shape(shape.n_constraints, 1, shape.n_rounds, shape.final_compare,
                           shape.followup or "compare")
    minimal = _Shape(3, 1, 1, shape.final_compare, shape.followup)
    return [shape, one_rejection, minimal]


def _try_plan(rng, target, group, shape, persona_c, n_constraints, solo) -> _Plan | None:
    chosen = _sample_constraints(rng, target, n_constraints, persona_c, solo)
    rejectable = [c for c in chosen if c != persona_c]
    if len(rejectable) < shape.n_rejections:
        return None
    # "Not in the mood for that kind of place" is the easiest rejection to stage, so it is
    # down-weighted to keep reasons varied (aspects, noise, neighbourhood, price).
    rejectable.sort(key=lambda c: rng.random() * (2.5 if c[0] == "category" else 1.0))
    rejections = rejectable[: shape.n_rejections]
    pre = [c for c in chosen if c not in rejections]
    # Alternatives need a soft constraint to differ on; otherwise they would tie with the target.
    if not any(c[0] not in HARD_KINDS for c in pre):
        return None
    if any(c[0] == "budget" and c[1] in ("upscale", "luxury") for c in rejections):
        return None  # "too cheap" is not a reason travellers give
    decoys = _find_decoys(rng, target, group, pre, rejections)
    if decoys is None or not _alternatives_exist(target, group, chosen, rejections, decoys):
        return None
    opening, rounds = _schedule(rng, pre, persona_c, shape.n_rounds)
    if rounds is None:
        return None
    twins = sum(1 for it in group if it is not target and _n_satisfied(it, chosen) == len(chosen))
    ordered = opening + [c for r in rounds for c in r] + rejections
    return _Plan(ordered, opening, rounds, rejections, decoys, twins)


def _sample_constraints(rng, target, n_constraints, persona_c, solo) -> list[tuple]:
    options = _target_constraints(rng, target)
    if solo:  # someone travelling alone does not ask for a kids menu
        options = [c for c in options if c != ("aspect", "family_friendly")]
    if persona_c:
        options = [c for c in options if c[0] != persona_c[0] or c[0] in ("aspect", "noise")]
        options = [c for c in options if c != persona_c]
    chosen = [persona_c] if persona_c else []
    for kind, rate in (("category", 0.8), ("budget", 0.85)):
        match = [c for c in options if c[0] == kind]
        if match and rng.random() < rate and len(chosen) < n_constraints:
            chosen.append(match[0])
    rest = [c for c in options if c[0] not in HARD_KINDS]
    rng.shuffle(rest)
    chosen += rest[: max(0, n_constraints - len(chosen))]
    return chosen


def _find_decoys(rng, target, group, pre, rejections) -> list | None:
    """One plausible item per rejection: it fits what was said so far but not the new reason."""
    decoys: list = []
    known = list(pre)
    for reason in rejections:
        fits = [it for it in group
                if it is not target and it not in decoys
                and _n_satisfied(it, known) == len(known) and not _satisfies(it, reason)]
        if not fits:
            return None
        decoys.append(rng.choice(fits))
        known.append(reason)
    return decoys


def _alternatives_exist(target, group, chosen, rejections, decoys) -> bool:
    hard = [c for c in chosen if c[0] in HARD_KINDS or c in rejections]
    return any(_is_alternative(it, target, chosen, hard, decoys)
               and _n_satisfied(it, chosen) < len(chosen) for it in group)


def _is_alternative(item, target, stated, hard, rejected) -> bool:
    """Acceptable instead of the target: meets every hard constraint and all but one overall."""
    if item is target or item in rejected:
        return False
    if not all(_satisfies(item, c) for c in hard):
        return False
    return _n_satisfied(item, stated) >= max(1, len(stated) - 1)


def _schedule(rng, pre, persona_c, n_rounds) -> tuple[list, list | None]:
    """Spread the pre-rejection constraints over the greeting and the elicitation rounds."""
    rest = list(pre)
    opening = []
    if persona_c and len(rest) > n_rounds:
        opening.append(persona_c)
        rest.remove(persona_c)
    elif persona_c:
        rest.remove(persona_c)
        rest.insert(0, persona_c)
    if len(rest) < n_rounds:
        return opening, None
    # Category and budget come first: it is what the system asks about first.
    rest.sort(key=lambda c: 0 if c[0] in HARD_KINDS else 1)
    rounds = [[] for _ in range(n_rounds)]
    for i, constraint in enumerate(rest):
        rounds[min(i * n_rounds // len(rest), n_rounds - 1)].append(constraint)
    if any(not r for r in rounds):
        return opening, None
    return opening, rounds


# --------------------------------------------------------------------------------------------
# Candidate pool
# --------------------------------------------------------------------------------------------


def _build_pool(rng, target, group, plan: _Plan, difficulty: str) -> list[dict]:
    constraints = plan.constraints
    hard = [c for c in constraints if c[0] in HARD_KINDS or c in plan.rejections]
    alternatives = [it for it in group
                    if _is_alternative(it, target, constraints, hard, plan.decoys)
                    and _n_satisfied(it, constraints) < len(constraints)]
    rng.shuffle(alternatives)
    n_alt = min(len(alternatives), {"easy": 1, "medium": rng.choice((1, 2)),
                                    "hard": rng.choice((2, 3))}[difficulty])
    pool = [target, *plan.decoys, *alternatives[:n_alt]]
    # Items that satisfy every constraint would tie with the gold, so they stay out of the pool.
    others = [it for it in group if it not in pool
              and _n_satisfied(it, constraints) < len(constraints)]
    rng.shuffle(others)
    # Stable sort keeps the shuffled order among equal overlaps, so ties are broken at random.
    others.sort(key=lambda it: _n_satisfied(it, constraints),
                reverse=difficulty == "hard")
    need = POOL_SIZE - len(pool)
    if difficulty == "medium":
        picked = others[:need // 2] + others[len(others) - (need - need // 2):]
    else:
        picked = others[:need]
    pool += picked
    rng.shuffle(pool)
    return pool


def _turn_alternatives(pool, target, stated, rejections, rejected) -> list[str]:
    hard = [c for c in stated if c[0] in HARD_KINDS or c in rejections]
    ranked = [(-_n_satisfied(it, stated), pos, it["id"]) for pos, it in enumerate(pool)
              if _is_alternative(it, target, stated, hard, rejected)]
    ranked.sort()
    return [item_id for _, _, item_id in ranked[:3]]


# --------------------------------------------------------------------------------------------
