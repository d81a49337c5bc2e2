"""The demo dialogues: personas, turns, rejections, recommendations and their quotes."""

from __future__ import annotations

import random
import re

from evaluation.lib.demo.catalogue import _article, _Catalogue, _feature_tags, _kind_spec
from evaluation.lib.demo.constraints import (
    _build_pool,
    _pick_persona,
    _pick_shape,
    _plan,
    _relaxed_shapes,
    _satisfies,
    _Shape,
    _span_tag,
    _turn_alternatives,
)
from evaluation.lib.demo.vocabulary import (
    _ASPECT_TAGS,
    BUDGET_PRICE_RANGE,
    DETAIL_QUESTIONS,
    DIFFICULTY_SHARES,
    FAREWELL_NOUNS,
    GUEST_NOUNS,
    ITEMS_PER_CITY_TYPE,
    PERSONAS,
    PREF_SENTENCES,
    REJECT_LEADS,
    SEEKS,
    SOLO_PERSONAS,
    SOLO_VOICE,
    SPLIT_SHARES,
    TYPE_NOUNS,
    USER_NAMES,
)

# Dialogues
# --------------------------------------------------------------------------------------------


def _make_dialogues(rng: random.Random, cat: _Catalogue, count: int | None = None) -> list[dict]:
    # Each item is the target of exactly one dialogue per round; targets are picked without
    # regard to ratings, so popularity carries no information about the gold. Without COUNT
    # there is one round (the demo); with it, rounds follow until COUNT dialogues exist.
    width = 4 if count is None else max(4, len(str(count)) + 1)
    dialogues: list[dict] = []
    number = 0
    while True:
        per_group = []
        for key in sorted(cat.groups):
            targets = list(cat.groups[key])
            rng.shuffle(targets)
            per_group.append(targets)
        ordered = [targets[i] for i in range(ITEMS_PER_CITY_TYPE) for targets in per_group]
        splits = _spread_labels(rng, SPLIT_SHARES, len(ordered))
        tiers = _spread_labels(rng, DIFFICULTY_SHARES, len(ordered))
        for target, split, tier in zip(ordered, splits, tiers, strict=True):
            number += 1
            try:
                builder = _DialogueBuilder(rng, cat, target, tier)
            except NoDialoguePlan:
                # Rare: the catalogue around this target allows no consistent dialogue (no
                # decoy or alternative differs from it in the right way). Skipping it keeps
                # every other dialogue identical; the count stays far above 300.
                continue
            dialogues.append(builder.build(f"dlg-{number:0{width}d}", split))
            if count is not None and len(dialogues) == count:
                return dialogues
        if count is None:
            return dialogues


def _spread_labels(rng: random.Random, shares: dict, total: int) -> list[str]:
    labels: list[str] = []
    for name, share in shares.items():
        labels += [name] * round(share * total)
    first = next(iter(shares))
    while len(labels) < total:
        labels.append(first)
    labels = labels[:total]
    rng.shuffle(labels)
    return labels


def _voice(text: str) -> str:
    """Rewrite a user turn from "we" to "I" for a persona who travels alone."""
    for pattern, replacement in SOLO_VOICE:
        text = re.sub(pattern, replacement, text)
    return text


class NoDialoguePlan(Exception):
    """No consistent dialogue can be written around this target item."""


