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

Privacy (issue 28, docs/simulation.md "Privacy of simulated users"): users come from hidden-split
dialogues only once the benchmark released its hidden gold (fixed when the simulation is
created: `config["hidden_users"]`), and everything that leaves the server names a user by its
opaque id (`opaque_user_id`), never by the benchmark dialogue it simulates.

Allowance (issue 34): a simulation started by an account counts against that account's daily
allowance (`CONCORD_DAILY_SIMULATION_QUOTA`), counted under a lock on the account's row as
uploads are (`services/submissions.py`), and its log submission never counts as an upload.
"""

import json
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from evaluation.lib.columns import evaluator_specs
from evaluation.lib.formats.submission import item_infos, review_infos
from evaluation.lib.llm.estimate import RunEstimate, estimate_simulation
from evaluation.lib.llm.gateway import token_cost
from evaluation.lib.metrics import ievalm as ievalm_metric
from evaluation.lib.metrics.preference import (
    KS,
    PCIR_EQ3,
    PCIR_VARIANTS,
    SimulatedUser,
    preference_report,
    preference_specs,
)
from evaluation.lib.metrics.suite import SUITE_NAME, SUITE_VERSION, evaluate_submission
from evaluation.lib.rankers import Catalogue
from evaluation.lib.runconfig import config_hash, run_config, suite_config_from_options
from evaluation.lib.simulators.driver import (
    CANCELLED,
    DialogueOutcome,
    simulate_dialogue,
    system_rankings,
)
from evaluation.lib.simulators.leakage import (
    SANITISED,
    Target,
    audit_dialogue,
    audit_summary,
    behaviour_summary,
)
from evaluation.lib.simulators.simulators import (
    CONTEXT,
    DEFAULT_SHOWN_K,
    MAX_SHOWN_K,
    SIMULATORS,
    SimulatorError,
    simulated_protocol,
    simulator_config_hash,
)
from evaluation.lib.simulators.trace import (
    SIMULATED_SPLIT,
    SIMULATED_SUITE_OPTIONS,
    simulated_trace_inputs,
)
from evaluation.lib.simulators.users import (
    ItemCard,
    NoSimulatedUsers,
    opaque_user_id,
    paired_user_id,
    pick_users,
    simulated_users,
)
from evaluation.lib.stats.methods import interval_version
from evaluation.models import (
    Benchmark,
    Job,
    LLMSpend,
    MetricSummary,
    Run,
    SimulatedDialogue,
    SimulatedUserProfile,
    Simulation,
    UnitScore,
)
from evaluation.response_cache import connection_kept
from evaluation.selectors.benchmarks import benchmark_bundle
from evaluation.selectors.run_chunks import item_records, review_records
from evaluation.services import spending as spending_rules
from evaluation.services.credentials import credential_problem
from evaluation.services.jobs import (
    job_cancel,
    job_finish,
    job_heartbeat,
    job_stopped,
    queue_check,
    task_enqueue,
)
from evaluation.services.live import live_client
from evaluation.services.llm_models import (
    RunUsage,
    llm_gateway,
    model_config,
    model_options,
    run_evaluation_grade,
)
from evaluation.services.results import summaries_upsert, unit_scores_upsert
from evaluation.services.submissions import submission_create, today_bounds
from evaluation.signals import results_changed_notify

POOLS = ("catalogue", "dialogue")
MAX_USERS, MAX_TURNS = 5000, 50
BATCH_TASK = "evaluation.tasks.simulate_batch_job"
STOP_POLL_SECONDS = 0.5  # how often a running batch looks whether its job was cancelled


def _simulator(name: str, *, seed: int, shown_k: int, model: dict | None, meter=None,
               accept_at: int = ievalm_metric.ACCEPT_AT):
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
                      shown_k: int = DEFAULT_SHOWN_K, accept_at: int = ievalm_metric.ACCEPT_AT,
                      pcir: str = PCIR_EQ3, enqueue: bool = True,
                      spending: str = spending_rules.CHECK) -> Simulation:
    """A queued simulation; with ENQUEUE its batches go to Celery on commit, without the caller
    runs them with `simulation_batch_process` (the command line's default).

    Everything that would make it fail for every user is refused here, before anything is
    stored: an unknown simulator, a system that is not live, a benchmark without simulated users
    (PEPPER needs the seen/target split), too few users, an LLM simulator without a model. An
    LLM simulator's estimate (`simulation_estimate`) is reserved on USER's LLM budget in the
    transaction that creates it (SPENDING as for `llm_run_create`): BudgetExceeded stores
    nothing.
    """
    if simulator not in SIMULATORS:
        raise ValidationError(f"unknown simulator {simulator!r} (choose from "
                              f"{', '.join(SIMULATORS)})")
    if not system.is_live:
        raise ValidationError(f"system {system.slug!r} is not a live system: register its "
                              "endpoint first (docs/formats.md §4)")
    problem = credential_problem(system.live_credential, owner=system.owner) \
        if system.live_credential else ""
    if problem:
        raise ValidationError(f"system {system.slug!r}: {problem}")
    if not 1 <= turns <= MAX_TURNS or not 1 <= users <= MAX_USERS:
        raise ValidationError(f"users must be 1–{MAX_USERS} and turns 1–{MAX_TURNS}")
    if pool not in POOLS:
        raise ValidationError(f"pool must be one of {', '.join(POOLS)}")
    _options_check(shown_k=shown_k, accept_at=accept_at, pcir=pcir)
    hidden_users = benchmark.hidden_released_at is not None
    try:
        _batch_inputs(benchmark.pk, benchmark.created_at, users, seed, hidden_users)
    except (NoSimulatedUsers, ValueError) as error:
        raise ValidationError(f"{benchmark.slug}: {error}") from None
    if user is not None:
        simulation_quota_check(user)  # fail fast; counted again under the lock below
    cls = SIMULATORS[simulator]
    estimate = None
    if cls.needs_llm:
        model = model or model_options()  # LLMConfigurationError when no model is set
        model_config(model).resolved_api_key()  # a missing key fails here, before any call
        estimate = simulation_estimate(benchmark=benchmark, simulator=simulator, users=users,
                                       turns=turns, seed=seed, shown_k=shown_k, model=model)
    config = {**_simulator(simulator, seed=seed, shown_k=shown_k, model=model,
                           accept_at=accept_at).config(),
              "users": users, "turns": turns, "pool": pool, "ks": list(KS), "pcir": pcir,
              "hidden_users": hidden_users, "system": system.slug, "benchmark": benchmark.slug}
    with transaction.atomic():
        if user is not None:
            _simulation_quota_reserve(user)
        job = Job.objects.create(kind=Job.Kind.SIMULATION, created_by=user, total=users,
                                 params={"system": system.slug, "benchmark": benchmark.slug,
                                         "simulator": simulator, "model": model})
        simulation = Simulation.objects.create(
            job=job, benchmark=benchmark, system=system, simulator=simulator,
            simulator_version=cls.version, config=config, config_hash=simulator_config_hash(
                config), users=users, turns=turns, seed=seed, batch_size=batch_size,
            failure_threshold=failure_threshold, created_by=user)
        if estimate is not None and spending != spending_rules.EXEMPT:
            spending_rules.spending_reserve(
                user=user, kind=LLMSpend.Kind.SIMULATION, estimate=estimate,
                model=model["model"], job=job, enforce=spending == spending_rules.CHECK,
                description=f"{simulator} simulation of {system.slug}: {users} users × "
                            f"{turns} turns")
        if enqueue:
            queue_check()  # a broker that is down stores nothing (QueueUnavailable: 503)
            for batch in range(simulation.batches):
                task_enqueue(BATCH_TASK, simulation.pk, batch)
    return simulation


def _options_check(*, shown_k: int, accept_at: int, pcir: str) -> None:
    """The simulator's options, refused with a message naming the allowed values."""
    if not 1 <= shown_k <= MAX_SHOWN_K:
        raise ValidationError(f"the item interface shows 1–{MAX_SHOWN_K} items "
                              f"(shown_k {shown_k}); PEPPER shows {DEFAULT_SHOWN_K}")
    if not 1 <= accept_at <= MAX_SHOWN_K:
        raise ValidationError(f"accept_at must be 1–{MAX_SHOWN_K}, not {accept_at}; iEvaLM "
                              f"accepts a target anywhere in the top {ievalm_metric.ACCEPT_AT}")
    if pcir not in PCIR_VARIANTS:
        raise ValidationError(f"unknown PCIR_avg variant {pcir!r}: choose "
                              + " or ".join(f"{k} ({v})" for k, v in PCIR_VARIANTS.items()))


# --- the daily allowance ----------------------------------------------------------------------


class SimulationQuotaExceeded(Exception):
    """The account has started its allowance of simulations today (UTC)."""

    def __init__(self, *, quota: int, resets_at: datetime):
        self.quota, self.resets_at = quota, resets_at
        super().__init__(
            f"Your account has started its {quota} simulation{'s' if quota != 1 else ''} for "
            f"today (cancelled and failed ones count too; uploads have a quota of their own). "
            f"The allowance resets at {resets_at:%Y-%m-%d %H:%M} UTC.")


def simulation_allowance(user) -> tuple[int, int]:
    """(allowance, simulations USER started today, UTC)."""
    start, _ = today_bounds()
    used = Simulation.objects.filter(created_by=user, created_at__gte=start).count()
    return settings.DAILY_SIMULATION_QUOTA, used


def simulation_quota_check(user) -> None:
    """Raise SimulationQuotaExceeded when USER has no simulation left today."""
    quota, used = simulation_allowance(user)
    if used >= quota:
        raise SimulationQuotaExceeded(quota=quota, resets_at=today_bounds()[1])


def _simulation_quota_reserve(user) -> None:
    """Lock the account's row for the rest of the transaction, then count (never the other way
    round): concurrent starts of one account queue here and no more than the allowance get in.
    On SQLite the lock is a no-op, but its write transactions are serialised anyway."""
    get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk").get()
    simulation_quota_check(user)


def simulation_estimate(*, benchmark, simulator: str, users: int, turns: int, seed: int = 0,
                        shown_k: int = DEFAULT_SHOWN_K,
                        model: dict | None = None) -> RunEstimate | None:
    """Tokens and cost of an LLM simulator's users (None for a simulator without an LLM),
    estimated from the real histories of the users it would simulate (`estimate_simulation`).
    Reads only; bad sizes raise ValidationError like `simulation_create`."""
    if simulator not in SIMULATORS or not SIMULATORS[simulator].needs_llm:
        return None
    if not 1 <= turns <= MAX_TURNS or not 1 <= users <= MAX_USERS:
        raise ValidationError(f"users must be 1–{MAX_USERS} and turns 1–{MAX_TURNS}")
    try:
        picked = _batch_inputs(benchmark.pk, benchmark.created_at, users, seed,
                               benchmark.hidden_released_at is not None).users
    except (NoSimulatedUsers, ValueError) as error:
        raise ValidationError(f"{benchmark.slug}: {error}") from None
    name = (model or model_options())["model"]
    return estimate_simulation(simulator, picked, total_users=users, turns=turns,
                               shown_k=shown_k, price=lambda p, a: token_cost(name, p, a))


def _fail_reason(simulation: Simulation) -> str | None:
    failed = list(simulation.dialogues.filter(status=SimulatedDialogue.Status.FAILED)
                  .values_list("error_kind", "error"))
    if len(failed) <= simulation.failure_threshold * simulation.users:
        return None
    kind, count = Counter(k for k, _ in failed).most_common(1)[0]
    example = next(e for k, e in failed if k == kind)
    who = "the user simulator" if kind == "simulator" else "the live system"
    return (f"Stopped: {len(failed)} of {simulation.users} dialogues failed, over the "
            f"threshold of {simulation.failure_threshold:.0%}: {who} failed a turn in "
            f"{count} of them with {kind}, e.g. {example}")


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
                               simulation.users, simulation.seed,
                               bool(simulation.config.get("hidden_users")))
        start = batch * simulation.batch_size
        stored = set(simulation.dialogues.values_list("position", flat=True))
        todo = [(start + i, u) for i, u in
                enumerate(inputs.users[start:start + simulation.batch_size])
                if start + i not in stored]
        if todo:
            usage = RunUsage()
            try:
                _simulate(simulation, inputs, todo, usage)
            finally:  # what this batch spent counts on the simulation's LLM reservation
                spending_rules.spending_add(job_id=job.pk, usage=usage.total.summary())
        simulation_finish_if_done(simulation_id=simulation.pk)


