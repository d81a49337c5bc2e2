"""How a study hands items out (statistics.md, "Label these next: active handout"): setting the
policy (checked whole, stored whole or not at all) and drawing the waves of the active policy.

Under "active" the study's pool is its regular items of the driving metric's unit type
(response items for a turn-level metric, conversation items for a dialogue-level one), split at
random per system into `active_handout.WAVES` waves. A wave is drawn when the one before has
every drawn item labelled to its target (and wave 1 when the policy is set): each of its items
gets its inclusion probability π (from the evaluator's predicted error on the labels so far; in
wave 1, with no label yet, from the judge's reported uncertainty where it stores one, else
uniform) and is drawn with probability π; only drawn items are handed out
(`services.handout`), and the report weights their labels by 1/π. Items of other modes
(pairwise, blind recommendation, or conversations under a turn-level metric) are handed out as
under the uniform policy. Drawing happens under the study row's lock, the lock every hand-out
takes, so a wave is drawn once however many annotators ask at the same moment.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from evaluation.lib.stats import active_handout

from ..handout_selectors import (
    POOL_MODES,
    PoolItem,
    aspect_fields,
    pool_items,
    pool_score_set,
    pool_scores,
    pool_unit_type,
)
from ..models import (
    Annotation,
    HandoutDraw,
    HandoutPolicy,
    HandoutWave,
    Study,
    StudyItem,
)
from ..report_selectors import evaluator_names, evaluator_score_sets, study_label_table


@dataclass(frozen=True)
class HandoutChoice:
    """What the author asks for: the policy and, under "active", the evaluator metric whose
    scores drive it, the human field its error is measured on and the label budget."""

    policy: str = HandoutPolicy.UNIFORM
    evaluator: str = ""
    metric: str = ""
    aspect: str = ""
    budget: int | None = None


def _error(field: str, message: str) -> ValidationError:
    return ValidationError({field: [message]})


def _check(study: Study, choice: HandoutChoice) -> tuple[list[PoolItem], str]:
    """The pool's items and the human field for an active CHOICE; a ValidationError naming the
    field and what is wrong otherwise."""
    names = evaluator_names(benchmark=study.benchmark)
    evaluator = choice.evaluator.strip()
    if not evaluator:
        raise _error("evaluator", "Name the evaluator whose scores drive the active handout.")
    if evaluator not in names:
        raise _error("evaluator", f"No finished run of {evaluator!r} on {study.benchmark.name} "
                                  f"(evaluators with runs: {', '.join(names) or 'none'}).")
    sets = evaluator_score_sets(benchmark=study.benchmark, evaluators=[evaluator],
                                units=set()).get(evaluator, [])
    metrics = {s.metric: s.unit_type for s in sets}
    offered = sorted(m for m, kind in metrics.items() if kind in POOL_MODES)
    if not choice.metric:
        raise _error("metric", f"Choose the metric of {evaluator} that drives the handout "
                               f"(turn- or dialogue-level: {', '.join(offered) or 'none'}).")
    if choice.metric not in metrics:
        raise _error("metric", f"{evaluator} has no metric {choice.metric!r} (its turn- and "
                               f"dialogue-level metrics: {', '.join(offered) or 'none'}).")
    unit_type = metrics[choice.metric]
    if unit_type not in POOL_MODES:
        raise _error("metric", f"{choice.metric} scores {unit_type}s; the active handout needs "
                               "a turn-level (response items) or dialogue-level (conversation "
                               "items) metric.")
    mode = POOL_MODES[unit_type]
    pool = pool_items(study, unit_type)
    if not pool:
        raise _error("metric", f"{choice.metric} scores {unit_type}s, but the study has no "
                               f"{mode} items to hand out (its forms: {', '.join(study.forms)}).")
    drawn_type = _drawn_unit_type(study)
    if drawn_type and drawn_type != unit_type:
        raise _error("metric", f"The study's waves were drawn from its {POOL_MODES[drawn_type]} "
                               f"items: choose a {drawn_type}-level metric.")
    values = pool_scores(study, evaluator, choice.metric, unit_type, pool)
    missing = [p for p in pool if (p.system, p.unit_id) not in values]
    if len(missing) == len(pool):
        raise _error("metric", f"{evaluator} · {choice.metric} has no score on any of the "
                               f"study's {len(pool)} {mode} items: run it on the study's "
                               "systems first, or choose a metric that scored them.")
    if missing:
        shown = ", ".join(f"{p.system or 'reference'} {p.unit_id}" for p in missing[:3])
        raise _error("metric", f"{evaluator} · {choice.metric} scores {len(pool) - len(missing)} "
                               f"of the study's {len(pool)} {mode} items; the active handout "
                               f"needs a score on every one (unscored: {shown}"
                               f"{', …' if len(missing) > 3 else ''}).")
    fields = aspect_fields(study, mode)
    usable = sorted(name for name, spec in fields.items() if spec.unit_type == unit_type)
    aspect = choice.aspect or (usable[0] if len(usable) == 1 else "")
    if aspect not in usable:
        raise _error("aspect", f"Choose the human field {choice.metric}'s error is measured on: "
                               f"a numeric {unit_type}-level field of the {mode} items "
                               f"({', '.join(usable) or 'the study has none'}); "
                               f"not {choice.aspect!r}." if choice.aspect else
                     f"Choose the human field {choice.metric}'s error is measured on "
                     f"({', '.join(usable) or 'the study has none'}).")
    if choice.budget is None or not 1 <= choice.budget <= len(pool):
        raise _error("budget", f"The label budget is the number of {mode} items the humans "
                               f"should label (in expectation): between 1 and {len(pool)}, the "
                               "items the metric scored.")
    return pool, aspect


def _drawn_unit_type(study: Study) -> str | None:
    mode = (HandoutDraw.objects.filter(wave__study=study).values_list("item__mode", flat=True)
            .first())
    return next((kind for kind, m in POOL_MODES.items() if m == mode), None)


def handout_policy_set(*, study: Study, choice: HandoutChoice, now=None) -> Study:
    """Set STUDY's handout policy to CHOICE (checked; nothing is stored on a bad choice) and,
    when it becomes active, draw its first wave. Raises ValidationError keyed by field
    (policy, evaluator, metric, aspect, budget)."""
    with transaction.atomic():
        study = Study.objects.select_for_update(of=("self",)).select_related("benchmark").get(
            pk=study.pk)
        if choice.policy not in HandoutPolicy.values:
            raise _error("policy", "Choose 'uniform' or 'active'.")
        if study.is_imported:
            raise _error("policy", "An imported study has finished labels and no items to hand "
                                   "out.")
        if not study.is_open:
            raise _error("policy", "This study is closed: reopen it to change how it hands "
                                   "items out.")
        waves = study.handout_waves.count()
        if choice.policy == HandoutPolicy.UNIFORM:
            if waves:
                raise _error("policy", f"This study has drawn {waves} wave"
                                       f"{'s' if waves > 1 else ''} by the active policy: its "
                                       "labels are unbiased only with their inverse-probability "
                                       "weights, so it stays active. To label more items, raise "
                                       "the budget (up to every item).")
            study.handout_policy, study.handout_evaluator = HandoutPolicy.UNIFORM, ""
            study.handout_metric, study.handout_aspect, study.handout_budget = "", "", None
        else:
            _, aspect = _check(study, choice)
            study.handout_policy = HandoutPolicy.ACTIVE
            study.handout_evaluator, study.handout_metric = choice.evaluator.strip(), \
                choice.metric
            study.handout_aspect, study.handout_budget = aspect, choice.budget
        study.save(update_fields=["handout_policy", "handout_evaluator", "handout_metric",
                                  "handout_aspect", "handout_budget"])
        if study.is_active_handout and not waves:
            handout_waves_advance(study=study, now=now)
        return study


def _labels(study: Study) -> dict[int, int]:
    return dict(Annotation.objects.filter(item__study=study, assignment__member__excluded=False)
                .values_list("item").annotate(n=Count("pk")))


def wave_is_done(wave: HandoutWave, labels: dict[int, int]) -> bool:
    """Every item WAVE drew has its target labels (LABELS: item -> labels that count)."""
    return all(labels.get(pk, 0) >= target for pk, target in
               wave.draws.filter(drawn=True).values_list("item_id", "item__target_labels"))


def handout_waves_advance(*, study: Study, now=None, labels: dict[int, int] | None = None
                          ) -> HandoutWave | None:
    """Draw STUDY's next waves while the last one is done (every drawn item labelled to its
    target) and waves are left; the caller holds the study row's lock. Returns the wave now
    being labelled (None when every wave is done)."""
    now = now or timezone.now()
    labels = _labels(study) if labels is None else labels
    last = study.handout_waves.order_by("-number").first()
    while last is None or wave_is_done(last, labels):
        if last is not None and last.number >= last.of:
            return None
        last = _draw_wave(study, 1 if last is None else last.number + 1, now)
    return last


def _draw_wave(study: Study, number: int, now) -> HandoutWave:
    """Wave NUMBER of STUDY: its items' π and draws (active_handout.plan_wave), stored."""
    unit_type = pool_unit_type(study) or "turn"
    pool = pool_items(study, unit_type)
    values, spread = pool_score_set(study, study.handout_evaluator, study.handout_metric,
                                    unit_type, pool)
    human = study_label_table(study=study).human_means(study.handout_aspect) if number > 1 \
        else {}
    units = [active_handout.PoolUnit(p.item_id, p.system, values.get((p.system, p.unit_id)),
                                     human.get((p.system, p.unit_id)),
                                     spread.get((p.system, p.unit_id))) for p in pool]
    seed = _seed(study)
    waves_of = active_handout.assign_waves([(p.system, p.item_id) for p in pool], seed=seed)
    draws = active_handout.plan_wave(units, waves_of, wave=number,
                                     budget=float(study.handout_budget), seed=seed + number)
    score = {p.item_id: values.get((p.system, p.unit_id)) for p in pool}
    wave = HandoutWave.objects.create(
        study=study, number=number, of=active_handout.WAVES,
        rule=(HandoutWave.Rule.ACTIVE if number > 1 or any(d.predictor != "none" for d in draws)
              else HandoutWave.Rule.UNIFORM),
        evaluator=study.handout_evaluator, metric=study.handout_metric,
        aspect=study.handout_aspect, budget=sum(d.pi for d in draws), units=len(draws),
        drawn=sum(d.drawn for d in draws), labels_used=sum(u.label is not None for u in units),
        seed=seed + number, created_at=now)
    HandoutDraw.objects.bulk_create([
        HandoutDraw(wave=wave, item_id=d.key, pi=d.pi, drawn=d.drawn, score=score[d.key],
                    predicted_error=d.predicted_error) for d in draws], batch_size=500)
    return wave


def _seed(study: Study) -> int:
    """The study's draws' seed: its seed and slug (a keyed hash, not Python's hash())."""
    digest = hashlib.blake2b(f"{study.seed}:{study.slug}".encode(), digest_size=6).digest()
    return int.from_bytes(digest, "big")


def active_exclusions(*, study: Study, labels: dict[int, int], now=None) -> set[int]:
    """The items an active study does not hand out now: its pool items not drawn (yet). Draws
    the next wave first when the last one is done; the caller holds the study row's lock."""
    handout_waves_advance(study=study, now=now, labels=labels)
    unit_type = pool_unit_type(study) or "turn"
    pool = StudyItem.objects.filter(study=study, kind=StudyItem.Kind.NORMAL,
                                    mode=POOL_MODES.get(unit_type, StudyItem.Mode.RESPONSE))
    return set(pool.exclude(handout_draw__drawn=True).values_list("pk", flat=True))
