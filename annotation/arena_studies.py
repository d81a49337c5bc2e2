"""Annotation studies from an arena's battles (docs/arena.md, "Studies from battles").

The voted battles become conversations stored exactly as `import_public crs_arena_dial` stores
CRS Arena's (`evaluation/lib/formats/arena_dialogues.py`): a private `log` benchmark owned by
the study's author with one dialogue per battle side and one `log` submission per system. The
study then has one conversation item per dialogue (CoRE and/or FACE, whose dialogue-level
fields are the human labels the arena page compares with the ratings), built and blinded by
the same item builder as every study: the annotator sees "System A" and the conversation,
never a system's name, the battle or the arena's A/B side.
"""

from __future__ import annotations

import random
import secrets

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from annotation.lib import blinding, sampling, taskforms
from evaluation.lib.formats.arena_dialogues import battle_dialogues
from evaluation.lib.formats.errors import FormatError
from evaluation.models import Arena, Battle, Benchmark, System
from evaluation.services.benchmarks import benchmark_create_from_bundle

from .imports import log_submission_store, submission_files_delete
from .models import BlindingEntry, Study
from .services.sources import REFERENCE, Source
from .services.studies import _ItemBuilder, default_instructions, unique_study_slug


class _BattleItemBuilder(_ItemBuilder):
    """A battle side's dialogue was answered by one system only, so its blinding map has one
    entry: that system is "System A" of the dialogue (the arena's A/B is not carried over)."""

    def _letters(self, dialogue_id: str) -> None:
        key = self.answered[dialogue_id]
        if (dialogue_id, key) in self.entries:
            return
        letters = blinding.assign_letters([key], seed=f"{self.study.seed}:{dialogue_id}")
        self.entries[(dialogue_id, key)] = BlindingEntry(
            study=self.study, dialogue=self.dialogues[dialogue_id], source_key=key,
            letter=letters[key], system_id=self.sources[key].system_id)


def _battles(arena: Arena, *, sample_size: int | None, seed: int) -> list[Battle]:
    battles = list(arena.battles.filter(status=Battle.Status.VOTED)
                   .select_related("system_a", "system_b").prefetch_related("turns")
                   .order_by("created_at", "pk"))
    if sample_size is not None and sample_size < len(battles):
        battles = sorted(random.Random(f"{seed}:arena-battles").sample(battles, sample_size),
                         key=lambda b: (b.created_at, b.pk))
    return battles


def _battle_record(battle: Battle, arena: Arena) -> dict:
    return {"uuid": str(battle.uuid), "arena": arena.slug, "system_a": battle.system_a.name,
            "system_b": battle.system_b.name, "scenario": battle.scenario,
            "turns": [{"index": t.index, "side": t.side, "state": t.state, "text": t.text,
                       "error_kind": t.error_kind} for t in battle.turns.all()]}


def _benchmark_meta(arena: Arena) -> dict:
    base = slugify(f"{arena.slug}-battles")[:90]
    slug, n = base, 2
    while Benchmark.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return {"name": f"{arena.name}: battle dialogues"[:200], "slug": slug, "version": "1",
            "domain": (arena.benchmark.domain if arena.benchmark else "") or "arena",
            "description": f"The voted battles of the arena {arena.name}, one dialogue per "
                           "battle side (the person's messages and that system's answers).",
            "license": "", "citation": ""}


def _validate(forms: tuple[str, ...], sample_size: int | None) -> None:
    if not forms or set(forms) - set(taskforms.keys_for_mode("conversation")):
        raise ValidationError("A study from battles judges whole conversations: enable CoRE, "
                              "FACE or both, and no other form.")
    if sample_size is not None and sample_size < 1:
        raise ValidationError("The sample needs at least one battle.")