@dataclass(frozen=True)
class _BatchInputs:
    users: list  # the simulation's users, in its order
    catalogue: Catalogue
    cards: dict


@lru_cache(maxsize=4)
def _batch_inputs(benchmark_id: int, created_at, users: int, seed: int,
                  hidden_users: bool) -> _BatchInputs:
    """What every batch of a simulation needs from its benchmark, read once per process: a
    worker that runs several batches of one simulation (or several simulations of one
    benchmark) reads the bundle once (≈ 2 s for the demo's 4,701 reviews on a loaded machine)
    instead of once per batch. A benchmark's rows never change after its import; CREATED_AT
    keys a benchmark imported again under the same id. HIDDEN_USERS: whether users may come
    from the hidden split (its gold released when the simulation was created)."""
    bundle = benchmark_bundle(benchmark=Benchmark.objects.get(pk=benchmark_id))
    everyone = pick_users(simulated_users(items=bundle.items, reviews=bundle.reviews,
                                          dialogues=bundle.dialogues,
                                          include_hidden=hidden_users), users, seed)
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


def _simulate(simulation: Simulation, inputs: _BatchInputs, todo, usage: RunUsage) -> None:
    catalogue, cards = inputs.catalogue, inputs.cards
    config, model = simulation.config, simulation.job.params.get("model")
    try:
        system = live_client(system=simulation.system, benchmark=simulation.benchmark,
                             model=model, catalogue=catalogue, meter=usage.stage("system"))
    except ValidationError as error:  # not live any more, or its credential is refused here
        job_finish(simulation.job_id, error="; ".join(error.messages))
        return
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
    profiles, failed = (_prepare(simulation, simulator, todo, width, stopped)
                        if simulator.prepares else ({}, {}))
    if stopped():
        return
    for position, user in todo:
        if position in failed:  # no preferences: the user cannot talk (nothing partial kept)
            _store(simulation, position, _unprepared(simulation, position, user,
                                                     failed[position]))
    todo = [(position, user) for position, user in todo if position not in failed]

    def one(entry):
        position, user = entry
        pool = user.candidate_item_ids if config["pool"] == "dialogue" else ()
        with connection_kept():  # the LLM cache's connection, kept for the whole dialogue
            return position, simulate_dialogue(
                user, simulator, system, benchmark=simulation.benchmark.slug,
                opaque_id=opaque_user_id(simulation.secret, position), turns=simulation.turns,
                cards=cards, pool=pool, stop=stopped, prepared=profiles.get(user.user_id))

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


