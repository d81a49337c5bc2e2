"""FACE instruction optimization against a human study (FACE §2.3, Algorithm 1; Appendix B).

Glue around `evaluation.lib.llm.face`: the study's labels come through
`evaluation.ports.face_study_labels`; every instruction version (its parent, the textual
gradient it came from, its UCB estimate and its training/dev correlation) is a `FaceInstruction`
row; each finished iteration is committed with its beam and its token/cost report, so a job
restarted after its worker died continues with the next iteration (the calls of an unfinished
one are replayed from the gateway's cache, free).

Deviation from Algorithm 1, for cost: textual gradients are asked for on a sample of
`gradient_particles` training particles per beam instruction (line 4 loops over every particle);
`gradient_particles=0` uses them all. Dev correlations are computed per pool instruction and the
final set I* is the `final_size` instructions with the best dev correlation (line 20 searches
all subsets of the pool, which is exponential).
"""

from __future__ import annotations

import logging
import math
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max

from evaluation import ports
from evaluation.lib.llm.estimate import RunEstimate, estimate_face_optimization
from evaluation.lib.llm.face import engine
from evaluation.lib.llm.face.aspects import ASPECTS, TURN, parse_aspects
from evaluation.lib.llm.face.optimize import (
    beam_select,
    correlation,
    parse_rewrites,
    split_dialogues,
    ucb_select,
)
from evaluation.lib.llm.face.particles import Particle
from evaluation.lib.llm.face.prompts import gradient_rewrite_messages, initial_instruction
from evaluation.lib.llm.face.scoring import ParticleScore, face_score, score_particle
from evaluation.lib.llm.gateway import LLMCallError, token_cost
from evaluation.lib.progress import Progress, no_progress
from evaluation.models import (
    Benchmark,
    FaceInstruction,
    FaceOptimization,
    Job,
    LLMSpend,
    Run,
    Submission,
)
from evaluation.services import spending as spending_rules
from evaluation.services.jobs import job_begin, job_create, job_finish, job_progress
from evaluation.services.llm_models import RunUsage, llm_gateway, model_config
from evaluation.services.llm_runs import DuplicateRun, llm_run_create

logger = logging.getLogger(__name__)

DEFAULTS = {"iterations": 3, "beam": 2, "candidates": 4, "gradients": 2, "seed": 0,
            "dev_share": 0.2, "gradient_particles": 4, "ucb_sample": 8, "ucb_rounds": 0,
            "final_size": 0, "method": "spearman", "max_reasks": 1}


class FaceOptimizationError(ValueError):
    """The optimization cannot start: no such study, no labels for the aspect, too few units."""


def _labels(slug: str, aspect: str) -> dict:
    source = ports.face_study_labels
    if source is None:
        raise FaceOptimizationError("no app supplies human study labels (annotation is not "
                                    "installed)")
    found = source.labels(slug=slug, fields=ASPECTS[aspect].label_fields)
    if found is None:
        raise FaceOptimizationError(f"no study {slug!r}")
    if found["field"] is None:
        raise FaceOptimizationError(
            f"study {slug!r} has no labels of {aspect} (looked for the fields "
            f"{', '.join(ASPECTS[aspect].label_fields)})")
    if found["unit_type"] != ASPECTS[aspect].level:
        raise FaceOptimizationError(
            f"study {slug!r} labels {found['field']} per {found['unit_type']}, but {aspect} is "
            f"a {ASPECTS[aspect].level}-level aspect")
    return found


