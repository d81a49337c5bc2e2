"""Study creation: sample the dialogues, draw the blinding letters, snapshot every item."""

from __future__ import annotations

import random
import secrets
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from annotation.lib import blinding, form_registry, sampling, taskforms
from evaluation.access import can_manage_benchmark
from evaluation.models import (
    Benchmark,
    Split,
    Submission,
    TurnItem,
)

from ..models import (
    BlindingEntry,
    HandoutPolicy,
    Study,
    StudyItem,
)
from .handout_policy import HandoutChoice, handout_policy_set
from .sources import REFERENCE, Source, reference_source, submission_source


@dataclass(frozen=True)
class StudySpec:
    """What an author asks for; `study_create` turns it into items."""

    forms: tuple[str, ...]
    include_reference: bool = True
    submission_ids: tuple[int, ...] = ()
    splits: tuple[str, ...] = ()
    sample_size: int = 30
    seed: int = 0
    stratify: str = ""
    calibration_count: int = 0
    gold_count: int = 0


FABRICATED_CLAIMS = taskforms.FABRICATED_CLAIMS  # (tests name them from here)

RESERVED_SLUGS = {"new", "join", "metric-leaderboards"}  # fixed paths under /studies/


def unique_study_slug(title: str) -> str:
    base = slugify(title)[:60] or "study"
    if base in RESERVED_SLUGS:
        base = f"{base}-study"
    slug, n = base, 2
    while Study.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


def _validate_spec(*, benchmark: Benchmark, spec: StudySpec, likert_scales) -> list[Submission]:
    unknown = set(spec.forms) - set(taskforms.keys())
    if not spec.forms or unknown:
        raise ValidationError("Enable at least one known task form.")
    pairwise = set(spec.forms) & set(taskforms.keys_for_mode(StudyItem.Mode.PAIRWISE))
    if taskforms.LIKERT in spec.forms:
        errors = taskforms.validate_likert_scales(likert_scales)
        if errors:
            raise ValidationError(errors)
    submissions = list(Submission.objects.filter(pk__in=spec.submission_ids, benchmark=benchmark,
                                                 protocol=Submission.Protocol.TURN))
    if len(submissions) != len(set(spec.submission_ids)):
        raise ValidationError("Every submission must be a turn-protocol submission on this "
                              "benchmark.")
    if not spec.include_reference and not submissions:
        raise ValidationError("Choose the reference responses, submissions, or both.")
    if pairwise and (spec.include_reference + len(submissions)) < 2:
        raise ValidationError("Pairwise preference needs at least two systems.")
    if spec.sample_size < 1:
        raise ValidationError("The sample needs at least one dialogue.")
    return submissions


