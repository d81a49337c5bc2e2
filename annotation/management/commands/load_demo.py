"""Load the demo: the generated tourism benchmark, its reference baselines evaluated, one
account per role, the demo annotation study and, when the public data folder is there, a study
of real human labels (AB-ReDial, MIT licence) whose report shows real numbers (idempotent)."""

import sys
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from annotation.imports import public_dataset_import
from annotation.services.demo import (
    DEMO_BASELINES,
    demo_simulated_study_create,
    demo_study_create,
)
from core.roles import ANNOTATOR, RESEARCHER, STUDY_AUTHOR
from evaluation.cli import ProgressBars
from evaluation.lib.columns import shown_on
from evaluation.lib.live.inprocess import adapters
from evaluation.lib.metrics.types import SUMMARY
from evaluation.lib.rankers import BASELINES
from evaluation.models import Benchmark, Submission
from evaluation.services.arena import arena_open
from evaluation.services.jobs import QueueUnavailable
from evaluation.services.live import live_baselines_ensure
from evaluation.services.reference_rankers import (
    baselines_enqueue,
    baselines_ensure,
    demo_entrant_ensure,
    heavy_baselines,
)
from evaluation.services.simulations import demo_simulations_ensure

DEMO_SLUG = "demo-tourism"
DEMO_PASSWORD = "concord-demo"
STEPS = 6  # the "[load_demo k/6]" lines
PUBLIC_STUDY = "ab_redial"  # the public data set's importer name and folder
PUBLIC_BENCHMARK = "ab-redial"
# The baselines the template simulator talks to on first start (the cheap in-process rankers
# that read what the user says: on the generated demo, 8 users × 5 turns, PC@10 is 0.031 for
# popularity, 0.521 for tfidf and 0.594 for spatial; aspect ignores the template user's
# category words and ties with popularity at 0.031, so it is not one of them: issue 34.8,
# docs/simulation.md "The demo's simulated board").
DEMO_SIMULATED = ("popularity", "tfidf", "spatial")
DEMO_SIMULATED_USERS, DEMO_SIMULATED_TURNS = 8, 5
# Evaluated by load_demo itself (the demo study's and simulations' systems); the other four
# reference baselines go to the worker unless --inline.
INLINE_BASELINES = DEMO_SIMULATED
DEMO_ACCOUNTS = (
    # username, groups, is_staff
    ("staff", (), True),
    ("author", (STUDY_AUTHOR,), False),
    ("researcher", (RESEARCHER,), False),
    ("annotator", (ANNOTATOR,), False),
    ("annotator2", (ANNOTATOR,), False),
)


