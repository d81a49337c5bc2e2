"""`manage.py arena_open BENCHMARK SYSTEM...`: open (or extend) the benchmark's arena.

SYSTEM is a live system's slug; `--baselines` adds Concord's seven in-process rankers (the two
LLM baselines need an LLM and are added by slug when one is configured).
"""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from evaluation.lib.live.inprocess import adapters
from evaluation.models import Benchmark, System
from evaluation.services.arena import arena_open
from evaluation.services.live import live_baselines_ensure


class Command(BaseCommand):
    help = "Open the benchmark's arena with these live systems (docs/arena.md)."

    def add_arguments(self, parser):
        parser.add_argument("benchmark")
        parser.add_argument("systems", nargs="*", help="live systems' slugs")
        parser.add_argument("--baselines", action="store_true",
                            help="add the seven in-process ranker baselines")
        parser.add_argument("--name", default="")

    def handle(self, *, benchmark, systems, baselines, name, **options):
        bench = Benchmark.objects.filter(slug=benchmark).first()
        if bench is None:
            raise CommandError(f"no benchmark {benchmark!r}")
        found = {s.slug: s for s in System.objects.filter(slug__in=systems)}
        missing = [slug for slug in systems if slug not in found]
        if missing:
            raise CommandError(f"no system {', '.join(map(repr, missing))}")
        chosen = [found[slug] for slug in systems]
        if baselines:
            needs_llm = {a.key for a in adapters() if a.needs_llm}
            chosen += [s for s in live_baselines_ensure() if s.live_adapter not in needs_llm]
        if not chosen:
            raise CommandError("name at least one live system (or --baselines)")
        try:
            arena = arena_open(benchmark=bench, systems=chosen, name=name)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from None
        live = arena.systems.exclude(live_kind="").count()
        self.stdout.write(f"arena {arena.slug}: {live} live systems; battles at "
                          f"/arena/{bench.slug}/")