def _plan(study: str, aspect: str, params: dict) -> tuple[str, dict, dict]:
    """(aspect, settings, the study's labels) of an optimization, or FaceOptimizationError."""
    try:
        (aspect,) = parse_aspects([aspect]) or ("",)
    except ValueError as exc:
        raise FaceOptimizationError(str(exc)) from exc
    if not aspect:
        raise FaceOptimizationError("name one FACE aspect")
    unknown = set(params) - set(DEFAULTS)
    if unknown:
        raise FaceOptimizationError(f"unknown parameter(s) {', '.join(sorted(unknown))}")
    settings = {**DEFAULTS, **{k: v for k, v in params.items() if v is not None}}
    for name in ("iterations", "beam", "candidates", "gradients"):
        if int(settings[name]) < 1:
            raise FaceOptimizationError(f"{name} must be at least 1")
    if settings["candidates"] < settings["beam"]:
        raise FaceOptimizationError("the candidate size b' must be at least the beam width b")
    found = _labels(study, aspect)
    dialogues = {unit["dialogue_id"] for unit in found["units"]}
    if len(dialogues) < 4:
        raise FaceOptimizationError(f"study {study!r} labels {aspect} on {len(dialogues)} "
                                    "dialogue(s); at least 4 are needed for a train/dev split")
    return aspect, settings, found


def _estimate(aspect: str, settings: dict, found: dict, model: dict, *,
              resume_after: int = 0) -> RunEstimate:
    """Algorithm 1's tokens and cost on the study's labelled conversations; RESUME_AFTER
    finished iterations are not counted again (nor the decomposition, cached)."""
    keys = {(u["system"], u["dialogue_id"]) for u in found["units"]}
    conversations = [turns for key, turns in found["conversations"].items() if key in keys]
    params = {**settings, "iterations": max(0, int(settings["iterations"]) - resume_after)}
    try:
        return estimate_face_optimization(
            conversations, aspect=ASPECTS[aspect], params=params,
            labelled_turns=len(found["units"]) if found["unit_type"] == TURN else None,
            decompose=not resume_after,
            price=lambda p, a: token_cost(model["model"], p, a))
    except ValueError as exc:
        raise FaceOptimizationError(str(exc)) from exc


def face_optimization_estimate(*, study: str, aspect: str, model: dict,
                               **params) -> RunEstimate:
    """What `face_optimization_create` with the same choices would spend (reads only)."""
    return _estimate(*_plan(study, aspect, params), model)


def face_optimization_create(*, study: str, aspect: str, model: dict, user=None,
                             enqueue: bool = True, spending: str = spending_rules.CHECK,
                             **params) -> FaceOptimization:
    """A queued optimization of ASPECT's instructions on STUDY's labels (next version). Its
    estimate is reserved on USER's LLM budget in the transaction that creates it (SPENDING as
    for `llm_run_create`): BudgetExceeded stores nothing."""
    aspect, settings, found = _plan(study, aspect, params)
    estimate = _estimate(aspect, settings, found, model)
    dialogues = {unit["dialogue_id"] for unit in found["units"]}
    train, dev = split_dialogues(dialogues, dev_share=float(settings["dev_share"]),
                                 seed=int(settings["seed"]))
    with transaction.atomic():
        version = (FaceOptimization.objects.select_for_update().filter(aspect=aspect)
                   .aggregate(v=Max("version"))["v"] or 0) + 1
        job = job_create(kind=Job.Kind.FACE_OPTIMIZATION, user=user,
                         params={"study": study, "aspect": aspect},
                         task="evaluation.tasks.face_optimize_job" if enqueue else None)
        optimization = FaceOptimization.objects.create(
            benchmark=Benchmark.objects.get(pk=found["benchmark_id"]), study_slug=study,
            aspect=aspect, version=version, label_field=found["field"], params=settings,
            model=dict(model), train_dialogues=train, dev_dialogues=dev, job=job,
            created_by=user)
        FaceInstruction.objects.create(optimization=optimization, iteration=0,
                                       text=initial_instruction(ASPECTS[aspect]))
        _reserve(optimization, estimate, job, user, spending)
    return optimization


def _reserve(optimization: FaceOptimization, estimate: RunEstimate, job: Job, user,
             spending: str) -> None:
    if spending != spending_rules.EXEMPT:
        spending_rules.spending_reserve(
            user=user, kind=LLMSpend.Kind.FACE_OPTIMIZATION, estimate=estimate,
            model=optimization.model["model"], job=job,
            enforce=spending == spending_rules.CHECK,
            description=f"FACE {optimization.name} on study {optimization.study_slug}")


