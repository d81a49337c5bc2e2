"""Simulate small studies and measure whether Concord's intervals and tests keep their promises.

Runs leaderboard.lib.calibration (the same functions the pages call) and prints coverage, test
size and family-wise error at 10, 30 and 100 dialogues. Touches no database. See
docs/statistics.md ("Calibration").
"""

import json
import time

from django.core.management.base import BaseCommand, CommandError

from leaderboard.lib.calibration import CHECK_KEYS, DIALOGUE_COUNTS, report_text, run_checks


class Command(BaseCommand):
    help = "Coverage of 95% intervals, test size and family-wise error by simulation."

    def add_arguments(self, parser):
        parser.add_argument("--reps", type=int, default=1000,
                            help="simulated studies per check and dialogue count (default 1000)")
        parser.add_argument("--dialogues", type=int, nargs="+", default=list(DIALOGUE_COUNTS),
                            help="dialogue counts to simulate (default 10 30 100)")
        parser.add_argument("--seed", type=int, default=2026)
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
        parser.add_argument("--only", nargs="+", metavar="CHECK",
                            help="run only these checks (keys as in --json, e.g. alpha_nominal); "
                                 "each gives the figures of the full run")

    def handle(self, *args, **options):
        reps = options["reps"]
        if reps < 1:
            raise CommandError("--reps must be at least 1")
        if any(count < 3 for count in options["dialogues"]):
            raise CommandError("--dialogues: every count must be at least 3")
        started = time.perf_counter()
        only = options.get("only")
        known = set(CHECK_KEYS)
        if only and set(only) - known:
            raise CommandError(f"--only: unknown check(s) {', '.join(sorted(set(only) - known))}"
                               f" (known: {', '.join(sorted(known))})")
        checks = run_checks(reps, dialogue_counts=options["dialogues"], seed=options["seed"],
                            only=only)
        seconds = time.perf_counter() - started
        if options["json"]:
            self.stdout.write(json.dumps({
                "reps": reps, "seed": options["seed"], "seconds": round(seconds, 1),
                "checks": [check.to_dict(reps) for check in checks],
            }, indent=2))
        else:
            self.stdout.write(report_text(checks, reps))
            self.stdout.write(f"{seconds:.1f} s")
