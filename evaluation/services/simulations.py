"""Writes for user simulations (docs/simulation.md): create, process a batch of users, finish,
cancel.

A simulation is split into batches of `batch_size` users, one Celery task each
(`evaluation.tasks.simulate_batch_job`), so more workers finish it sooner. Every dialogue is
stored as it finishes with an upsert on (simulation, user): a batch delivered again after its
worker died skips the users already stored, so no dialogue is duplicated and little is redone.
The batch that stores the last user finishes the simulation under a row lock (exactly once):
the successful dialogues become a `log` submission of the system, and their preference coverage
(PEPPER §3.3.1) a Run with unit scores per user and summaries with user-clustered jackknife-t CIs.

A dialogue that fails (the live system down, slow, malformed, unknown ids; the simulator's LLM
unusable) is stored as a failure with its reason and no turn. Once the failures pass the
simulation's threshold (a share of its users) the job stops with a message naming the counts
and the most common reason.
"""

import json
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from evaluation.lib.formats.submission import item_infos, review_infos
from evaluation.lib.metrics.preference import KS, SimulatedUser, preference_report
from evaluation.lib.metrics.suite import SUITE_NAME, SUITE_VERSION, evaluate_submission
from evaluation.lib.rankers import Catalogue
from evaluation.lib.runconfig import config_hash, run_config, suite_config_from_options
from evaluation.lib.simulators.driver import CANCELLED, simulate_dialogue
from evaluation.lib.simulators.simulators import (
    SIMULATORS,
    simulated_protocol,
    simulator_config_hash,
)
from evaluation.lib.simulators.trace import (
    SIMULATED_SPLIT,
    SIMULATED_SUITE_OPTIONS,
    simulated_trace_inputs,
)
from evaluation.lib.simulators.users import ItemCard, NoSimulatedUsers, pick_users, simulated_users
from evaluation.lib.stats.methods import interval_version
from evaluation.models import (
    Benchmark,
    Job,
    MetricSummary,
    Run,
    SimulatedDialogue,
    Simulation,
    UnitScore,
)
from evaluation.response_cache import connection_kept
from evaluation.selectors.benchmarks import benchmark_bundle
from evaluation.selectors.run_chunks import item_records, review_records
from evaluation.services.jobs import (
    job_cancel,
    job_finish,
    job_heartbeat,
    job_stopped,
    queue_check,
    task_enqueue,
)
from evaluation.services.live import live_client
from evaluation.services.llm_runs import RunUsage, llm_gateway, model_config, model_options
from evaluation.services.results import summaries_upsert, unit_scores_upsert
from evaluation.services.submissions import submission_create
from evaluation.signals import results_changed_notify

POOLS = ("catalogue", "dialogue")
MAX_USERS, MAX_TURNS = 5000, 50
BATCH_TASK = "evaluation.tasks.simulate_batch_job"
STOP_POLL_SECONDS = 0.5  # how often a running batch looks whether its job was cancelled


def _simulator(name: str, *, seed: int, shown_k: int, model: dict | None, meter=None,
               accept_at: int = 5):
    cls = SIMULATORS[name]
    if not cls.needs_llm:
        return cls(seed=seed, shown_k=shown_k)
    options = {"gateway": llm_gateway(), "config": model_config(model), "seed": seed,
               "shown_k": shown_k, "meter": meter}
    if name == "ievalm":
        options["accept_at"] = accept_at
    return cls(**options)