def face_optimization_restart(*, optimization: FaceOptimization, user=None,
                              enqueue: bool = True, spending: str = spending_rules.CHECK) -> Job:
    """A new job that continues OPTIMIZATION after its last finished iteration (queued, or
    without ENQUEUE run by the caller); the estimate of the iterations left is reserved like
    `face_optimization_create`'s."""
    found = _labels(optimization.study_slug, optimization.aspect)
    estimate = _estimate(optimization.aspect, optimization.params, found, optimization.model,
                         resume_after=optimization.iterations_done)
    with transaction.atomic():
        job = job_create(kind=Job.Kind.FACE_OPTIMIZATION, user=user,
                         params={"study": optimization.study_slug,
                                 "aspect": optimization.aspect, "resume": True},
                         task="evaluation.tasks.face_optimize_job" if enqueue else None)
        FaceOptimization.objects.filter(pk=optimization.pk).update(job=job)
        _reserve(optimization, estimate, job, user, spending)
    return job


def face_optimization_process(*, job_id: int, progress: Progress | None = None) -> dict | None:
    """Claim the optimization's job, run it, record the outcome (the task's body). Any failure
    is recorded on the job with its reason; what finished iterations stored is kept."""
    job = job_begin(job_id)
    if job is None:
        return None
    optimization = FaceOptimization.objects.get(job_id=job_id)

    def report(stage: str, done: int, total: int) -> None:
        job_progress(job_id, stage, done, total)
        if progress is not None:
            progress(stage, done, total)

    try:
        result = face_optimization_execute(optimization=optimization, progress=report)
    except Exception as exc:  # noqa: BLE001 - recorded on the job, the worker stays up
        logger.info("FACE optimization %s failed: %s", optimization.pk, exc)
        job_finish(job_id, error=f"{type(exc).__name__}: {exc}")
        return {"error": f"{type(exc).__name__}: {exc}"}
    job_finish(job_id, result=result)
    return result


# --- execution ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ref:
    """One particle of a labelled unit."""

    unit: tuple[str, str]  # (system, unit id) as the study's labels name it
    dialogue: str
    history: tuple[tuple[str, str], ...]
    particle: Particle


class _Scorer:
    def __init__(self, optimization: FaceOptimization, usage: RunUsage) -> None:
        self.gateway = llm_gateway()
        self.config = model_config(optimization.model)
        self.aspect = ASPECTS[optimization.aspect]
        self.max_reasks = int(optimization.params.get("max_reasks", 1))
        self.usage = usage

    def particle(self, text: str, ref: _Ref) -> ParticleScore:
        return score_particle(self.gateway, self.config, text, self.aspect, ref.history,
                              ref.particle, max_reasks=self.max_reasks,
                              meter=self.usage.stage("scores"))

    def scores(self, text: str, refs: Sequence[_Ref]) -> list[float | None]:
        return [s.value for s in self.gateway.map(lambda ref: self.particle(text, ref), refs)]

    def unit_scores(self, texts: Sequence[str], refs: Sequence[_Ref]) -> dict:
        """FACE(I, P_x) per labelled unit x over REFS (the instructions averaged)."""
        per_text = [self.scores(text, refs) for text in texts]
        by_unit: dict[tuple, list[int]] = defaultdict(list)
        for position, ref in enumerate(refs):
            by_unit[ref.unit].append(position)
        return {unit: face_score([[scores[p] for p in positions] for scores in per_text])
                for unit, positions in by_unit.items()}


