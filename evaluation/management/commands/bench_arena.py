"""`manage.py bench_arena [--votes N] [--systems S] [--resamples B] [--method elo bt] [--json]`

Times the arena ratings (`evaluation.lib.stats.arena.arena_table`: the point ratings, B bootstrap
replicates, CIs and rank intervals) on simulated votes. Target (docs/performance.md): 1,000
rounds over 100,000 votes among 50 systems in under 2 s. Prints the machine's load average,
because the figures are only comparable under the same load.
"""

import json
import os

from django.core.management.base import BaseCommand, CommandError

from evaluation.lib.stats.arena import METHODS, time_arena


class Command(BaseCommand):
    help = "Time arena ratings (Elo, Bradley–Terry) with bootstrap CIs on simulated votes."

    def add_arguments(self, parser):
        parser.add_argument("--votes", type=int, default=100_000)
        parser.add_argument("--systems", type=int, default=50)
        parser.add_argument("--resamples", type=int, default=1000)
        parser.add_argument("--method", nargs="+", choices=METHODS, default=list(METHODS))
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, votes, systems, resamples, method, seed, as_json, **options):
        if votes < 1 or systems < 2 or resamples < 1:
            raise CommandError("need --votes ≥ 1, --systems ≥ 2 and --resamples ≥ 1")
        load = os.getloadavg()
        reports = time_arena(votes, systems, resamples, methods=method, seed=seed)
        if as_json:
            self.stdout.write(json.dumps({"load_average": load, "cpus": os.cpu_count(),
                                          "reports": reports}, indent=2))
            return
        self.stdout.write(f"load average {load[0]:.1f} on {os.cpu_count()} CPUs")
        for r in reports:
            self.stdout.write(
                f"{r['method']:>4}: {r['votes']} votes, {r['systems']} systems, "
                f"{r['resamples']} resamples ({r['valid_resamples']} usable): "
                f"{r['wall_seconds']:.2f} s wall, {r['cpu_seconds']:.2f} s CPU")
