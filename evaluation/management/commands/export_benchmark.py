from django.core.management.base import BaseCommand, CommandError

from evaluation.lib.formats.bundle import write_bundle
from evaluation.models import Benchmark
from evaluation.selectors.benchmarks import benchmark_public_bundle
from evaluation.services.benchmarks import benchmark_export


class Command(BaseCommand):
    help = ("Write a stored benchmark back as a bundle folder (the import format, canonical "
            "form). With --public, only what the benchmark page lets anyone download: no "
            "hidden gold.")

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("directory")
        parser.add_argument("--public", action="store_true",
                            help="every split but hidden in full; hidden dialogues as the "
                                 "contexts a system answers, without gold (formats.md §1)")

    def handle(self, slug, directory, public=False, **options):
        benchmark = Benchmark.objects.filter(slug=slug).first()
        if benchmark is None:
            raise CommandError(f"no benchmark with slug {slug!r}")
        if public:
            write_bundle(benchmark_public_bundle(benchmark=benchmark), directory)
        else:
            benchmark_export(benchmark=benchmark, directory=directory)
        part = "the public part of " if public else ""
        self.stdout.write(self.style.SUCCESS(f"Wrote {part}{slug} to {directory}"))