def face_optimization_execute(*, optimization: FaceOptimization,
                              progress: Progress = no_progress) -> dict:
    """Run (or continue) Algorithm 1; raises LogprobsUnavailable for a server without logprobs."""
    params = optimization.params
    found = _labels(optimization.study_slug, optimization.aspect)
    gold = {(u["system"], u["unit_id"]): u["label"] for u in found["units"]}
    usage = RunUsage()
    scorer = _Scorer(optimization, usage)
    refs = _particles(scorer, optimization, found, progress)
    train_set = set(optimization.train_dialogues)
    train = [r for r in refs if r.dialogue in train_set]
    dev = [r for r in refs if r.dialogue not in train_set]
    if not train or not dev:
        raise FaceOptimizationError("no particles on the training or the dev dialogues (the "
                                    "model decomposed no labelled response)")
    method = params.get("method", "spearman")
    seed_instruction = optimization.instructions.get(iteration=0)
    beams = dict(optimization.beams or {})
    if "1" not in beams:
        seed_instruction.train_correlation = correlation(
            scorer.unit_scores([seed_instruction.text], train), gold, method)
        seed_instruction.save(update_fields=["train_correlation"])
        beams["1"] = [seed_instruction.pk]
        FaceOptimization.objects.filter(pk=optimization.pk).update(beams=beams)
    iterations = int(params["iterations"])
    for k in range(optimization.iterations_done + 1, iterations + 1):
        progress("iteration", k - 1, iterations)
        report = _iteration(optimization, scorer, k, beams[str(k)], train, gold, method)
        beams[str(k + 1)] = report.pop("next_beam")
        with transaction.atomic():
            optimization.usage = [*(u for u in optimization.usage if u["iteration"] != k),
                                  {"iteration": k, **report, **usage.summary(
                                      model=scorer.config.model, units=len(train))}]
            optimization.iterations_done, optimization.beams = k, beams
            optimization.save(update_fields=["usage", "iterations_done", "beams"])
            spending_rules.spending_add(job_id=optimization.job_id, usage=usage.total.summary())
        usage = RunUsage()
        scorer.usage = usage
    progress("iteration", iterations, iterations)
    return _final_selection(optimization, scorer, train, dev, gold, method, usage)


def _particles(scorer: _Scorer, optimization: FaceOptimization, found: dict,
               progress: Progress) -> list[_Ref]:
    """Every particle of every labelled unit (decomposed once; cached thereafter)."""
    conversations = found["conversations"]
    keys = sorted({(u["system"], u["dialogue_id"]) for u in found["units"]
                   if (u["system"], u["dialogue_id"]) in conversations})
    labelled = {(u["system"], u["unit_id"]) for u in found["units"]}
    per_turn = found["unit_type"] == TURN
    refs: list[_Ref] = []
    progress("particles", 0, len(keys))

    def decompose(key):
        return engine.decompose(scorer.gateway, scorer.config, conversations[key],
                                max_reasks=int(optimization.params.get("max_reasks", 1)),
                                meter=scorer.usage.stage("particles"))

    for done, (key, conversation) in enumerate(zip(keys, scorer.gateway.map(decompose, keys),
                                                   strict=True), start=1):
        system, dialogue = key
        for turn, _, particle in conversation.particles():
            unit = (system, f"{dialogue}#{turn}" if per_turn else dialogue)
            if unit in labelled:
                refs.append(_Ref(unit, dialogue, tuple(conversation.turns[:turn]), particle))
        progress("particles", done, len(keys))
    return refs