def _preparation_key(simulator) -> tuple[dict, str]:
    preparation = simulator.preparation_config()
    return preparation, simulator_config_hash(preparation)


def _prepare(simulation: Simulation, simulator, todo, width: int, stopped
             ) -> tuple[dict[str, dict], dict[int, str]]:
    """The preparation step (PEPPER §3.2.1, before any dialogue): every user of TODO gets its
    general preferences, read from `SimulatedUserProfile` when a simulation with the same
    preparation derived them already, else derived now (WIDTH at a time) and stored. Returns
    ({source dialogue id: profile}, {position: why it failed})."""
    preparation, key = _preparation_key(simulator)
    sources = [user.user_id for _, user in todo]
    profiles = dict(SimulatedUserProfile.objects.filter(
        benchmark_id=simulation.benchmark_id, key=key, source_dialogue_id__in=sources)
        .values_list("source_dialogue_id", "profile"))
    missing = [(position, user) for position, user in todo if user.user_id not in profiles]
    failed: dict[int, str] = {}
    if not missing:
        return profiles, failed

    def stage(done: int) -> None:
        Job.objects.filter(pk=simulation.job_id).update(
            heartbeat_at=timezone.now(),
            stage=f"preparing general preferences: {done} of {len(missing)} users")

    def one(entry):
        position, user = entry
        with connection_kept():
            try:
                return position, user, simulator.prepare(user.history), ""
            except SimulatorError as error:
                return position, user, None, str(error)
            except Exception as error:  # noqa: BLE001 - one user's crash never ends the batch
                return position, user, None, f"{type(error).__name__}: {error}"

    stage(0)
    with ThreadPoolExecutor(max_workers=max(1, min(width, len(missing)))) as pool:
        futures = [pool.submit(one, entry) for entry in missing]
        for done, future in enumerate(as_completed(futures), 1):
            position, user, profile, error = future.result()
            if profile is None:
                failed[position] = f"preparing the user's general preferences: {error}"
            else:
                stored, _ = SimulatedUserProfile.objects.get_or_create(
                    benchmark_id=simulation.benchmark_id, source_dialogue_id=user.user_id,
                    key=key, defaults={"preparation": preparation, "profile": profile})
                profiles[user.user_id] = stored.profile  # a concurrent batch's, if first
            stage(done)
            if stopped():
                break
    return profiles, failed