def simulation_create(*, benchmark, system, simulator: str, users: int, turns: int,
                      seed: int = 0, user=None, model: dict | None = None, batch_size: int = 10,
                      failure_threshold: float = 0.5, pool: str = "catalogue",
                      shown_k: int = 5, accept_at: int = 5, enqueue: bool = True) -> Simulation:
    """A queued simulation; with ENQUEUE its batches go to Celery on commit, without the caller
    runs them with `simulation_batch_process` (the command line's default).

    Everything that would make it fail for every user is refused here, before anything is
    stored: an unknown simulator, a system that is not live, a benchmark without simulated users
    (PEPPER needs the seen/target split), too few users, an LLM simulator without a model.
    """
    if simulator not in SIMULATORS:
        raise ValidationError(f"unknown simulator {simulator!r} (choose from "
                              f"{', '.join(SIMULATORS)})")
    if not system.is_live:
        raise ValidationError(f"system {system.slug!r} is not a live system: register its "
                              "endpoint first (docs/formats.md §4)")
    if not 1 <= turns <= MAX_TURNS or not 1 <= users <= MAX_USERS:
        raise ValidationError(f"users must be 1–{MAX_USERS} and turns 1–{MAX_TURNS}")
    if pool not in POOLS:
        raise ValidationError(f"pool must be one of {', '.join(POOLS)}")
    try:
        _batch_inputs(benchmark.pk, benchmark.created_at, users, seed)
    except (NoSimulatedUsers, ValueError) as error:
        raise ValidationError(f"{benchmark.slug}: {error}") from None
    cls = SIMULATORS[simulator]
    if cls.needs_llm:
        model = model or model_options()  # LLMConfigurationError when no model is set
        model_config(model).resolved_api_key()  # a missing key fails here, before any call
    config = {**_simulator(simulator, seed=seed, shown_k=shown_k, model=model,
                           accept_at=accept_at).config(),
              "users": users, "turns": turns, "pool": pool, "ks": list(KS),
              "system": system.slug, "benchmark": benchmark.slug}
    with transaction.atomic():
        job = Job.objects.create(kind=Job.Kind.SIMULATION, created_by=user, total=users,
                                 params={"system": system.slug, "benchmark": benchmark.slug,
                                         "simulator": simulator, "model": model})
        simulation = Simulation.objects.create(
            job=job, benchmark=benchmark, system=system, simulator=simulator,
            simulator_version=cls.version, config=config, config_hash=simulator_config_hash(
                config), users=users, turns=turns, seed=seed, batch_size=batch_size,
            failure_threshold=failure_threshold, created_by=user)
        if enqueue:
            queue_check()  # a broker that is down stores nothing (QueueUnavailable: 503)
            for batch in range(simulation.batches):
                task_enqueue(BATCH_TASK, simulation.pk, batch)
    return simulation


def _fail_reason(simulation: Simulation) -> str | None:
    failed = list(simulation.dialogues.filter(status=SimulatedDialogue.Status.FAILED)
                  .values_list("error_kind", "error"))
    if len(failed) <= simulation.failure_threshold * simulation.users:
        return None
    kind, count = Counter(k for k, _ in failed).most_common(1)[0]
    example = next(e for k, e in failed if k == kind)
    return (f"Stopped: {len(failed)} of {simulation.users} dialogues failed, over the "
            f"threshold of {simulation.failure_threshold:.0%}. Most common: {kind} ({count}×), "
            f"e.g. {example}")


def simulation_batch_process(*, simulation_id: int, batch: int) -> None:
    """Simulate one batch of users (the task's body); safe to deliver twice."""
    simulation = Simulation.objects.select_related("benchmark", "system", "job").get(
        pk=simulation_id)
    job = simulation.job
    if job_stopped(job.pk):
        return
    now = timezone.now()
    Job.objects.filter(pk=job.pk, status=Job.Status.QUEUED).update(
        status=Job.Status.RUNNING, started_at=now, stage="simulating")
    Job.objects.filter(pk=job.pk).update(heartbeat_at=now)
    # Beat the job's heartbeat while this batch runs, finish included (the last batch scores
    # every dialogue): a slow LLM or a loaded machine must not make a live job read as dead.
    with job_heartbeat(job.pk):
        inputs = _batch_inputs(simulation.benchmark_id, simulation.benchmark.created_at,
                               simulation.users, simulation.seed)
        start = batch * simulation.batch_size
        stored = set(simulation.dialogues.values_list("user_id", flat=True))
        todo = [(start + i, u) for i, u in
                enumerate(inputs.users[start:start + simulation.batch_size])
                if u.user_id not in stored]
        if todo:
            _simulate(simulation, inputs, todo)
        simulation_finish_if_done(simulation_id=simulation.pk)


@dataclass(frozen=True)
class _BatchInputs:
    users: list  # the simulation's users, in its order
    catalogue: Catalogue
    cards: dict


@lru_cache(maxsize=4)
def _batch_inputs(benchmark_id: int, created_at, users: int, seed: int) -> _BatchInputs:
    """What every batch of a simulation needs from its benchmark, read once per process: a
    worker that runs several batches of one simulation (or several simulations of one
    benchmark) reads the bundle once (≈ 2 s for the demo's 4,701 reviews on a loaded machine)
    instead of once per batch. A benchmark's rows never change after its import; CREATED_AT
    keys a benchmark imported again under the same id."""
    bundle = benchmark_bundle(benchmark=Benchmark.objects.get(pk=benchmark_id))
    everyone = pick_users(simulated_users(items=bundle.items, reviews=bundle.reviews,
                                          dialogues=bundle.dialogues), users, seed)
    return _BatchInputs(everyone, Catalogue.from_records(bundle.items, bundle.reviews),
                        {r["id"]: ItemCard.from_record(r) for r in bundle.items})


