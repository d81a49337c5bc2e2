"""Writes of the annotation app: studies, membership, hand-out, drafts, submissions, export.

Views, tasks and commands call these; each function takes keyword-only arguments and does one
thing inside one transaction. Pure decisions (what to sample, which letter, which item next,
whether a form is complete) live in `sampling`, `blinding`, `queue` and `taskforms`.
"""

from __future__ import annotations

import csv
import io
import json
import random
import secrets
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import combinations
from pathlib import Path
from statistics import mean

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.text import slugify

from annotation import queue, rows
from annotation.lib import blinding, sampling, taskforms
from config.roles import ANNOTATOR
from config.rows import batched, insert
from evaluation.access import can_manage_benchmark
from evaluation.lib.formats.submission import iter_turn_records
from evaluation.lib.metrics.quotes import extract_quotes
from evaluation.models import (
    EVALUATED_ACTIONS,
    Benchmark,
    Citation,
    Job,
    Split,
    Submission,
    Turn,
    TurnItem,
)
from evaluation.services.jobs import job_create

from .models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    BlindingEntry,
    Draft,
    ImportedLabel,
    Study,
    StudyItem,
    StudyMember,
)
from .selectors import item_layout, study_export_rows

REFERENCE = "reference"
EXPORT_DIR = "exports"


# --- responses a study can judge -----------------------------------------------------------

@dataclass
class Source:
    """Who answered: the benchmark's reference system turns, or one turn-protocol submission."""

    key: str
    system_id: int | None = None
    submission_id: int | None = None
    responses: dict[tuple[str, int], dict] = field(default_factory=dict)


def submission_records(submission: Submission) -> Iterator[dict]:
    """The lines of a stored turn-protocol submission (validated on upload), as dicts."""
    with submission.file.open("rb") as handle:
        yield from iter_turn_records(handle, max_bytes=settings.MAX_UPLOAD_BYTES)


def _reference_source(benchmark: Benchmark) -> Source:
    source = Source(key=REFERENCE)
    turns = Turn.objects.filter(dialogue__benchmark=benchmark, role=Turn.Role.SYSTEM,
                                action__in=EVALUATED_ACTIONS).select_related("dialogue")
    citations = defaultdict(list)
    for c in (Citation.objects.filter(turn__dialogue__benchmark=benchmark)
              .select_related("review").order_by("position")):
        citations[c.turn_id].append({"label": c.label, "review_id": c.review.external_id,
                                     "quote": c.quote})
    for turn in turns:
        source.responses[(turn.dialogue.external_id, turn.index)] = {
            "text": turn.text, "citations": citations[turn.pk]}
    return source


def _submission_source(submission: Submission) -> Source:
    source = Source(key=f"submission:{submission.pk}", system_id=submission.system_id,
                    submission_id=submission.pk)
    for record in submission_records(submission):
        source.responses[(str(record["dialogue_id"]), int(record["turn_index"]))] = {
            "text": record["response"],
            "citations": [{"label": c["label"], "review_id": c["review_id"],
                           "quote": c.get("quote", "")} for c in record.get("citations", [])],
        }
    return source


# --- study creation ------------------------------------------------------------------------

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


FABRICATED_CLAIMS = (
    "they even have a Michelin star and a rooftop pool",
    "every guest gets free champagne at the door",
    "the staff speak twelve languages fluently",
    "open all night with live jazz every hour",
    "the best view in the whole state, hands down",
)


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
    unknown = set(spec.forms) - set(taskforms.ALL_FORMS)
    if not spec.forms or unknown:
        raise ValidationError("Enable at least one known task form.")
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
    if taskforms.PAIRWISE in spec.forms and (spec.include_reference + len(submissions)) < 2:
        raise ValidationError("Pairwise preference needs at least two systems.")
    if spec.sample_size < 1:
        raise ValidationError("The sample needs at least one dialogue.")
    return submissions