def _iteration(optimization: FaceOptimization, scorer: _Scorer, k: int, beam_ids: list[int],
               train: list[_Ref], gold: dict, method: str) -> dict:
    """One iteration of Algorithm 1 (lines 3–18): gradients and rewrites of the beam, UCB
    candidates into the pool, the next beam by training correlation."""
    params = optimization.params
    # An unfinished earlier attempt of this iteration is redone (from the cache, free).
    FaceInstruction.objects.filter(optimization=optimization, iteration=k).delete()
    rng = random.Random(f"{params['seed']}:{k}")
    count = int(params.get("gradient_particles") or 0)
    rewrites: list[FaceInstruction] = []
    unparsed = 0
    for parent in FaceInstruction.objects.filter(pk__in=beam_ids).order_by("pk"):
        chosen = rng.sample(train, min(count, len(train))) if count else train
        for ref in chosen:
            predicted = scorer.particle(parent.text, ref).value
            messages = gradient_rewrite_messages(
                parent.text, scorer.aspect, ref.history, ref.particle.act, ref.particle.mention,
                ref.particle.feedback, predicted if predicted is not None else float("nan"),
                gold[ref.unit], int(params["gradients"]))
            try:
                answer = scorer.gateway.complete(scorer.config, messages,
                                                 meter=scorer.usage.stage("gradients")).text
            except LLMCallError:
                unparsed += 1
                continue
            pairs = parse_rewrites(answer, int(params["gradients"]))
            unparsed += not pairs
            rewrites += [FaceInstruction(optimization=optimization, parent=parent, iteration=k,
                                         text=text, gradient=feedback)
                         for feedback, text in pairs]
    FaceInstruction.objects.bulk_create(rewrites)
    # The same rewrite proposed twice is one arm of the bandit.
    candidates = list({r.text: r for r in reversed(rewrites)}.values())[::-1]
    population = list(range(len(train)))
    labels = [gold[ref.unit] for ref in train]

    def reward(arm: int, sample) -> float | None:
        scores = scorer.gateway.map(lambda i: scorer.particle(candidates[arm].text, train[i]),
                                    sample)
        return correlation({i: s.value for i, s in zip(sample, scores, strict=True)},
                           {i: labels[i] for i in sample}, method)

    rounds = int(params.get("ucb_rounds") or 0) or max(1, math.ceil(2.5 * len(candidates)))
    keep = min(int(params["candidates"]), len(candidates))
    chosen_arms, state = ucb_select(len(candidates), population, reward, keep=keep,
                                    rounds=rounds, sample_size=int(params["ucb_sample"]),
                                    rng=rng)
    for arm, candidate in enumerate(candidates):
        candidate.ucb_estimate, candidate.ucb_pulls = state.estimates[arm], state.pulls[arm]
        candidate.in_pool = arm in chosen_arms
        if candidate.in_pool:
            candidate.train_correlation = correlation(
                scorer.unit_scores([candidate.text], train), gold, method)
    FaceInstruction.objects.bulk_update(
        candidates, ["ucb_estimate", "ucb_pulls", "in_pool", "train_correlation"])
    pool = {i.pk: i.train_correlation for i in
            FaceInstruction.objects.filter(optimization=optimization, in_pool=True)
            .order_by("iteration", "pk")}
    # With an empty pool (no usable rewrite yet) the beam stays as it was.
    next_beam = beam_select(pool, int(params["beam"])) if pool else list(beam_ids)
    return {"rewrites": len(rewrites), "unparsed_rewrite_answers": unparsed,
            "ucb_rounds": rounds, "candidates": len(chosen_arms), "next_beam": next_beam}