def simulation_run_here(*, simulation: Simulation, progress=None) -> Simulation:
    """Run every batch of a simulation created without ENQUEUE in this process (the command
    line's default, load_demo), stopping when its job finishes early (failures, cancel).
    PROGRESS(done, total) is called after each batch."""
    for batch in range(simulation.batches):
        simulation_batch_process(simulation_id=simulation.pk, batch=batch)
        if progress is not None:
            progress(Job.objects.get(pk=simulation.job_id).done, simulation.users)
        if job_stopped(simulation.job_id):
            break
    simulation.refresh_from_db()
    return simulation


def demo_simulations_ensure(*, benchmark, systems, users: int, turns: int, seed: int = 0):
    """One template-simulator run per system in SYSTEMS, in this process, unless the system
    already has a finished one on BENCHMARK (load_demo). Yields (system, simulation, created)."""
    for system in systems:
        done = (Simulation.objects.filter(benchmark=benchmark, system=system,
                                          simulator="template", run__isnull=False)
                .select_related("job").first())
        if done is not None:
            yield system, done, False
            continue
        simulation = simulation_create(benchmark=benchmark, system=system,
                                       simulator="template", users=users, turns=turns,
                                       seed=seed, batch_size=users, enqueue=False)
        yield system, simulation_run_here(simulation=simulation), True


def _simulate(simulation: Simulation, inputs: _BatchInputs, todo) -> None:
    catalogue, cards = inputs.catalogue, inputs.cards
    config, model = simulation.config, simulation.job.params.get("model")
    usage = RunUsage()
    system = live_client(system=simulation.system, benchmark=simulation.benchmark, model=model,
                         catalogue=catalogue, meter=usage.stage("system"))
    simulator = _simulator(simulation.simulator, seed=simulation.seed,
                           shown_k=config["shown_k"], model=model,
                           meter=usage.stage("simulator"), accept_at=config.get("accept_at", 5))
    # Dialogues in flight: enough to keep the slower party saturated. Each dialogue is
    # sequential and spends part of its time outside the LLM (cache reads and writes, the
    # system, Concord), so twice the gateway's slots keep every slot busy; the gateway's and
    # the system's own limits still cap the calls in flight.
    width = simulation.system.live_max_concurrency if simulation.system.live_kind == "http" \
        else 4
    if SIMULATORS[simulation.simulator].needs_llm:
        width = max(width, 2 * settings.LLM_MAX_CONCURRENCY)
    width = max(1, min(len(todo), width))

    stopped = _StopWatch(simulation.job_id)

    def one(entry):
        position, user = entry
        pool = user.candidate_item_ids if config["pool"] == "dialogue" else ()
        with connection_kept():  # the LLM cache's connection, kept for the whole dialogue
            return position, simulate_dialogue(
                user, simulator, system, benchmark=simulation.benchmark.slug,
                dialogue_id=f"sim{simulation.pk}-{user.user_id}", turns=simulation.turns,
                cards=cards, pool=pool, stop=stopped)

    with ThreadPoolExecutor(max_workers=width) as pool:
        futures = [pool.submit(one, entry) for entry in todo]
        for future in as_completed(futures):
            position, outcome = future.result()
            if outcome.error_kind == CANCELLED or stopped.finished:
                for pending in futures:
                    pending.cancel()
                continue  # the job finished meanwhile: store nothing more
            _store(simulation, position, outcome)
            if job_stopped(simulation.job_id):  # cancelled or stopped by another batch
                for pending in futures:
                    pending.cancel()
                return
            reason = _fail_reason(simulation)
            if reason:
                job_finish(simulation.job_id, error=reason, result=_failures(simulation))
                for pending in futures:
                    pending.cancel()
                return