@transaction.atomic
def study_create(*, benchmark: Benchmark, author, title: str, spec: StudySpec,
                 instructions: str = "", likert_scales: list | None = None, overlap_k: int = 3,
                 gold_rate: float = 0.1, gold_pass_threshold: float = 0.7,
                 seconds_per_item: int = 90, tie_break_extra: bool = True,
                 assignment_timeout_minutes: int = 30, slug: str | None = None) -> Study:
    """Sample the dialogues, draw the blinding letters and snapshot every item, atomically."""
    likert_scales = list(likert_scales or taskforms.DEFAULT_LIKERT_SCALES)
    submissions = _validate_spec(benchmark=benchmark, spec=spec, likert_scales=likert_scales)
    sources = ([_reference_source(benchmark)] if spec.include_reference else [])
    sources += [_submission_source(s) for s in submissions]
    splits = spec.splits or tuple(s for s in benchmark.splits if s != Split.HIDDEN)
    if Split.HIDDEN in splits and not can_manage_benchmark(author, benchmark):
        raise ValidationError("Only the benchmark's owner may show hidden-split dialogues.")
    dialogues = {d.external_id: d for d in benchmark.dialogues.filter(split__in=splits)}
    reference = sources[0] if spec.include_reference else _reference_source(benchmark)
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
        forms = set(study.forms)
        self.response_forms = forms & set(taskforms.MODE_FORMS["response"])
        self.conversation_forms = forms & set(taskforms.MODE_FORMS["conversation"])

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
        forms = set(self.study.forms)
        for pick in picks:
            dialogue = self.dialogues[pick.dialogue]
            context = [t for t in self.turns(pick.dialogue) if t["index"] < pick.turn_index]
            base = {"dialogue": dialogue, "turn_index": pick.turn_index}
            if self.response_forms:
                for key in pick.sources:
                    self._new(mode=StudyItem.Mode.RESPONSE, context=context, **base,
                              **self._response_fields(pick.dialogue, pick.turn_index, key))
            if self.conversation_forms:
                for key in pick.sources:
                    self._new(mode=StudyItem.Mode.CONVERSATION, dialogue=dialogue,
                              turn_index=None, context=self._conversation(pick.dialogue, key),
                              system_id=self.sources[key].system_id,
                              submission_id=self.sources[key].submission_id,
                              blind=self._entry(pick.dialogue, key))
            if taskforms.RECOMMEND in forms:
                self._new(mode=StudyItem.Mode.RECOMMEND, context=context, **base,
                          reference=self._gold_items(pick.dialogue, pick.turn_index))
            if taskforms.PAIRWISE in forms:
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
        """Items with known answers, built from reference turns the sample does not use.

        Citation check: the reference response as it is (every quote Supported) or with one
        quote replaced by a fabricated claim (that quote Not supported). Blind recommendation:
        the turn's gold and alternative items are the acceptable picks.
        """
        rng = random.Random(f"{seed}:known-answers")
        usable = [u for u in units
                  if self.reference.responses[(u.dialogue, u.turn_index)]["citations"]]
        rng.shuffle(usable)
        counts = {"calibration_items": 0, "gold_items": 0}
        wanted = [StudyItem.Kind.CALIBRATION] * calibration + [StudyItem.Kind.GOLD] * gold
        if not wanted or not usable:
            return counts
        for n, kind in enumerate(wanted):
            unit = usable[n % len(usable)]
            built = False
            if taskforms.CITATION in self.study.forms:
                self._known_response(unit, kind, corrupt=n % 2 == 1, rng=rng)
                built = True
            if taskforms.RECOMMEND in self.study.forms:
                self._known_recommendation(unit, kind)
                built = True
            counts[f"{kind}_items"] += built
        return counts

    def _known_response(self, unit, kind, *, corrupt: bool, rng: random.Random) -> None:
        response = self.reference.responses[(unit.dialogue, unit.turn_index)]
        text = response["text"]
        quotes = extract_quotes(text)
        expected = {f"citation.{i}": "supported" for i in range(len(quotes))}
        how = "reference response, unchanged"
        if corrupt and quotes:
            claim = rng.choice(FABRICATED_CLAIMS)
            first = quotes[0]
            text = text[:first.start] + claim + text[first.end:]
            expected["citation.0"] = "not_supported"
            how = f"reference response with quote 1 replaced by a fabricated claim: {claim!r}"
        context = [t for t in self.turns(unit.dialogue) if t["index"] < unit.turn_index]
        self._new(mode=StudyItem.Mode.RESPONSE, kind=kind, dialogue=self.dialogues[unit.dialogue],
                  turn_index=unit.turn_index, context=context, response_text=text,
                  citations=response["citations"], blind=self._entry(unit.dialogue, REFERENCE),
                  expected=expected, reference={"built_from": how}, target_labels=1)

    def _known_recommendation(self, unit, kind) -> None:
        facts = self._gold_items(unit.dialogue, unit.turn_index)
        acceptable = facts["gold_item_ids"] + facts["alternative_item_ids"]
        if not acceptable:
            return
        context = [t for t in self.turns(unit.dialogue) if t["index"] < unit.turn_index]
        self._new(mode=StudyItem.Mode.RECOMMEND, kind=kind, dialogue=self.dialogues[unit.dialogue],
                  turn_index=unit.turn_index, context=context, reference=facts,
                  expected={"recommend.items": acceptable}, target_labels=1)

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
    """Instructions in Markdown for the enabled forms (our wording of the seeds' protocols)."""
    forms = set(forms)
    parts = [
        "# What you will do\n",
        "You will judge answers of conversational recommender systems for tourism. Each system "
        "is shown only as **System A, B, C…**; you do not know which one wrote an answer, and "
        "the letters change from dialogue to dialogue.\n",
        "Read the **whole conversation** before you judge. Judge only from what is shown; do "
        "not look the places up.\n",
    ]
    if forms & {taskforms.CITATION, taskforms.CHECKLIST, taskforms.LIKERT}:
        parts.append("## Judging a response\n")
        if taskforms.CITATION in forms:
            parts.append(
                "- **Citation check.** Every quoted phrase is listed. Open the referenced "
                "reviews and look for it. *Supported*: the text (or a very close match) is there "
                "and backs the claim. *Partial*: it is there but out of context or backs only part "
                "of the claim. *Not supported*: you cannot find it. When unsure, choose "
                "*Partial*.\n")
        if taskforms.CHECKLIST in forms:
            parts.append(
                "- **Error checklist.** Tick every problem you see. *No errors* means the "
                "response is fine and cannot be combined with anything else.\n")
        if taskforms.LIKERT in forms:
            parts.append("- **Ratings.** Use the whole scale; rate each aspect on its own "
                         "(a fluent answer can still cite badly).\n")
    if forms & {taskforms.CORE, taskforms.FACE}:
        parts.append("## Judging a conversation\n")
        if taskforms.FACE in forms:
            parts.append("- Rate **each system turn** for relevance and interestingness, then "
                         "the conversation as a whole.\n")
        if taskforms.CORE in forms:
            parts.append("- Score the twelve factors from 0 to 4 (open a factor to read its "
                         "definition) and say how likely you would be to use the system "
                         "(0–100).\n")
    if taskforms.RECOMMEND in forms:
        parts.append(
            "## Writing your own recommendation\n"
            "You see the conversation up to where the system would recommend, the user's "
            "request highlighted in blue, and the candidate places. Pick 1–3 places. Select a "
            "phrase inside a review and press **+ Add quote**: the quote, its review and "
            "position are kept exactly, and a sentence is added to your text, which you can "
            "edit. You never see what any system answered.\n")
    if taskforms.PAIRWISE in forms:
        parts.append("## Comparing two responses\n"
                     "Two responses to the same moment are shown side by side. Say which is "
                     "better, or that they are tied, and why if you like.\n")
    parts.append("## Good to know\n"
                 "- Your work is saved as you go; you can close the page and come back.\n"
                 "- Use the comment box for anything unusual, and **Flag item** if an item is "
                 "broken.\n- Keyboard shortcuts are listed beside every form.\n")
    return "\n".join(parts)