def _unprepared(simulation: Simulation, position: int, user, error: str) -> DialogueOutcome:
    outcome = DialogueOutcome(opaque_user_id(simulation.secret, position), user.user_id,
                              user.target_item_ids)
    outcome.error_kind, outcome.error = "simulator", error
    return outcome


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
        defaults={"position": position, "source_dialogue_id": outcome.source_dialogue_id,
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
        submission = _log_submission(simulation, ok)
        run, report, ievalm = _preference_run(simulation, submission, ok, simulation.config)
        timing = [(d.total_seconds, d.system_seconds, d.llm_seconds,
                   len(system_rankings(d.turns))) for d in ok]
        trace = _trace_run(simulation, ok, submission)
        report_json = report.as_json()
        if ievalm:  # iEvaLM's own numbers first; the coverage curves are the extra
            report_json["summaries"] = {**ievalm_metric.summaries_json(ievalm),
                                        **report_json["summaries"]}
            report_json["ievalm"] = {"ks": list(ievalm_metric.IEVALM_KS),
                                     "accept_at": simulation.config.get("accept_at"),
                                     "labels": ievalm_metric.LABELS}
        simulation.report = {**report_json, **_failures(simulation),
                             "overhead_ms_per_turn": _overhead_ms(timing),
                             "trace_run": trace.pk}
        simulation.submission, simulation.run = submission, run
        simulation.save(update_fields=["report", "submission", "run"])
        simulation_audit_store(simulation=simulation, dialogues=ok)
        job_finish(simulation.job_id, result={"run": run.pk, "submission": submission.pk,
                                              **_failures(simulation)})
        # the simulator's leaderboard (`simulated-<simulator>`) refreshes its ranks
        results_changed_notify(benchmark_id=simulation.benchmark_id,
                               protocol=simulated_protocol(simulation.simulator))
    return run


def _preference_run(simulation: Simulation, submission, dialogues, config: dict,
                    job: Job | None = None):
    """(the Run of DIALOGUES' metrics under CONFIG, its PreferenceReport, iEvaLM's own
    summaries): preference coverage (PEPPER §3.3.1) in CONFIG's PCIR_avg variant and, for an
    iEvaLM simulation, iEvaLM's final-list recall and persuasiveness ({} otherwise); unit scores
    per user and summaries with user-clustered CIs, stored under the axes and directions of the
    run's metric specs. With no dialogue (every one removed as leaked) the summaries are
    undefined, with the reason, and the report is None."""
    pcir = config.get("pcir", PCIR_EQ3)
    is_ievalm = simulation.simulator == ievalm_metric.SIMULATOR
    report, estimates, ievalm = None, {}, {}
    if dialogues:
        report = preference_report(
            [SimulatedUser(d.user_id, tuple(d.target_item_ids), system_rankings(d.turns))
             for d in dialogues], turns=simulation.turns, pcir=pcir)
        if is_ievalm:
            ievalm = ievalm_metric.ievalm_summaries([_ievalm_dialogue(d) for d in dialogues])
        estimates = {**report.summaries, **ievalm}
    run = Run.objects.create(
        submission=submission, evaluator=f"simulation.{simulation.simulator}",
        evaluator_version=simulation.simulator_version, config=config,
        config_hash=simulator_config_hash(config), job_id=job.pk if job else simulation.job_id,
        **run_evaluation_grade([simulation.job.params.get("model")]))
    _store_scores(run, dialogues, simulation.turns, pcir=pcir, ievalm=is_ievalm)
    for spec in evaluator_specs(run.evaluator):  # axis and direction from the specs
        estimate = estimates.get(spec.name)
        if estimate is None:
            MetricSummary.objects.create(
                run=run, metric=spec.name, axis=spec.axis, direction=spec.direction,
                value=None, n=0, undefined_reason="no dialogue left: every one was removed "
                                                  "as leaked")
            continue
        MetricSummary.objects.create(
            run=run, metric=spec.name, axis=spec.axis, direction=spec.direction,
            value=estimate.value, ci_low=estimate.ci_low, ci_high=estimate.ci_high,
            n=estimate.n.get("clusters", 0), undefined_reason=estimate.undefined_reason or "",
            ci_method=estimate.method, ci_version=interval_version(estimate.method))
    return run, report, ievalm


def simulation_audit_store(*, simulation: Simulation, dialogues=None) -> Run | None:
    """Audit every successful dialogue of a finished SIMULATION for leakage
    (lib/simulators/leakage.py), store each one's flags and the simulation's summary
    (`report["leakage"]`), and score the leak-free dialogues again as its `sanitised_run`
    (Zhu et al.'s "-Both" setting), replacing an older one. Called when a simulation
    finishes, and by `manage.py audit_simulations` for the ones that finished before the audit
    existed; with them the users' behaviour (`report["behaviour"]`: user-turn length, turns).
    Returns the sanitised run (None when the simulation has no run)."""
    if simulation.run_id is None:
        return None
    dialogues = dialogues if dialogues is not None else list(
        simulation.dialogues.filter(status=SimulatedDialogue.Status.OK))
    inputs = _batch_inputs(simulation.benchmark_id, simulation.benchmark.created_at,
                           simulation.users, simulation.seed,
                           bool(simulation.config.get("hidden_users")))
    config = simulation.config
    shown_k = config.get("shown_k", DEFAULT_SHOWN_K)
    success_k = config.get("accept_at") if config.get("target_based") else shown_k
    audits = []
    for d in dialogues:
        user = inputs.users[d.position] if d.position < len(inputs.users) else None
        seen = [(s.card.id, [text for text, _ in s.reviews]) for s in user.history.seen] \
            if user is not None else []
        targets = [Target(i, inputs.cards[i].name if i in inputs.cards else "")
                   for i in d.target_item_ids]
        audit = audit_dialogue(turns=d.turns, targets=targets, seen=seen, shown_k=shown_k,
                               success_k=success_k).as_json()
        d.leakage = audit
        audits.append(audit)
    SimulatedDialogue.objects.bulk_update(dialogues, ["leakage"])
    kept = [d for d in dialogues if not d.leakage["leaked"]]
    old = simulation.sanitised_run
    sanitised, _, _ = _preference_run(simulation, simulation.submission, kept,
                                   {**config, "dialogues": SANITISED},
                                   _scored_job(simulation, simulation.submission, len(kept)))
    report = dict(simulation.report or {})
    report["leakage"] = {**audit_summary(audits), "sanitised_run": sanitised.pk,
                         "success_k": success_k, "shown_k": shown_k}
    report["behaviour"] = behaviour_summary(d.turns for d in dialogues)
    simulation.report, simulation.sanitised_run = report, sanitised
    simulation.save(update_fields=["report", "sanitised_run"])
    if old is not None:
        old_job = old.job_id
        old.delete()
        Job.objects.filter(pk=old_job).delete()
    return sanitised


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
    job = _scored_job(simulation, submission, len(dialogues))
    run = Run.objects.create(submission=submission, evaluator=SUITE_NAME,
                             evaluator_version=SUITE_VERSION, config=config,
                             config_hash=config_hash(config), job=job,
                             unavailable=dict(result.unavailable),
                             **run_evaluation_grade([simulation.job.params.get("model")]))
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


def _scored_job(simulation: Simulation, submission, dialogues: int) -> Job:
    """The finished job of a run scored in the same step as the simulation's (a run has a job
    of its own): its Trace run, its sanitised run."""
    now = timezone.now()
    return Job.objects.create(kind=Job.Kind.EVALUATION, status=Job.Status.SUCCEEDED,
                              created_by=simulation.created_by, total=dialogues,
                              done=dialogues, stage="scored when the simulation finished",
                              params={"submission": submission.pk, "simulation": simulation.pk},
                              started_at=now, finished_at=now)


def _overhead_ms(timing) -> float | None:
    turns = sum(t for *_, t in timing)
    if not turns:
        return None
    return 1000 * sum(total - system - llm for total, system, llm, _ in timing) / turns


def _log_submission(simulation: Simulation, dialogues):
    lines = []
    for d in dialogues:
        lines.append({
            # no `dialogue_id`: a simulated user's is its opaque id, no benchmark dialogue
            "log_id": f"sim{simulation.pk}-{d.user_id}",
            "turns": [{"role": t["role"], "text": t["text"],
                       **({"recommended_item_ids": t["ranked_item_ids"][:simulation.config[
                           "shown_k"]]} if t["role"] == "system" and t.get("action") != CONTEXT
                          else {})} for t in d.turns],
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


def _ievalm_dialogue(d) -> ievalm_metric.IEvaLMDialogue:
    return ievalm_metric.IEvaLMDialogue(d.user_id, tuple(d.target_item_ids),
                                        system_rankings(d.turns),
                                        (d.hidden or {}).get("persuasiveness"))


def _store_scores(run: Run, dialogues, turns: int, *, pcir: str = PCIR_EQ3,
                  ievalm: bool = False) -> None:
    """Per-user unit scores (the board's paired tests); iEvaLM's recall one unit per (user,
    gold item) pair, so that the board's per-user sums give its pair-weighted mean."""
    rows = []
    for d in dialogues:
        paired = paired_user_id(d.position)  # the board pairs runs of one design by it
        report = preference_report(
            [SimulatedUser(d.user_id, tuple(d.target_item_ids), system_rankings(d.turns))],
            turns=turns, n_resamples=1, pcir=pcir)
        for spec in preference_specs():
            rows.append(UnitScore(run=run, metric=spec.name, unit_type="dialogue",
                                  unit_id=paired, dialogue_id=paired,
                                  value=report.summaries[spec.name].value))
        if ievalm:
            for name, suffix, value in ievalm_metric.ievalm_unit_values(_ievalm_dialogue(d)):
                rows.append(UnitScore(run=run, metric=name, unit_type="dialogue",
                                      unit_id=f"{paired}/{suffix}" if suffix else paired,
                                      dialogue_id=paired, value=value))
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