class _StopWatch:
    """STOP for the dialogues of one batch: true once the simulation's job has finished
    (cancelled, or stopped by another batch's failures). Reads the job's status at most every
    STOP_POLL_SECONDS, whichever dialogue thread asks, so a cancel is seen within about one
    turn without a query per turn per dialogue."""

    def __init__(self, job_id: int):
        self.job_id, self.finished, self._checked = job_id, False, 0.0
        self._lock = threading.Lock()

    def __call__(self) -> bool:
        now = time.monotonic()
        # One thread reads while the others carry on with the last answer (no waiting).
        if self.finished or now - self._checked < STOP_POLL_SECONDS or \
                not self._lock.acquire(blocking=False):
            return self.finished
        try:
            self._checked = now
            self.finished = job_stopped(self.job_id)
        finally:
            self._lock.release()
        return self.finished


def _store(simulation: Simulation, position: int, outcome) -> None:
    SimulatedDialogue.objects.update_or_create(
        simulation=simulation, user_id=outcome.user_id,
        defaults={"position": position,
                  "status": "ok" if outcome.ok else "failed",
                  "turns": outcome.turns, "target_item_ids": list(outcome.target_item_ids),
                  "hidden": outcome.hidden, "error_kind": outcome.error_kind,
                  "error": outcome.error[:2000], "system_seconds": outcome.system_seconds,
                  "llm_seconds": outcome.llm_seconds, "total_seconds": outcome.total_seconds})
    done = simulation.dialogues.count()
    Job.objects.filter(pk=simulation.job_id).update(
        done=min(done, simulation.users), heartbeat_at=timezone.now(),
        stage=f"{done} of {simulation.users} users")


def _failures(simulation: Simulation) -> dict:
    failed = simulation.dialogues.filter(status=SimulatedDialogue.Status.FAILED)
    return {"failed": failed.count(),
            "failures_by_kind": dict(Counter(failed.values_list("error_kind", flat=True))),
            "failed_users": {d.user_id: f"{d.error_kind}: {d.error}" for d in failed[:50]}}


def simulation_finish_if_done(*, simulation_id: int) -> Run | None:
    """When every user is stored, store the log submission and the run, once."""
    with transaction.atomic():
        simulation = Simulation.objects.select_for_update().get(pk=simulation_id)
        if (simulation.run_id or job_stopped(simulation.job_id)
                or simulation.dialogues.count() < simulation.users):
            return None
        ok = list(simulation.dialogues.filter(status=SimulatedDialogue.Status.OK))
        if not ok:
            job_finish(simulation.job_id, error="every dialogue failed",
                       result=_failures(simulation))
            return None
        report = preference_report(
            [SimulatedUser(d.user_id, tuple(d.target_item_ids),
                           tuple(tuple(t["ranked_item_ids"]) for t in d.turns
                                 if t["role"] == "system")) for d in ok],
            turns=simulation.turns)
        submission = _log_submission(simulation, ok)
        run = Run.objects.create(
            submission=submission, evaluator=f"simulation.{simulation.simulator}",
            evaluator_version=simulation.simulator_version, config=simulation.config,
            config_hash=simulation.config_hash, job_id=simulation.job_id)
        _store_scores(run, ok, simulation.turns)
        for name, estimate in report.summaries.items():
            MetricSummary.objects.create(
                run=run, metric=name, axis="preference elicitation",
                direction=MetricSummary.Direction.HIGHER, value=estimate.value,
                ci_low=estimate.ci_low, ci_high=estimate.ci_high,
                n=estimate.n.get("clusters", 0), undefined_reason=estimate.undefined_reason or "",
                ci_method=estimate.method, ci_version=interval_version(estimate.method))
        timing = [(d.total_seconds, d.system_seconds, d.llm_seconds,
                   sum(1 for t in d.turns if t["role"] == "system")) for d in ok]
        trace = _trace_run(simulation, ok, submission)
        simulation.report = {**report.as_json(), **_failures(simulation),
                             "overhead_ms_per_turn": _overhead_ms(timing),
                             "trace_run": trace.pk}
        simulation.submission, simulation.run = submission, run
        simulation.save(update_fields=["report", "submission", "run"])
        job_finish(simulation.job_id, result={"run": run.pk, "submission": submission.pk,
                                              **_failures(simulation)})
        # the simulator's leaderboard (`simulated-<simulator>`) refreshes its ranks
        results_changed_notify(benchmark_id=simulation.benchmark_id,
                               protocol=simulated_protocol(simulation.simulator))
    return run


