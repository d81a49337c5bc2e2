from django.core.management.base import BaseCommand, CommandError

from evaluation.models import Benchmark
from evaluation.services.benchmarks import benchmark_export


class Command(BaseCommand):
    help = "Write a stored benchmark back as a bundle folder (the import format, canonical form)."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("directory")

    def handle(self, slug, directory, **options):
        benchmark = Benchmark.objects.filter(slug=slug).first()
        if benchmark is None:
            raise CommandError(f"no benchmark with slug {slug!r}")
        benchmark_export(benchmark=benchmark, directory=directory)
        self.stdout.write(self.style.SUCCESS(f"Wrote {slug} to {directory}"))