@transaction.atomic
def arena_study_create(*, arena: Arena, author, title: str, forms: tuple[str, ...],
                       sample_size: int | None = None, seed: int = 0, overlap_k: int = 3,
                       instructions: str = "", seconds_per_item: int = 240,
                       assignment_timeout_minutes: int = 30) -> Study:
    """A study whose items are the conversations of ARENA's voted battles (every one, or a
    seeded sample of SAMPLE_SIZE battles): two items per battle, one per system. All or
    nothing: a bad request stores no benchmark, submission or study."""
    forms = tuple(dict.fromkeys(forms))
    _validate(forms, sample_size)
    battles = _battles(arena, sample_size=sample_size, seed=seed)
    if not battles:
        raise ValidationError("This arena has no voted battle yet: there is nothing to "
                              "annotate.")
    try:
        result = battle_dialogues(benchmark=_benchmark_meta(arena),
                                  battles=[_battle_record(b, arena) for b in battles])
    except FormatError as exc:  # e.g. a battle stored without a message
        raise ValidationError([str(issue) for issue in exc.issues][:20]) from exc
    systems: dict[str, System] = {}
    for battle in battles:
        systems.setdefault(battle.system_a.name, battle.system_a)
        systems.setdefault(battle.system_b.name, battle.system_b)
    created = []
    try:
        benchmark = benchmark_create_from_bundle(bundle=result.bundle, owner=author)
        benchmark.is_public = False  # people's own messages: the author's eyes only
        benchmark.save(update_fields=["is_public"])
        sources = []
        for name in result.systems():
            submission = log_submission_store(
                system=systems[name], benchmark=benchmark, logs=result.logs[name], user=author,
                note=f"battle dialogues of the arena {arena.slug}", created=created)
            sources.append(_source(submission, result.logs[name]))
        study = _study(arena=arena, benchmark=benchmark, author=author, title=title,
                       forms=forms, seed=seed, overlap_k=overlap_k, instructions=instructions,
                       seconds_per_item=seconds_per_item,
                       assignment_timeout_minutes=assignment_timeout_minutes)
        dialogues = {d.external_id: d for d in benchmark.dialogues.all()}
        builder = _BattleItemBuilder(study=study, dialogues=dialogues, sources=sources,
                                     reference=Source(key=REFERENCE))
        builder.answered = {dialogue_id: source.key for source in sources
                            for (dialogue_id, _) in source.responses}
        builder.add_picks([sampling.Pick(dialogue_id, 0, (key,))
                           for dialogue_id, key in sorted(builder.answered.items())])
        builder.save()
    except BaseException:
        submission_files_delete(created)
        raise
    study.config = {"arena": arena.slug, "arena_id": arena.pk, "battles": len(battles),
                    "sample_size": sample_size, "sources": [s.key for s in sources],
                    "sampled_dialogues": len(dialogues), "seed": seed,
                    "items": builder.counts()}
    study.save(update_fields=["config"])
    return study


def _source(submission, logs: list[dict]) -> Source:
    """The system's answers in its battle dialogues, by (dialogue, turn index)."""
    source = Source(key=f"submission:{submission.pk}", system_id=submission.system_id,
                    submission_id=submission.pk)
    for log in logs:
        for index, turn in enumerate(log["turns"]):
            if turn["role"] == "system":
                source.responses[(log["dialogue_id"], index)] = {"text": turn["text"],
                                                                 "citations": []}
    return source


def _study(*, arena: Arena, benchmark: Benchmark, author, title: str, forms: tuple[str, ...],
           seed: int, overlap_k: int, instructions: str, seconds_per_item: int,
           assignment_timeout_minutes: int) -> Study:
    return Study.objects.create(
        slug=unique_study_slug(title), title=title, benchmark=benchmark, author=author,
        instructions=instructions or default_instructions(forms), forms=list(forms),
        likert_scales=[], overlap_k=overlap_k, gold_rate=0,
        seconds_per_item=seconds_per_item, invite_token=secrets.token_urlsafe(18),
        assignment_timeout_minutes=assignment_timeout_minutes, seed=seed)