# --- membership ----------------------------------------------------------------------------

def study_member_add(*, study: Study, user) -> StudyMember:
    """Make USER an annotator of STUDY (idempotent: joining twice keeps one membership)."""
    member, _ = StudyMember.objects.get_or_create(
        study=study, user=user, defaults={"order_seed": secrets.randbits(62)})
    user.groups.add(Group.objects.get_or_create(name=ANNOTATOR)[0])
    return member


def study_join(*, token: str, user) -> StudyMember | None:
    study = Study.objects.filter(invite_token=token, is_open=True).first()
    if study is None:
        return None
    return study_member_add(study=study, user=user)


def study_member_set_excluded(*, member: StudyMember, excluded: bool, reason: str = "") -> None:
    """Exclude an annotator from new items and from reports (recorded in the export)."""
    if excluded and not reason.strip():
        raise ValidationError("Say why the annotator is excluded (it goes into the export).")
    member.excluded = excluded
    member.exclusion_reason = reason.strip()[:300] if excluded else ""
    member.excluded_at = timezone.now() if excluded else None
    member.save(update_fields=["excluded", "exclusion_reason", "excluded_at"])


# --- hand-out ------------------------------------------------------------------------------

def assignments_release_stale(*, study: Study, now=None) -> int:
    """Give back the slots of items whose annotator has been inactive past the timeout."""
    now = now or timezone.now()
    return Assignment.objects.filter(
        item__study=study, status=Assignment.Status.ACTIVE,
        last_active_at__lt=now - timedelta(seconds=study.timeout_seconds),
    ).update(status=Assignment.Status.RELEASED, released_at=now)