@transaction.atomic
def study_create(*, benchmark: Benchmark, author, title: str, spec: StudySpec,
                 instructions: str = "", likert_scales: list | None = None, overlap_k: int = 3,
                 gold_rate: float = 0.1, gold_pass_threshold: float = 0.7,
                 seconds_per_item: int = 90, tie_break_extra: bool = True,
                 assignment_timeout_minutes: int = 30, slug: str | None = None,
                 handout: HandoutChoice | None = None) -> Study:
    """Sample the dialogues, draw the blinding letters and snapshot every item, atomically;
    with an active HANDOUT, check it against the items and draw its first wave (a bad choice
    raises ValidationError keyed by field and stores nothing)."""
    likert_scales = list(likert_scales or taskforms.DEFAULT_LIKERT_SCALES)
    submissions = _validate_spec(benchmark=benchmark, spec=spec, likert_scales=likert_scales)
    sources = ([reference_source(benchmark)] if spec.include_reference else [])
    sources += [submission_source(s) for s in submissions]
    splits = spec.splits or tuple(s for s in benchmark.splits if s != Split.HIDDEN)
    if Split.HIDDEN in splits and not can_manage_benchmark(author, benchmark):
        raise ValidationError("Only the benchmark's owner may show hidden-split dialogues.")
    dialogues = {d.external_id: d for d in benchmark.dialogues.filter(split__in=splits)}
    reference = sources[0] if spec.include_reference else reference_source(benchmark)
    units = _units(dialogues, reference, sources)
    picks = sampling.sample_units(units, sources=[s.key for s in sources], size=spec.sample_size,
                                  seed=spec.seed, stratify=spec.stratify)
    if not picks:
        raise ValidationError("No dialogue turn was answered by every chosen system.")
    study = Study.objects.create(
        slug=slug or unique_study_slug(title), title=title, benchmark=benchmark, author=author,
        instructions=instructions or default_instructions(spec.forms), forms=list(spec.forms),
        likert_scales=likert_scales, overlap_k=overlap_k, gold_rate=gold_rate,
        gold_pass_threshold=gold_pass_threshold, seconds_per_item=seconds_per_item,
        invite_token=secrets.token_urlsafe(18), tie_break_extra=tie_break_extra,
        assignment_timeout_minutes=assignment_timeout_minutes, seed=spec.seed,
    )
    builder = _ItemBuilder(study=study, dialogues=dialogues, sources=sources, reference=reference)
    builder.add_picks(picks)
    extra = builder.add_calibration_and_gold(
        units=[u for u in units if u.dialogue not in {p.dialogue for p in picks}] or units,
        calibration=spec.calibration_count, gold=spec.gold_count, seed=spec.seed)
    builder.save()
    study.config = {
        "sources": [s.key for s in sources], "splits": list(splits),
        "sample_size": spec.sample_size, "sampled_dialogues": len({p.dialogue for p in picks}),
        "stratify": spec.stratify, "seed": spec.seed, **extra,
        "items": builder.counts(),
    }
    study.save(update_fields=["config"])
    if handout is not None and handout.policy != HandoutPolicy.UNIFORM:
        study = handout_policy_set(study=study, choice=handout)
    return study


def _units(dialogues: dict, reference: Source, sources: list[Source]) -> list[sampling.Unit]:
    units = []
    for (dialogue_id, turn_index) in sorted(reference.responses):
        if dialogue_id not in dialogues:
            continue
        answered = frozenset(s.key for s in sources if (dialogue_id, turn_index) in s.responses)
        units.append(sampling.Unit(dialogue_id, turn_index,
                                   dialogues[dialogue_id].difficulty or "", answered))
    return units