class Command(BaseCommand):
    help = "Load the demo: generated tourism benchmark and one account per role (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--inline", action="store_true",
                            help="evaluate the sentence-model baselines (Dense, Hybrid-RRF) here "
                                 "too, instead of leaving them to the worker")

    def handle(self, seed, inline=False, **options):
        if settings.PRODUCTION:
            raise CommandError("load_demo creates accounts with a known password; "
                               "it refuses to run when DJANGO_ENV=production")
        self._step(1, "the demo benchmark")
        if not Benchmark.objects.filter(slug=DEMO_SLUG).exists():
            bundle_dir = Path(settings.VAR_DIR) / "demo" / f"bundle-seed{seed}"
            call_command("make_demo_benchmark", str(bundle_dir), seed=seed, stdout=self.stdout)
            call_command("import_benchmark", str(bundle_dir), stdout=self.stdout)
        else:
            self.stdout.write(f"Benchmark {DEMO_SLUG} already loaded.")
        self._step(2, "accounts")
        accounts = self._accounts()
        self._baselines(inline=inline)
        self._step(5, "the demo studies")
        self._study()
        self._simulated_study()
        self._step(6, "the public study")
        self._public_study()
        # Last, so that `make run` leaves the logins on screen above the server's output.
        self.stdout.write(accounts)

    def _accounts(self) -> str:
        User = get_user_model()
        lines = []
        for username, groups, is_staff in DEMO_ACCOUNTS:
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_password(DEMO_PASSWORD)
            user.is_staff = user.is_superuser = is_staff
            user.save()
            user.groups.add(*[Group.objects.get_or_create(name=name)[0] for name in groups])
            role = "staff (admin)" if is_staff else ", ".join(groups)
            lines.append(f"  {username:<12} {DEMO_PASSWORD:<14} {role}")
        return "Demo accounts (username, password, role):\n" + "\n".join(lines)

    def _step(self, number: int, what: str) -> None:
        self.stdout.write(f"[load_demo {number}/{STEPS}] {what} …")
        self.stdout.flush()

    def _baselines(self, inline: bool = False):
        """Every reference baseline answers the demo and is evaluated by the non-LLM Trace suite:
        the three the demo study and simulations use here, one line each; the others (Dense and
        Hybrid-RRF run a sentence-embedding model) on the worker behind a progress bar on the
        leaderboard, so the site serves sooner; all here with INLINE (or without a queue)."""
        benchmark = Benchmark.objects.get(slug=DEMO_SLUG)
        names = [name for name in BASELINES if inline or name in INLINE_BASELINES]
        later = [name for name in BASELINES if name not in names]
        self._step(3, f"reference baselines: {len(names)} evaluated here")
        self.stdout.write("Reference baselines: answering the demo and evaluating each one "
                          "(a line per baseline) …")
        # tqdm bars on a terminal (it needs the raw stream), plain lines in a log
        bars = ProgressBars(sys.stdout if self.stdout.isatty() else self.stdout)
        if later:
            self._heavy_baselines(benchmark, later, bars)
        self._evaluate(benchmark, names, bars)
        self._entrant(benchmark, bars)
        self._step(4, "live systems, the arena and template simulations")
        self._live(benchmark)

    def _heavy_baselines(self, benchmark, later, bars):
        try:
            job = baselines_enqueue(benchmark=benchmark, names=later)
        except QueueUnavailable as exc:
            self.stdout.write(f"Baselines {', '.join(later)}: the task queue is unavailable "
                              f"({exc}); evaluating them here instead …")
            self._evaluate(benchmark, later, bars)
            return
        if job is None:
            self.stdout.write(f"Baselines {', '.join(later)}: already evaluated")
            return
        heavy = [name for name in later if name in heavy_baselines()]
        verb = "run" if len(heavy) > 1 else "runs"
        why = f"; {' and '.join(heavy)} {verb} a sentence-embedding model" if heavy else ""
        self.stdout.write(f"Baselines {', '.join(later)}: queued for the worker (job {job.pk}"
                          f"{why}); the site serves meanwhile, and the leaderboard "
                          f"/leaderboards/{benchmark.slug}/ shows their progress")

    def _evaluate(self, benchmark, names, bars):
        for name in names:  # one at a time: a line as each one is done
            self._evaluated(*baselines_ensure(benchmark=benchmark, names=[name],
                                              progress=bars)[0])

    def _evaluated(self, name, run, created):
        if run is None:
            self.stdout.write(f"Baseline {name}: skipped (no sentence-embedding model)")
            return
        metrics = shown_on(run.evaluator, SUMMARY)  # what a submission's page shows
        summary = {row.metric: row.value for row in run.summaries.filter(metric__in=metrics)}
        state = "evaluated" if created else "already evaluated"
        figures = ", ".join(f"{metric} {summary[metric]:.3f}" for metric in metrics
                            if summary.get(metric) is not None)
        self.stdout.write(f"Baseline {name}: {state} (run {run.pk}: {figures})")
        self.stdout.flush()

    def _live(self, benchmark):
        # The same nine baselines as in-process live systems: `simulate` works offline at once.
        live = live_baselines_ensure()
        self.stdout.write(f"Live systems for user simulation: {len(live)} in-process baselines "
                          "(e.g. manage.py simulate --benchmark demo-tourism --system "
                          "baseline-tfidf --simulator template --users 10 --turns 5)")
        self._arena(benchmark, live)
        # A few template-simulator runs, so the simulated-template leaderboard (and its PC_t
        # chart) is not empty on first start; few users, so load_demo stays quick.
        for system, simulation, created in demo_simulations_ensure(
                benchmark=benchmark, systems=[s for s in live if s.live_adapter in DEMO_SIMULATED],
                users=DEMO_SIMULATED_USERS, turns=DEMO_SIMULATED_TURNS):
            pc = simulation.report.get("summaries", {}).get("pc@10", {}).get("value")
            state = "simulated" if created else "already simulated"
            self.stdout.write(f"Template simulation of {system.slug}: {state} (run "
                              f"{simulation.run_id}: pc@10 {pc:.3f}, "
                              f"{DEMO_SIMULATED_USERS} users × {DEMO_SIMULATED_TURNS} turns)"
                              if pc is not None else
                              f"Template simulation of {system.slug}: failed "
                              f"({simulation.job.error})")

    def _entrant(self, benchmark, bars):
        """A demo entrant whose quotes are not always faithful: the grounding axis has
        something to tell apart (every baseline quotes verbatim: GS 1.000)."""
        run, counts = demo_entrant_ensure(benchmark=benchmark, progress=bars)
        self.entrant_submission = run.submission_id
        gs = run.summaries.filter(metric="gs").values_list("value", flat=True).first()
        state = (f"evaluated; quotes {counts['verbatim']} verbatim, {counts['reworded']} "
                 f"reworded, {counts['misattributed']} misattributed" if counts
                 else "already evaluated")
        self.stdout.write(f"{run.submission.system.name}: {state} (run {run.pk}: gs "
                          f"{gs:.3f})" if gs is not None else
                          f"{run.submission.system.name}: {state} (run {run.pk})")

    def _simulated_study(self):
        """The demo's labelled study: simulated annotators (not people) label the responses of
        three baselines, the entrant and the reference, so the leaderboard's trust row shows
        measured agreement on first start."""
        benchmark = Benchmark.objects.get(slug=DEMO_SLUG)
        newest = {}
        for pk, slug in (Submission.objects.filter(
                benchmark=benchmark, protocol=Submission.Protocol.TURN,
                system__slug__in=DEMO_BASELINES)
                .order_by("-created_at").values_list("pk", "system__slug")):
            newest.setdefault(slug, pk)
        newest["entrant"] = self.entrant_submission
        self.stdout.write("Simulated annotators: labelling the demo's labelled study …")
        study = demo_simulated_study_create(
            benchmark=benchmark, author=get_user_model().objects.get(username="author"),
            submission_ids=sorted(newest.values()),
            progress=lambda done, total: self.stdout.write(
                f"  simulated labels: {done}/{total}"))
        validated = study.metric_validations.count()
        self.stdout.write(f"Simulated-label study: /studies/{study.slug}/ ({study.items.count()} "
                          f"items, {validated} metric–label correlations stored for the "
                          "trust row)")

    def _arena(self, benchmark, live):
        """The demo's arena (idempotent): blind battles between the seven in-process rankers
        (the two LLM baselines need a model)."""
        needs_llm = {adapter.key for adapter in adapters() if adapter.needs_llm}
        arena = arena_open(benchmark=benchmark,
                           systems=[s for s in live if s.live_adapter not in needs_llm])
        self.stdout.write(f"Arena: /arena/{benchmark.slug}/ (blind battles between "
                          f"{arena.systems.count()} in-process baselines; ratings at "
                          f"/arenas/{arena.slug}/ratings/)")

    def _public_study(self):
        """AB-ReDial's human labels, read from the public data folder beside the clone (never
        shipped in the repository): the agreement report has real numbers from the start."""
        folder = Path(settings.PUBLIC_DATA_DIR) / PUBLIC_STUDY
        if Benchmark.objects.filter(slug=PUBLIC_BENCHMARK).exists():
            self.stdout.write(f"Public study {PUBLIC_STUDY}: already loaded.")
            return
        if not folder.is_dir():
            self.stdout.write(
                f"Public study {PUBLIC_STUDY}: skipped, no folder {folder} (set "
                "CONCORD_PUBLIC_DATA_DIR to the folder holding ab_redial/ to load real human "
                "labels; docs/operations.md)")
            return
        self.stdout.write(f"Public study {PUBLIC_STUDY}: importing real human labels from "
                          f"{folder} …")
        author = get_user_model().objects.get(username="author")
        _, study, summary = public_dataset_import(name=PUBLIC_STUDY, path=folder, author=author)
        self.stdout.write(f"Public study {PUBLIC_STUDY}: {summary['labels']} labels from "
                          f"{summary['annotators']} annotators; report at "
                          f"/studies/{study.slug}/report/")

    def _study(self):
        User = get_user_model()
        study = demo_study_create(
            benchmark=Benchmark.objects.get(slug=DEMO_SLUG),
            author=User.objects.get(username="author"),
            annotators=User.objects.filter(username__in=["annotator", "annotator2"]))
        self.stdout.write(f"Demo study: /studies/{study.slug}/ ({study.items.count()} items; "
                          "annotators: annotator, annotator2)")
