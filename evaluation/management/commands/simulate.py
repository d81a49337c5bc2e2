"""`manage.py simulate`: a user simulator talks to a live system; prints preference coverage.

    python manage.py simulate --benchmark demo-tourism --system baseline-tfidf \
        --simulator template --users 20 --turns 10 --json

Without `--worker` the batches run in this process (a progress bar per user); with it they are
queued for Celery workers and the command prints the job's id and returns. `--endpoint URL`
registers (or changes) the system's live endpoint first, with `--credential NAME` (one of the
operator's CONCORD_CREDENTIALS, offered to the system's owner) as its key, as the API does.
"""

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from evaluation.cli import (
    ProgressBars,
    add_budget_argument,
    add_llm_arguments,
    llm_model_options,
    spending_choice,
)
from evaluation.lib.metrics.ievalm import ACCEPT_AT
from evaluation.lib.metrics.preference import KS, PCIR_EQ3, PCIR_VARIANTS
from evaluation.lib.simulators.simulators import DEFAULT_SHOWN_K, SIMULATORS
from evaluation.models import Benchmark, Job, System
from evaluation.services.live import live_baselines_ensure, system_set_live
from evaluation.services.simulations import (
    POOLS,
    simulation_create,
    simulation_run_here,
)
from evaluation.services.spending import BudgetExceeded


class Command(BaseCommand):
    help = "Simulate users talking to a live system and measure preference coverage (PEPPER)."

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", required=True, help="benchmark slug")
        parser.add_argument("--system", required=True,
                            help="a live system's slug or name (baselines: baseline-tfidf, …)")
        parser.add_argument("--simulator", required=True, choices=sorted(SIMULATORS))
        parser.add_argument("--users", type=int, required=True)
        parser.add_argument("--turns", type=int, required=True)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--pool", choices=POOLS, default="catalogue",
                            help="what systems rank: the whole catalogue (default) or the "
                                 "user's dialogue candidates")
        parser.add_argument("--shown-k", type=int, default=DEFAULT_SHOWN_K,
                            help="items the simulated user is shown per turn (PEPPER's item "
                                 f"interface: {DEFAULT_SHOWN_K}); part of the design")
        parser.add_argument("--accept-at", type=int, default=ACCEPT_AT,
                            help="ievalm: the user accepts a target in the system's top N "
                                 f"(iEvaLM: {ACCEPT_AT})")
        parser.add_argument("--pcir", choices=sorted(PCIR_VARIANTS), default=PCIR_EQ3,
                            help="PCIR_avg: eq3 = PC_T / T, the paper's Eq. 3 (default); "
                                 "tables = (PC_T - PC_1) / (T - 1), which fits its Tables 3 "
                                 "and 5 (docs/simulation.md)")
        parser.add_argument("--batch-size", type=int, default=10)
        parser.add_argument("--failure-threshold", type=float, default=0.5)
        parser.add_argument("--endpoint", default="",
                            help="register (or change) the system's concord-live/1 endpoint "
                                 "first (docs/formats.md §4)")
        parser.add_argument("--credential", default="",
                            help="with --endpoint: the name of a key the operator offers "
                                 "(CONCORD_CREDENTIALS), sent as a Bearer token; default: none")
        parser.add_argument("--worker", action="store_true",
                            help="queue the batches for Celery workers and return")
        parser.add_argument("--json", action="store_true", dest="as_json")
        parser.add_argument("--no-progress", action="store_true")
        add_llm_arguments(parser)
        add_budget_argument(parser)

    def handle(self, *, benchmark, system, simulator, users, turns, seed, pool, batch_size,
               failure_threshold, worker, as_json, no_progress, endpoint="", credential="",
               shown_k=DEFAULT_SHOWN_K, accept_at=ACCEPT_AT, pcir=PCIR_EQ3, **options):
        bench = Benchmark.objects.filter(slug=benchmark).first()
        if bench is None:
            raise CommandError(f"no benchmark {benchmark!r}")
        if system.startswith("baseline-"):
            live_baselines_ensure()
        found = (System.objects.filter(slug=system).first()
                 or System.objects.filter(name=system).first())
        if found is None:
            raise CommandError(f"no system {system!r}")
        model = llm_model_options(options) if SIMULATORS[simulator].needs_llm or (
            found.live_adapter in ("llm_zero_shot", "rag_citation")) else None
        if credential and not endpoint:
            raise CommandError("--credential is registered with the endpoint: give --endpoint "
                               "too")
        try:
            with transaction.atomic():
                if endpoint:
                    system_set_live(system=found, endpoint=endpoint, credential=credential,
                                    timeout_seconds=found.live_timeout_seconds)
                simulation = simulation_create(
                    benchmark=bench, system=found, simulator=simulator, users=users,
                    turns=turns, seed=seed, model=model, batch_size=batch_size, pool=pool,
                    shown_k=shown_k, accept_at=accept_at, pcir=pcir,
                    failure_threshold=failure_threshold, enqueue=worker,
                    spending=spending_choice(options))
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from error
        except BudgetExceeded as error:
            raise CommandError(f"{error} (--no-budget starts it anyway)") from error
        if worker:
            self.stdout.write(json.dumps({"job_id": simulation.job_id,
                                          "simulation_id": simulation.pk}) if as_json else
                              f"queued simulation {simulation.pk} (job {simulation.job_id})")
            return
        bars = ProgressBars(self.stderr, enabled=not no_progress and not as_json)
        simulation_run_here(simulation=simulation,
                            progress=lambda done, total: bars("users", done, total))
        bars.close()
        job = Job.objects.get(pk=simulation.job_id)
        if job.status == Job.Status.FAILED:
            raise CommandError(f"simulation {simulation.pk} failed: {job.error}")
        report = simulation.report
        if as_json:
            metrics = {f"{name}@{k}": report[f"{name}@{k}"] for name in ("pc", "pcir", "recall")
                       for k in KS}
            self.stdout.write(json.dumps({
                "run_id": simulation.run_id, "simulation_id": simulation.pk,
                "submission_id": simulation.submission_id, "simulator": simulation.config,
                "users": report["users"], "failed": report["failed"],
                "pcir_variant": report.get("pcir_variant"),
                "pcir_label": report.get("pcir_label"),
                "failures_by_kind": report["failures_by_kind"], "metrics": metrics,
                "summaries": report["summaries"],
                "overhead_ms_per_turn": report["overhead_ms_per_turn"]}))
            return
        self.stdout.write(f"run {simulation.run_id}: {simulation.simulator} × {found.name}, "
                          f"{report['users']} users, {turns} turns, {report['failed']} failed")
        if report.get("pcir_label"):
            self.stdout.write(f"  {report['pcir_label']}")
        for name, estimate in report["summaries"].items():
            low, high = estimate["ci_low"], estimate["ci_high"]
            ci = f" [{low:.3f}, {high:.3f}]" if low is not None else ""
            value = estimate["value"]
            self.stdout.write(f"  {name:<14} {value:.3f}{ci}" if value is not None
                              else f"  {name:<14} undefined")