def _final_selection(optimization: FaceOptimization, scorer: _Scorer, train, dev, gold,
                     method: str, usage: RunUsage) -> dict:
    """Algorithm 1, line 20: the pool's instructions ranked by dev correlation; the best
    `final_size` (default b) form I*. The seed stands in when the pool is empty."""
    pool = list(FaceInstruction.objects.filter(optimization=optimization, in_pool=True)
                .order_by("iteration", "pk"))
    if not pool:
        pool = list(FaceInstruction.objects.filter(optimization=optimization, iteration=0))
    for instruction in pool:
        instruction.dev_correlation = correlation(
            scorer.unit_scores([instruction.text], dev), gold, method)
    size = int(optimization.params.get("final_size") or 0) or int(optimization.params["beam"])
    ranked = beam_select({i.pk: i.dev_correlation for i in pool}, size)
    by_pk = {i.pk: i for i in pool}
    texts = [by_pk[pk].text for pk in ranked]
    with transaction.atomic():
        FaceInstruction.objects.filter(optimization=optimization).update(selected=False)
        for instruction in pool:
            instruction.selected = instruction.pk in ranked
        FaceInstruction.objects.bulk_update(pool, ["dev_correlation", "selected"])
        optimization.train_correlation = correlation(scorer.unit_scores(texts, train), gold,
                                                     method)
        optimization.dev_correlation = correlation(scorer.unit_scores(texts, dev), gold, method)
        optimization.usage = [*(u for u in optimization.usage if u["iteration"] != "final"),
                              {"iteration": "final", **usage.summary(
                                  model=scorer.config.model, units=len(dev))}]
        optimization.save(update_fields=["train_correlation", "dev_correlation", "usage"])
        spending_rules.spending_add(job_id=optimization.job_id, usage=usage.total.summary())
    return {"optimization": optimization.pk, "version": optimization.name,
            "selected": ranked, "train_correlation": optimization.train_correlation,
            "dev_correlation": optimization.dev_correlation,
            "particles": {"train": len(train), "dev": len(dev)}}


def face_instructions_resolve(versions: Sequence[str]) -> dict[str, dict]:
    """{aspect: {"version", "texts", "train_dialogues"}} for optimized versions named like
    `relevance-v2` (or by id); a clear error for an unknown or unfinished one."""
    resolved: dict[str, dict] = {}
    for name in versions:
        optimization = face_optimization_find(name)
        texts = list(optimization.instructions.filter(selected=True).order_by("pk")
                     .values_list("text", flat=True))
        if not texts:
            raise FaceOptimizationError(f"FACE instructions {optimization.name} are not "
                                        "finished (no selected instruction yet)")
        if optimization.aspect in resolved:
            raise FaceOptimizationError(f"two instruction versions for {optimization.aspect}")
        resolved[optimization.aspect] = {"version": optimization.name, "texts": texts,
                                         "train_dialogues": list(optimization.train_dialogues)}
    return resolved


def face_optimization_find(name: str) -> FaceOptimization:
    name = name.strip()
    found = None
    if name.isdigit():
        found = FaceOptimization.objects.filter(pk=int(name)).first()
    elif "-v" in name:
        aspect, _, version = name.rpartition("-v")
        if version.isdigit():
            found = FaceOptimization.objects.filter(aspect=aspect, version=int(version)).first()
    if found is None:
        raise FaceOptimizationError(f"no FACE instruction version {name!r} (names look like "
                                    "relevance-v1; \"Optimize instructions\" on a study's "
                                    "FACE page makes them)")
    return found


def face_runs_create(*, benchmark: Benchmark, versions: Sequence[str], model: dict, user=None,
                     aspects: Sequence[str] = ()) -> list[Run]:
    """Queued FACE runs, with the instruction VERSIONS, of every `log` submission on
    BENCHMARK (a study author's "evaluate with FACE"); all or none are created."""
    face = {"aspects": list(aspects) or None, "instructions": face_instructions_resolve(versions)}
    submissions = list(Submission.objects.filter(benchmark=benchmark, protocol="log")
                       .order_by("pk"))
    if not submissions:
        raise FaceOptimizationError(f"{benchmark.slug} has no log submission to evaluate")
    with transaction.atomic():
        # every submission's row lock before the first budget lock, in one order, so a run
        # started meanwhile on one of them (submission, then account) cannot deadlock with us
        list(Submission.objects.select_for_update().filter(
            pk__in=[s.pk for s in submissions]).order_by("pk").values_list("pk", flat=True))
        return [_face_run(submission, model, user, face) for submission in submissions]


def _face_run(submission: Submission, model: dict, user, face: dict) -> Run:
    """A queued FACE run, or the identical one already queued or running."""
    try:
        return llm_run_create(submission=submission, evaluator="face", model=model, user=user,
                              face=face)
    except DuplicateRun as twin:
        return twin.run