def _candidates(study: Study, member: StudyMember) -> list[queue.Candidate]:
    counted = Annotation.objects.filter(item=OuterRef("pk"), assignment__member__excluded=False)
    holding = Assignment.objects.filter(item=OuterRef("pk"), status=Assignment.Status.ACTIVE
                                        ).exclude(member=member)
    rows = (StudyItem.objects.filter(study=study)
            .annotate(labels=Coalesce(Subquery(counted.values("item").annotate(n=Count("pk"))
                                               .values("n")), 0),
                      holds=Coalesce(Subquery(holding.values("item").annotate(n=Count("pk"))
                                              .values("n")), 0))
            .values_list("pk", "kind", "labels", "holds", "target_labels", "position"))
    return [queue.Candidate(pk, kind, labels, holds, target, position)
            for pk, kind, labels, holds, target, position in rows]


def _estimate_seconds(member: StudyMember, study: Study) -> float:
    times = [ms for ms in member.assignments.filter(status=Assignment.Status.SUBMITTED)
             .values_list("focused_ms", flat=True) if ms > 0]
    return mean(times) / 1000 if len(times) >= 3 else float(study.seconds_per_item)


def assignment_next(*, member: StudyMember, now=None) -> Assignment | None:
    """Hand the annotator their next item (or give back their unfinished one); None when done.

    Hand-outs of one study are serialized by a lock on the study row, so two annotators asking
    at the same moment never both take the last open slot of an item.
    """
    now = now or timezone.now()
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=member.study_id)
        if member.excluded or not study.is_open:
            return None
        assignments_release_stale(study=study, now=now)
        mine = list(member.assignments.select_related("item").annotate(
            has_draft=Exists(Draft.objects.filter(assignment=OuterRef("pk")))))
        mine.sort(key=lambda a: a.position)
        open_ = [a for a in mine if a.status == Assignment.Status.ACTIVE
                 or (a.status == Assignment.Status.RELEASED and a.has_draft)]
        done = {a.item_id for a in mine if a.status != Assignment.Status.RELEASED} | {
            a.item_id for a in open_}
        candidates = _candidates(study, member)
        kinds = [a.item.kind for a in mine if a.status == Assignment.Status.SUBMITTED]
        decision = queue.choose_next(
            resume=[a.item_id for a in open_], candidates=candidates, done=done,
            member_seed=member.order_seed, gold_rate=study.gold_rate,
            gold_done=kinds.count(queue.GOLD), regular_done=kinds.count(queue.NORMAL))
        if decision is None:
            return None
        by_item = {a.item_id: a for a in mine}
        assignment = by_item.get(decision.item_id)
        remaining = queue.remaining_for(candidates=candidates, done=done | {decision.item_id},
                                        gold_rate=study.gold_rate)
        per_item = _estimate_seconds(member, study)
        if decision.reason == "resume":
            if assignment.status == Assignment.Status.RELEASED:
                assignment.status, assignment.released_at = Assignment.Status.ACTIVE, None
                assignment.last_active_at = now
                assignment.save(update_fields=["status", "released_at", "last_active_at"])
            return assignment
        position = max((a.position for a in mine), default=0) + 1
        fields = {
            "position": position, "status": Assignment.Status.ACTIVE, "reason": decision.reason,
            "handed_out_at": now, "last_active_at": now, "released_at": None,
            "swapped": secrets.randbelow(2) == 1,
            "queue_total": position + remaining,
            "seconds_left": round((remaining + 1) * per_item),
        }
        if assignment is not None:  # released without a draft earlier, handed out again
            for name, value in fields.items():
                setattr(assignment, name, value)
            assignment.save()
            return assignment
        return Assignment.objects.create(member=member, item_id=decision.item_id, **fields)