class _ItemBuilder:
    """Collects the items of a new study and stores them (and the blinding map) in bulk."""

    def __init__(self, *, study: Study, dialogues: dict, sources: list[Source],
                 reference: Source):
        self.study, self.dialogues, self.reference = study, dialogues, reference
        self.sources = {s.key: s for s in sources}
        self.items: list[StudyItem] = []
        self.entries: dict[tuple[str, str], BlindingEntry] = {}
        self._turns: dict[str, list[dict]] = {}
        self.modes = {form.mode for form in taskforms.enabled(study.forms)}

    # blinding ------------------------------------------------------------------------------
    def _letters(self, dialogue_id: str) -> None:
        if (dialogue_id, next(iter(self.sources))) in self.entries:
            return
        letters = blinding.assign_letters(list(self.sources),
                                          seed=f"{self.study.seed}:{self.study.slug}:{dialogue_id}")
        dialogue = self.dialogues[dialogue_id]
        for key, letter in letters.items():
            self.entries[(dialogue_id, key)] = BlindingEntry(
                study=self.study, dialogue=dialogue, source_key=key, letter=letter,
                system_id=self.sources[key].system_id)

    def _entry(self, dialogue_id: str, key: str) -> BlindingEntry:
        self._letters(dialogue_id)
        return self.entries[(dialogue_id, key)]

    # context -------------------------------------------------------------------------------
    def turns(self, dialogue_id: str) -> list[dict]:
        if dialogue_id not in self._turns:
            self._turns[dialogue_id] = [
                {"index": t.index, "role": t.role, "text": t.text, "action": t.action}
                for t in self.dialogues[dialogue_id].turns.order_by("index")]
        return self._turns[dialogue_id]

    def _new(self, **fields) -> StudyItem:
        fields.setdefault("target_labels", self.study.overlap_k)
        item = StudyItem(study=self.study, position=len(self.items) + 1, **fields)
        self.items.append(item)
        return item

    def _response_fields(self, dialogue_id: str, turn_index: int, key: str, suffix="") -> dict:
        source = self.sources[key]
        response = source.responses[(dialogue_id, turn_index)]
        return {f"response{suffix}_text": response["text"],
                f"citations{suffix}": response["citations"],
                f"system{suffix}_id": source.system_id,
                f"submission{suffix}_id": source.submission_id,
                f"blind{suffix}": self._entry(dialogue_id, key)}

    # items ---------------------------------------------------------------------------------
    def add_picks(self, picks: list[sampling.Pick]) -> None:
        for pick in picks:
            dialogue = self.dialogues[pick.dialogue]
            context = [t for t in self.turns(pick.dialogue) if t["index"] < pick.turn_index]
            base = {"dialogue": dialogue, "turn_index": pick.turn_index}
            if StudyItem.Mode.RESPONSE in self.modes:
                for key in pick.sources:
                    self._new(mode=StudyItem.Mode.RESPONSE, context=context, **base,
                              **self._response_fields(pick.dialogue, pick.turn_index, key))
            if StudyItem.Mode.CONVERSATION in self.modes:
                for key in pick.sources:
                    self._new(mode=StudyItem.Mode.CONVERSATION, dialogue=dialogue,
                              turn_index=None, context=self._conversation(pick.dialogue, key),
                              system_id=self.sources[key].system_id,
                              submission_id=self.sources[key].submission_id,
                              blind=self._entry(pick.dialogue, key))
            if StudyItem.Mode.RECOMMEND in self.modes:
                self._new(mode=StudyItem.Mode.RECOMMEND, context=context, **base,
                          reference=self._gold_items(pick.dialogue, pick.turn_index))
            if StudyItem.Mode.PAIRWISE in self.modes:
                for a, b in combinations(pick.sources, 2):
                    self._new(mode=StudyItem.Mode.PAIRWISE, context=context, **base,
                              **self._response_fields(pick.dialogue, pick.turn_index, a),
                              **self._response_fields(pick.dialogue, pick.turn_index, b, "_b"))

    def _conversation(self, dialogue_id: str, key: str) -> list[dict]:
        """The dialogue with this source's answers at the evaluated turns; those are rated.

        For the reference every system turn is the reference system's and is rated. A
        turn-protocol submission answered the evaluated turns given the reference context, so
        its answers replace the reference there and only those turns are rated.
        """
        source = self.sources[key]
        turns = []
        for turn in self.turns(dialogue_id):
            turn = dict(turn)
            answer = source.responses.get((dialogue_id, turn["index"]))
            if key == REFERENCE:
                turn["rated"] = turn["role"] == "system"
            elif answer is not None:
                turn["text"], turn["rated"] = answer["text"], True
            else:
                turn["rated"] = False
            turns.append(turn)
        return turns

    def _gold_items(self, dialogue_id: str, turn_index: int) -> dict:
        links = TurnItem.objects.filter(turn__dialogue=self.dialogues[dialogue_id],
                                        turn__index=turn_index,
                                        role__in=["gold", "alternative"]).select_related("item")
        found = defaultdict(list)
        for link in links.order_by("role", "position"):
            found[link.role].append(link.item.external_id)
        return {"gold_item_ids": found["gold"], "alternative_item_ids": found["alternative"]}

    def add_calibration_and_gold(self, *, units, calibration: int, gold: int, seed: int) -> dict:
        """Items with known answers, built from reference turns the sample does not use, by
        each enabled form that offers them (`TaskForm.known_answers`: the citation check's
        response with or without a fabricated claim, blind recommendation's gold picks)."""
        rng = random.Random(f"{seed}:known-answers")
        usable = [u for u in units
                  if self.reference.responses[(u.dialogue, u.turn_index)]["citations"]]
        rng.shuffle(usable)
        counts = {"calibration_items": 0, "gold_items": 0}
        wanted = [StudyItem.Kind.CALIBRATION] * calibration + [StudyItem.Kind.GOLD] * gold
        if not wanted or not usable:
            return counts
        forms = [form for form in taskforms.enabled(self.study.forms)
                 if form.offers_known_answers]
        for n, kind in enumerate(wanted):
            unit = usable[n % len(usable)]
            for form in forms:
                self._known_item(form, unit, kind, corrupt=n % 2 == 1, rng=rng)
            counts[f"{kind}_items"] += bool(forms)
        return counts

    def _known_item(self, form, unit, kind, *, corrupt: bool, rng: random.Random) -> None:
        """FORM's practice or gold item on a reference turn (response and recommend items)."""
        key = (unit.dialogue, unit.turn_index)
        if form.mode == StudyItem.Mode.RECOMMEND:
            facts = self._gold_items(*key)
            acceptable = tuple(facts["gold_item_ids"] + facts["alternative_item_ids"])
            answers = form.known_answers(form_registry.KnownFacts(acceptable=acceptable),
                                         corrupt=corrupt, rng=rng)
            extra = {"reference": facts}
        elif form.mode == StudyItem.Mode.RESPONSE:
            response = self.reference.responses[key]
            answers = form.known_answers(form_registry.KnownFacts(text=response["text"]),
                                         corrupt=corrupt, rng=rng)
            extra = {"citations": response["citations"],
                     "blind": self._entry(unit.dialogue, REFERENCE)}
        else:
            return
        if answers is None:
            return
        if form.mode == StudyItem.Mode.RESPONSE:
            extra.update(response_text=answers.text, reference={"built_from": answers.how})
        context = [t for t in self.turns(unit.dialogue) if t["index"] < unit.turn_index]
        self._new(mode=form.mode, kind=kind, dialogue=self.dialogues[unit.dialogue],
                  turn_index=unit.turn_index, context=context, expected=answers.expected,
                  target_labels=1, **extra)

    def save(self) -> None:
        BlindingEntry.objects.bulk_create(self.entries.values())
        for item in self.items:  # bulk_create set the entries' primary keys
            item.blind_id = item.blind.pk if item.blind else None
            item.blind_b_id = item.blind_b.pk if item.blind_b else None
        StudyItem.objects.bulk_create(self.items, batch_size=500)

    def counts(self) -> dict:
        tally: dict[str, int] = defaultdict(int)
        for item in self.items:
            tally[f"{item.mode}/{item.kind}"] += 1
        return dict(sorted(tally.items()))


def default_instructions(forms: Iterable[str]) -> str:
    """Instructions in Markdown for the enabled forms (our wording of the seeds' protocols;
    each form's paragraph is its `instructions`)."""
    parts = [
        "# What you will do\n",
        "You will judge answers of conversational recommender systems for tourism. Each system "
        "is shown only as **System A, B, C…**; you do not know which one wrote an answer, and "
        "the letters change from dialogue to dialogue.\n",
        "Read the **whole conversation** before you judge. Judge only from what is shown; do "
        "not look the places up.\n",
    ]
    parts += taskforms.instructions(forms)
    parts.append("## Good to know\n"
                 "- Your work is saved as you go; you can close the page and come back.\n"
                 "- Use the comment box for anything unusual, and **Flag item** if an item is "
                 "broken.\n- Keyboard shortcuts are listed beside every form.\n")
    return "\n".join(parts)
