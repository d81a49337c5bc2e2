"""Time a benchmark's two downloads through the page's views (Django's test client): built in
the request, as before the stored files, then served from the stored files
(docs/performance.md, "Today's figures"). The stored files are rebuilt at the end, as they were."""

import time

from django.core.management.base import BaseCommand, CommandError
from django.test import Client
from django.urls import reverse

from evaluation.models import Benchmark
from evaluation.selectors.downloads import DOWNLOADS, downloads_folder
from evaluation.services.downloads import benchmark_downloads_build

URL_NAMES = {"public": "benchmark_public_download", "sample": "benchmark_sample_submission"}


class Command(BaseCommand):
    help = "Time a public benchmark's downloads, built in the request and served when stored."

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", default="demo-tourism")
        parser.add_argument("--repeat", type=int, default=5)

    def handle(self, benchmark, repeat, **options):
        found = Benchmark.objects.filter(slug=benchmark, is_public=True).first()
        if found is None:
            raise CommandError(f"no public benchmark {benchmark!r} (load_demo makes one)")
        folder, client = downloads_folder(found), Client()
        for name in DOWNLOADS.values():
            (folder / name).unlink(missing_ok=True)
        for kind, url_name in URL_NAMES.items():
            url = reverse(url_name, args=[found.slug])
            built = _times(client, url, 1)
            self.stdout.write(f"{kind}: built in the request {built[0]:.2f} s")
        started = time.perf_counter()
        benchmark_downloads_build(benchmark_id=found.pk)
        self.stdout.write(f"build of both (the worker task) {time.perf_counter() - started:.2f} s")
        for kind, url_name in URL_NAMES.items():
            times = _times(client, reverse(url_name, args=[found.slug]), repeat)
            self.stdout.write(f"{kind}: stored, median {1000 * times[len(times) // 2]:.1f} ms, "
                              f"max {1000 * times[-1]:.1f} ms over {repeat}")


def _times(client: Client, url: str, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise CommandError(f"{url} answered {response.status_code}")
    return sorted(times)