# --- drafts and submissions ----------------------------------------------------------------

def draft_save(*, assignment: Assignment, data: Mapping, focused_ms: int = 0) -> Draft:
    """Autosave whatever is valid of the form so far; one upsert, safe to repeat."""
    layout = item_layout(assignment.item, assignment.item.study, swapped=assignment.swapped)
    values = taskforms.parse_post(data, layout, partial=True).values
    now = timezone.now()
    with transaction.atomic(), batched():
        rows.touch(assignment.pk, focused_ms=focused_ms, now=now, submitted=False)
        Draft.objects.bulk_create([Draft(assignment=assignment, values=values, saved_at=now)],
                                  update_conflicts=True, unique_fields=["assignment"],
                                  update_fields=["values", "saved_at"])
    return Draft(assignment=assignment, values=values, saved_at=now)


@dataclass
class SubmitResult:
    annotation: Annotation | None
    errors: list[str]
    created: bool = False
    changed: bool = False


def annotation_submit(*, assignment: Assignment, data: Mapping, focused_ms: int = 0,
                      quote_checker=None) -> SubmitResult:
    """Validate and store the annotation; repeating it changes nothing, editing keeps history.

    Double clicks, retries and a second tab all end here: the assignment row is locked first
    (every submission of an item by an annotator goes through that one row), so the check for
    an existing annotation cannot race, and the unique constraint backs it up.
    """
    item, study = assignment.item, assignment.item.study
    layout = item_layout(item, study, swapped=assignment.swapped, quote_checker=quote_checker)
    parsed = taskforms.parse_post(data, layout, partial=False)
    if parsed.errors:
        return SubmitResult(None, parsed.errors)
    annotator_id = assignment.member.user_id
    spent = max(assignment.focused_ms, int(focused_ms))
    with transaction.atomic(), batched():  # 4 round trips to PostgreSQL instead of 7
        rows.touch(assignment.pk, focused_ms=spent, now=timezone.now(), submitted=True)
        # The item's labels: the idempotency check, and the tie check at the k-th label.
        labels = rows.item_labels(item.pk)  # its reply comes once the UPDATE has the lock
        now = timezone.now()  # after the lock: later than any submission that got it first
        mine = next((label for label in labels if label.annotator_id == annotator_id), None)
        if mine is not None and mine.values == parsed.values:
            return SubmitResult(Annotation(pk=mine.pk, item=item, annotator_id=annotator_id,
                                           values=mine.values), [])  # a retry or double click
        if mine is None:
            annotation = insert(Annotation(
                assignment=assignment, item=item, annotator_id=annotator_id,
                values=parsed.values, submitted_at=now, updated_at=now, time_spent_ms=spent))
        else:
            annotation = Annotation(pk=mine.pk, item=item, annotator_id=annotator_id,
                                    values=parsed.values, revision_count=mine.revision_count + 1)
            Annotation.objects.filter(pk=mine.pk).update(
                values=parsed.values, updated_at=now, time_spent_ms=spent,
                revision_count=F("revision_count") + 1)
        insert(AnnotationRevision(annotation=annotation, number=annotation.revision_count,
                                  values=parsed.values, time_spent_ms=spent, created_at=now),
               returning=False)
        rows.draft_delete(assignment.pk)
        if (mine is None and study.tie_break_extra and item.kind == StudyItem.Kind.NORMAL
                and len(labels) + 1 >= study.overlap_k):  # only the k-th label can tie
            excluded = set(StudyMember.objects.filter(
                study=study, user_id__in=[label.annotator_id for label in labels], excluded=True
            ).values_list("user_id", flat=True))
            counted = [label.values for label in labels if label.annotator_id not in excluded]
            counted += [] if assignment.member.excluded else [parsed.values]
            _maybe_extend_for_tie(item, study, counted)
    return SubmitResult(annotation, [], created=mine is None, changed=mine is not None)


def _maybe_extend_for_tie(item: StudyItem, study: Study, labels: list[dict]) -> None:
    """At the k-th label, a categorical field without a majority asks for one more label."""
    if item.target_labels != study.overlap_k or len(labels) != study.overlap_k:
        return
    if taskforms.categorical_tie(labels):
        StudyItem.objects.filter(pk=item.pk, target_labels=study.overlap_k).update(
            target_labels=study.overlap_k + 1)