class _DialogueBuilder:
    """Writes one dialogue: state (constraints stated, items rejected) plus the turns so far."""

    def __init__(self, rng: random.Random, cat: _Catalogue, target: dict, difficulty: str):
        self.rng, self.cat, self.target, self.difficulty = rng, cat, target, difficulty
        self.group = cat.groups[(target["city"], target["type"])]
        self._choose_plan(_pick_persona(rng, target), _pick_shape(rng, difficulty))
        self.pool = _build_pool(rng, target, self.group, self.plan, difficulty)
        self.turns: list[dict] = []
        self.stated: list[tuple] = []
        self.stated_at: list[int] = []
        self.rejected: list[dict] = []
        self.rejections: list[dict] = []

    def _choose_plan(self, persona: tuple, shape: _Shape) -> None:
        generic = next(p for p in PERSONAS[self.target["type"]] if not p[2])
        for name, intro, persona_c in (persona, (generic[0], generic[1], None)):
            for candidate in _relaxed_shapes(shape):
                plan = _plan(self.rng, self.target, self.group, candidate, persona_c,
                             solo=name in SOLO_PERSONAS)
                if plan:
                    self.persona, self.intro, self.shape, self.plan = name, intro, candidate, plan
                    return
        raise NoDialoguePlan(self.target["id"])

    # -- assembly ---------------------------------------------------------------------------

    def build(self, dialogue_id: str, split: str) -> dict:
        self._opening()
        for reason, decoy in zip(self.plan.rejections, self.plan.decoys, strict=True):
            self._recommend(decoy, after_rejection=bool(self.rejected))
            self._reject(decoy, reason)
        final_alternatives = self._alternatives()
        runner_up = self.cat.by_id[final_alternatives[0]]
        if self.shape.final_compare:
            self._compare(runner_up, after_rejection=True)
        else:
            self._recommend(self.target, after_rejection=True)
        if self.shape.followup == "compare":
            self._add("user", "ask_detail", self._text_runner_up_question(), [self.target])
            self._compare(runner_up, after_rejection=False)
        elif self.shape.followup == "detail":
            self._detail()
        self._closing()
        return {
            "id": dialogue_id,
            "split": split,
            "scenario": self._scenario(),
            "candidate_item_ids": [it["id"] for it in self.pool],
            "target_item_ids": [self.target["id"], *final_alternatives],
            "seen_item_ids": self._seen_items(),
            "turns": self.turns,
        }

    def _add(self, role, action, text, referenced, citations=(), gold=(), alternatives=()):
        if role == "user" and self.persona in SOLO_PERSONAS:
            text = _voice(text)
        self.turns.append({
            "index": len(self.turns), "role": role, "text": text, "action": action,
            "referenced_item_ids": [it["id"] for it in referenced],
            "citations": list(citations), "gold_item_ids": list(gold),
            "alternative_item_ids": list(alternatives),
        })

    def _state(self, constraints) -> None:
        for constraint in constraints:
            self.stated.append(constraint)
            self.stated_at.append(len(self.turns))

    def _alternatives(self) -> list[str]:
        return _turn_alternatives(self.pool, self.target, self.stated,
                                  self.plan.rejections, self.rejected)

    # -- turns --------------------------------------------------------------------------------

    def _opening(self) -> None:
        rng, target = self.rng, self.target
        seek = rng.choice(SEEKS[target["type"]])
        hello = rng.choice(("Hi!", "Hello!", "Hey there.", "Good morning!"))
        text = f"{hello} {self.intro} We're looking for {seek} in {target['city']}."
        extra = self._pref_text(self.plan.opening)
        self._state(self.plan.opening)
        self._add("user", "greet_and_seek", f"{text} {extra}".strip(), [])
        for number, constraints in enumerate(self.plan.rounds):
            self._add("system", "ask_preference", self._question(number), [])
            lead = rng.choice(("", "Sure.", "Let me think.", "Okay.", "Good point."))
            self._state(constraints)
            text = f"{lead} {self._pref_text(constraints)}".strip()
            self._add("user", "provide_preference", text, [])

    def _question(self, number: int) -> str:
        item_type, city = self.target["type"], self.target["city"]
        if number == 0:
            what = {"restaurant": "what kind of food you are in the mood for",
                    "hotel": "what kind of place you like (boutique, B&B, hostel and so on)",
                    "attraction": "what kind of outing you have in mind"}[item_type]
            return self.rng.choice((
                f"Happy to help you find {_article(TYPE_NOUNS[item_type])} in {city}! "
                f"Tell me {what}, and whether you have a price range.",
                f"Welcome to {city}! Could you tell me {what} and roughly what you want to spend?",
            ))
        examples = {"restaurant": "noise level, seating outside, parking or the neighborhood",
                    "hotel": "breakfast, a pool, parking, or the neighborhood",
                    "attraction": "accessibility, being outdoors, parking or the neighborhood"}
        return f"Got it. Anything else that matters, for example {examples[item_type]}?"

    def _pref_text(self, constraints) -> str:
        return " ".join(self._pref_sentence(c) for c in constraints)

    def _pref_sentence(self, constraint: tuple) -> str:
        kind, value = constraint
        if kind == "category":
            key = f"category:{self.target['type']}"
            word = _kind_spec(self.target)["word"]
            template = self.rng.choice(PREF_SENTENCES[key])
            a_word = _article(word)
            return template.format(word=word, Word=word[0].upper() + word[1:], a_word=a_word,
                                   A_word=a_word[0].upper() + a_word[1:])
        if kind == "budget":
            return self.rng.choice(PREF_SENTENCES[f"budget:{value}"])
        if kind == "neighborhood":
            return self.rng.choice(PREF_SENTENCES["neighborhood"]).format(nb=value)
        return self.rng.choice(PREF_SENTENCES[value])

    def _recommend(self, item: dict, after_rejection: bool) -> None:
        rng = self.rng
        alternatives = self._alternatives()
        nb = item["attributes"]["neighborhood"]
        if not after_rejection:
            head = rng.choice((f"How about {item['name']} in {nb}?",
                               f"I'd suggest {item['name']} in {nb}.",
                               f"{item['name']} in {nb} could be a good match."))
        else:
            head = rng.choice((f"Understood. {item['name']} in {nb} should suit you better.",
                               f"Fair point. Then I'd go with {item['name']} in {nb}.",
                               f"In that case, try {item['name']} in {nb}."))
        # The newest constraint (the reason for a rejection) is the first thing to justify.
        n_quotes = 3 if item is self.target else 2
        tags = self._evidence_tags(item, newest_first=after_rejection)[:n_quotes]
        citations, evidence = self._evidence([(item, tag) for tag in tags])
        self._add("system", "recommend", f"{head} {evidence}", [item], citations,
                  [self.target["id"]], alternatives)

    def _evidence_tags(self, item: dict, newest_first: bool) -> list[str]:
        """Feature tags to quote for item: the stated constraints it meets, newest first."""
        stated = [c for c in self.stated if _satisfies(item, c)]
        if newest_first:
            stated = stated[::-1]
        else:
            self.rng.shuffle(stated)
        tags = [_span_tag(c) for c in stated]
        tags = [t for i, t in enumerate(tags) if t not in tags[:i]]
        return tags or ["category"]

    def _reject(self, decoy: dict, reason: tuple) -> None:
        lead = self.rng.choice(REJECT_LEADS)
        kind, value = reason
        if kind == "budget":
            why = f"It looks too pricey. {self._pref_sentence(reason)}"
        elif kind == "category":
            thing = "food" if self.target["type"] == "restaurant" else "place"
            why = f"That's not the kind of {thing} we're after. {self._pref_sentence(reason)}"
        elif kind == "neighborhood":
            where = self.rng.choice(("Ideally in {nb}.", "Somewhere in {nb} would be ideal."))
            why = f"It's too far from where we're staying. {where.format(nb=value)}"
        else:
            why = self._pref_sentence(reason)
        self.rejections.append({"turn_index": len(self.turns), "item_id": decoy["id"],
                                "reason": {"kind": kind, "value": value}})
        self._state([reason])
        self.rejected.append(decoy)
        # The user refers to the decoy as "that one", never by name (see module docstring).
        self._add("user", "reject_and_refine", f"{lead} {why}", [decoy])

    def _compare(self, runner_up: dict, after_rejection: bool) -> None:
        alternatives = self._alternatives()
        target = self.target
        missed = [c for c in self.stated if not _satisfies(runner_up, c)]
        target_tag = _span_tag(missed[-1]) if missed else self._evidence_tags(target, True)[0]
        shared = self._evidence_tags(runner_up, newest_first=True)
        runner_tag = next((t for t in shared if t != target_tag), shared[0])
        citations, _ = self._evidence([(target, target_tag), (runner_up, runner_tag)])
        q1, q2 = (f'"{c["quote"]}" [{c["label"]}]' for c in citations)
        guest = GUEST_NOUNS[target["type"]]
        head = ("Understood. Two places fit better now" if after_rejection
                else f"The closest runner-up is {runner_up['name']}")
        text = (f"{head}. For {target['name']}, one {guest} wrote {q1}. For "
                f"{runner_up['name']}, another said {q2}. I would start with {target['name']}, "
                "since it matches everything you asked for.")
        self._add("system", "compare", text, [target, runner_up], citations,
                  [target["id"]], alternatives)

    def _text_runner_up_question(self) -> str:
        # No item names here: the question is about the ranking, not a new preference.
        return self.rng.choice((
            "That sounds good. Is there a close second, and how do they compare?",
            "Nice. What would be your runner-up, and how do the two differ?",
        ))

    def _detail(self) -> None:
        target = self.target
        used = [_span_tag(c) for c in self.stated]
        extra = [t for t in _feature_tags(target) if t not in used and t != "hum"]
        tag = self.rng.choice(extra) if extra else "staff"
        question = f"{self.rng.choice(('Great.', 'Sounds good.', 'Nice.'))} "
        self._add("user", "ask_detail", question + DETAIL_QUESTIONS[tag], [target])
        citations, evidence = self._evidence([(target, tag)])
        lead = "Yes." if tag in _ASPECT_TAGS else "Good question."
        answer = f"{lead} {evidence}"
        self._add("system", "answer_detail", answer, [target], citations)

    def _closing(self) -> None:
        name = self.target["name"]
        accept = self.rng.choice((f"Perfect, {name} it is. Thanks!",
                                  f"That's the one. We'll go with {name}.",
                                  f"Great, I'll book {name}. Thank you!"))
        self._add("user", "accept", accept, [self.target])
        noun = FAREWELL_NOUNS[self.target["type"]]
        self._add("system", "farewell", self.rng.choice((
            f"Enjoy your {noun} in {self.target['city']}!",
            f"Have a wonderful {noun}. Come back any time you need another suggestion.",
        )), [])

    # -- citations ------------------------------------------------------------------------

    def _evidence(self, wanted: list[tuple[dict, str]]) -> tuple[list[dict], str]:
        """Quote one review sentence per (item, tag); return citations and the cited text."""
        citations: list[dict] = []
        used: list[str] = []
        for item, tag in wanted:
            review_id, start, end = self._pick_span(item, tag, used)
            used.append(review_id)
            quote = self.cat.review_text[review_id][start:end]
            citations.append({"label": f"R{len(citations) + 1}", "review_id": review_id,
                              "quote": quote, "start": start, "end": end})
        guest = GUEST_NOUNS[self.target["type"]]
        verbs = (f"One {guest} wrote", "another said", "and a third noted")
        parts = [f'{verbs[i]} "{c["quote"]}" [{c["label"]}]' for i, c in enumerate(citations)]
        if len(parts) == 3:
            text = f"{parts[0]}, {parts[1]}, {parts[2]}."
        else:
            text = ", and ".join(parts) + "."
        return citations, text

    def _pick_span(self, item: dict, tag: str, used: list[str]) -> tuple[str, int, int]:
        spans = self.cat.spans[item["id"]]
        options = [s for s in spans.get(tag, ()) if s[0] not in used]
        if not options:  # the feature is only mentioned in reviews already quoted in this turn
            options = [s for group in spans.values() for s in group if s[0] not in used]
        # Prefer sentences from favourable reviews: a recommender quotes praise, not complaints.
        good = [s for s in options if s[3] >= 3]
        review_id, start, end, _ = self.rng.choice(good or options)
        return review_id, start, end

    # -- metadata -------------------------------------------------------------------------

    def _scenario(self) -> dict:
        budget = next((v for k, v in self.stated if k == "budget"), None)
        prefs = {"category": None, "aspects": [], "noise": None, "neighborhood": None}
        for kind, value in self.stated:
            if kind == "aspect":
                prefs["aspects"].append(value)
            elif kind != "budget":
                prefs[kind] = value
        return {
            "persona": self.persona,
            "persona_description": self.intro,
            "user_profile": {"name": self.rng.choice(USER_NAMES), "persona": self.persona},
            "city": self.target["city"],
            "item_type": self.target["type"],
            "difficulty": self.difficulty,
            "budget": budget,
            "budget_max_price_level": BUDGET_PRICE_RANGE[budget][1] if budget else None,
            "preferences": prefs,
            "constraints": [{"kind": k, "value": v, "stated_at_turn": at}
                            for (k, v), at in zip(self.stated, self.stated_at, strict=True)],
            "rejections": self.rejections,
        }

    def _seen_items(self) -> list[str]:
        """Up to two same-category places outside the pool that the user has visited before."""
        kind = self.target["categories"][0]
        seen = [it["id"] for it in self.group
                if it not in self.pool and it["categories"][0] == kind]
        self.rng.shuffle(seen)
        return seen[: self.rng.choice((0, 1, 2))]