def _trace_run(simulation: Simulation, dialogues, submission) -> Run:
    """The non-LLM Trace suite on the simulated dialogues, where it applies
    (lib/simulators/trace.py): a finished Trace run of the simulation's log submission, its
    units the system turns, its clusters the simulated users."""
    references, submitted = simulated_trace_inputs(
        [(d.user_id, d.target_item_ids, d.turns) for d in dialogues])
    config = {**run_config(suite_options=SIMULATED_SUITE_OPTIONS, splits=[SIMULATED_SPLIT],
                           nli_enabled=False, nli_model_path=None),
              "reference": "each system turn's gold is the simulated user's target items",
              "simulation": simulation.pk}
    cited = {c.review_id for turn in submitted for c in turn.citations}
    benchmark = simulation.benchmark
    result = evaluate_submission(
        references, item_infos(item_records(benchmark=benchmark)),
        review_infos(review_records(benchmark=benchmark, external_ids=cited)), submitted,
        suite_config_from_options(SIMULATED_SUITE_OPTIONS), None)
    now = timezone.now()
    job = Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.SUCCEEDED,
                             created_by=simulation.created_by, total=len(dialogues),
                             done=len(dialogues), stage="scored when the simulation finished",
                             params={"submission": submission.pk, "simulation": simulation.pk},
                             started_at=now, finished_at=now)
    run = Run.objects.create(submission=submission, evaluator=SUITE_NAME,
                             evaluator_version=SUITE_VERSION, config=config,
                             config_hash=config_hash(config), job=job,
                             unavailable=dict(result.unavailable))
    unit_scores_upsert(run, result.values)
    collected: dict[str, tuple[list, list]] = {}
    for value in result.values:
        if value.value is not None:
            values, clusters = collected.setdefault(value.metric, ([], []))
            values.append(value.value)
            clusters.append(value.dialogue_id)
    summaries_upsert(run, result.specs, collected, result.unavailable,
                     lambda stage, done, total: None)
    return run


def _overhead_ms(timing) -> float | None:
    turns = sum(t for *_, t in timing)
    if not turns:
        return None
    return 1000 * sum(total - system - llm for total, system, llm, _ in timing) / turns


def _log_submission(simulation: Simulation, dialogues):
    lines = []
    for d in dialogues:
        lines.append({
            "log_id": f"sim{simulation.pk}-{d.user_id}", "dialogue_id": d.user_id,
            "turns": [{"role": t["role"], "text": t["text"],
                       **({"recommended_item_ids": t["ranked_item_ids"][:simulation.config[
                           "shown_k"]]} if t["role"] == "system" else {})} for t in d.turns],
            "ground_truth_item_ids": list(d.target_item_ids),
            "metadata": {"simulator": simulation.simulator,
                         "simulator_version": simulation.simulator_version,
                         "simulation": simulation.pk}})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "logs.jsonl"
        path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                        encoding="utf-8")
        return submission_create(
            system=simulation.system, benchmark=simulation.benchmark, path_or_file=path,
            user=simulation.created_by, protocol="log",
            note=f"{simulation.simulator} {simulation.simulator_version} simulation "
                 f"#{simulation.pk}: {len(lines)} users, {simulation.turns} turns")


def _store_scores(run: Run, dialogues, turns: int) -> None:
    rows = []
    for d in dialogues:
        report = preference_report(
            [SimulatedUser(d.user_id, tuple(d.target_item_ids),
                           tuple(tuple(t["ranked_item_ids"]) for t in d.turns
                                 if t["role"] == "system"))], turns=turns, n_resamples=1)
        for name in (f"{m}@{k}" for m in ("pc", "pcir_avg", "recall") for k in KS):
            rows.append(UnitScore(run=run, metric=name, unit_type="dialogue", unit_id=d.user_id,
                                  dialogue_id=d.user_id, value=report.summaries[name].value))
    UnitScore.objects.bulk_create(rows)


def simulation_cancel(*, simulation: Simulation, user=None) -> bool:
    """Cancel a queued or running simulation: its job is marked cancelled at once, running
    batches stop within about one turn of each dialogue in flight (STOP_POLL_SECONDS) and store
    nothing more, queued batches find the job finished and return. No submission or run is
    made; the dialogues stored so far stay readable. False when it had already finished. The
    caller checks that USER may (evaluation.access.get_simulation_for_user(write=True))."""
    who = f" by {user.get_username()}" if user is not None else ""
    return job_cancel(simulation.job_id, reason=f"Cancelled{who}.",
                      result=_failures(simulation))