# --- export --------------------------------------------------------------------------------

BUNDLE = "bundle"


def study_export_start(*, study: Study, user, bundle: bool = False) -> Job:
    """Queue the long-format annotations CSV, or (BUNDLE) the paper bundle zip."""

    params = {"study": study.pk, **({"format": BUNDLE} if bundle else {})}
    return job_create(kind=Job.Kind.STUDY_EXPORT, params=params, user=user,
                      task="annotation.tasks.study_export_job")


def export_is_bundle(job: Job) -> bool:
    return job.params.get("format") == BUNDLE


def export_path(job: Job) -> Path:
    suffix = "zip" if export_is_bundle(job) else "csv"
    return Path(settings.MEDIA_ROOT) / EXPORT_DIR / f"study-{job.params['study']}-{job.pk}.{suffix}"


def _write_csv(rows: Iterable[dict], handle, empty_header: tuple[str, ...]) -> int:
    writer, count = None, 0
    for row in rows:
        if writer is None:
            writer = csv.DictWriter(handle, fieldnames=list(row))
            writer.writeheader()
        writer.writerow(row)
        count += 1
    if writer is None:
        csv.writer(handle).writerow(empty_header)
    return count


def study_export_write(*, study: Study, path: Path, progress=None) -> int:
    """Write the long-format CSV (formats.md §6) to PATH; returns the number of data rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    with tmp.open("w", newline="", encoding="utf-8") as handle:
        count = _write_csv(_annotation_rows(study, progress), handle, EXPORT_EMPTY_HEADER)
    tmp.replace(path)
    return count


def _annotation_rows(study: Study, progress) -> Iterator[dict]:
    """Native studies: the long-format annotations; imported ones: their labels, one a row."""
    if not study.is_imported:
        yield from study_export_rows(study=study, progress=progress)
        return
    for row in (ImportedLabel.objects.filter(study=study).order_by("pk").values(
            "unit_type", "unit_id", "dialogue_id", "system", "annotator", "field", "value_num",
            "value_text").iterator(chunk_size=5000)):
        value = row.pop("value_num")
        text = row.pop("value_text")
        yield {"study": study.slug, **row, "value": text if value is None else value}


def study_bundle_write(*, study: Study, path: Path, progress=None) -> dict:
    """The paper bundle (formats.md §6): annotations CSV, agreement JSON/CSV/LaTeX, correlation
    tables of every evaluator with runs on the benchmark, factor coupling, the study
    configuration and a README saying how each number was computed."""
    from . import exports, report_selectors

    progress = progress or (lambda stage, done, total: None)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    evaluators = report_selectors.evaluator_names(benchmark=study.benchmark)
    keys = report_selectors.grouping_keys(benchmark=study.benchmark)
    splits = [""] + [key for key in keys if key.startswith("source_")]
    files: dict[str, str] = {}
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open("annotations.csv", "w") as raw, io.TextIOWrapper(
                raw, encoding="utf-8", newline="") as handle:
            rows = _write_csv(_annotation_rows(study, progress), handle, EXPORT_EMPTY_HEADER)
        files["annotations.csv"] = (f"{rows} rows, one per imported label" if study.is_imported
                                    else f"{rows} rows, one per item × annotator × field, "
                                         "with timestamps, time spent and exclusions")
        progress("agreement", 0, 1)
        agreement = report_selectors.study_agreement(study=study)
        tables = exports.agreement_tables(agreement)
        for fmt, suffix in (("json", "json"), ("csv", "csv"), ("latex", "tex")):
            archive.writestr(f"agreement.{suffix}", exports.render(agreement, tables, fmt))
            files[f"agreement.{suffix}"] = f"inter-annotator agreement ({fmt})"
        progress("agreement", 1, 1)
        reports = [agreement]
        for done, evaluator in enumerate(evaluators, 1):
            for by in splits:
                report = report_selectors.study_correlation(study=study, evaluator=evaluator,
                                                            by=by)
                reports.append(report)
                stem = f"correlation/{slugify(evaluator.replace(':', '-')) or 'evaluator'}" + (
                    f"-by-{by}" if by else "")
                tables = exports.correlation_tables(report)
                for fmt, suffix in (("json", "json"), ("csv", "csv"), ("latex", "tex")):
                    archive.writestr(f"{stem}.{suffix}", exports.render(report, tables, fmt))
                files[f"{stem}.json|csv|tex"] = (f"metric–human correlation of {evaluator}"
                                                 + (f", split by {by}" if by else ""))
            progress("correlation", done, len(evaluators))
        coupling = report_selectors.study_coupling(study=study)
        archive.writestr("coupling.json", json.dumps(coupling, indent=2, ensure_ascii=False))
        files["coupling.json"] = "inter-factor Kendall tau-b per rater type (humans, judges)"
        reports.append(coupling)
        archive.writestr("study.json", json.dumps(_study_configuration(study), indent=2,
                                                  ensure_ascii=False, default=str))
        files["study.json"] = "the study configuration (forms, scales, overlap, gold, fields)"
        files["README.md"] = "this file"
        archive.writestr("README.md", exports.bundle_readme(
            agreement["study"], files, exports.methods_used(*reports)))
    tmp.replace(path)
    return {"files": len(files), "annotation_rows": rows, "evaluators": len(evaluators)}


def _study_configuration(study: Study) -> dict:
    from .report_selectors import study_field_specs

    return {
        "slug": study.slug, "title": study.title, "source": study.source,
        "benchmark": study.benchmark.slug, "author": study.author.get_username(),
        "created_at": study.created_at.isoformat(), "forms": study.forms,
        "likert_scales": study.likert_scales, "overlap_k": study.overlap_k,
        "gold_rate": study.gold_rate, "gold_pass_threshold": study.gold_pass_threshold,
        "tie_break_extra": study.tie_break_extra, "seconds_per_item": study.seconds_per_item,
        "instructions": study.instructions, "config": study.config,
        "fields": [spec.to_dict() for spec in study_field_specs(study=study).values()],
    }


EXPORT_EMPTY_HEADER = ("study", "item", "field", "value")


# --- demo ----------------------------------------------------------------------------------

DEMO_STUDY_SLUG = "demo-tourism-study"


# Three contrasting baselines, like Trace's three-system human study: lexical, dense, popularity.
DEMO_BASELINES = ("baseline-tfidf", "baseline-dense", "baseline-popularity")


def _latest_baselines(benchmark: Benchmark, *, limit: int) -> tuple[int, ...]:
    """The newest turn-protocol submission of each baseline system (at most LIMIT systems)."""
    newest: dict[str, int] = {}
    for pk, slug in (Submission.objects.filter(
            benchmark=benchmark, protocol=Submission.Protocol.TURN, system__is_baseline=True)
            .order_by("system__name", "-created_at").values_list("pk", "system__slug")):
        newest.setdefault(slug, pk)
    preferred = sorted(newest, key=lambda slug: (
        DEMO_BASELINES.index(slug) if slug in DEMO_BASELINES else len(DEMO_BASELINES), slug))
    return tuple(newest[slug] for slug in preferred[:limit])


def demo_study_create(*, benchmark: Benchmark, author, annotators: Iterable,
                      sample_size: int = 10, seed: int = 7) -> Study:
    """The demo study: Trace Task 1 + blind recommendation on the demo benchmark (idempotent).

    Built from the benchmark's reference turns and the turn-protocol baseline submissions that
    exist when it runs. Run again after baselines appear, it rebuilds the study as long as
    nobody has labelled anything yet; the demo annotators are members, the demo author owns it.
    """
    baselines = _latest_baselines(benchmark, limit=3)
    sources = sorted([REFERENCE, *(f"submission:{pk}" for pk in baselines)])
    study = Study.objects.filter(slug=DEMO_STUDY_SLUG).first()
    if study is not None and sorted(study.config.get("sources", [])) != sources \
            and not Annotation.objects.filter(item__study=study).exists():
        study.delete()
        study = None
    if study is None:
        spec = StudySpec(
            forms=(taskforms.CITATION, taskforms.CHECKLIST, taskforms.LIKERT,
                   taskforms.RECOMMEND),
            include_reference=True, submission_ids=baselines, sample_size=sample_size,
            seed=seed, stratify=sampling.DIFFICULTY, calibration_count=1, gold_count=2)
        study = study_create(benchmark=benchmark, author=author, spec=spec, overlap_k=2,
                             title="Demo: citations, errors and blind recommendations",
                             slug=DEMO_STUDY_SLUG, seconds_per_item=60)
    for user in annotators:
        study_member_add(study=study, user=user)
    return study
