"""`manage.py bench_metrics --turns N [N …]`: time the non-LLM Trace suite on synthetic data.

Times `evaluate_submission` alone (accuracy, grounding without NLI, recovery, practical value,
and text metrics, then again without the text metrics) on `evaluation.lib.metrics.synthetic` inputs
of N system turns, and prints system turns per second per core (CPU time of this process) and
CPU microseconds per turn, which stays flat when the cost grows linearly with N.
"""

import json

from django.core.management.base import BaseCommand

from evaluation.lib.metrics.synthetic import time_suite


class Command(BaseCommand):
    help = "Time the non-LLM Trace metric suite on N synthetic system turns."

    def add_arguments(self, parser):
        parser.add_argument("--turns", type=int, nargs="+", default=[10_000],
                            help="one or more turn counts (e.g. 10000 100000)")
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--skip-no-text", action="store_true",
                            help="only time the full suite (with BLEU-4 and ROUGE-L)")
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, turns, seed, skip_no_text, as_json, **options):
        reports = []
        for n_turns in turns:
            for text_metrics in (True,) if skip_no_text else (True, False):
                report = time_suite(n_turns, text_metrics=text_metrics, seed=seed)
                reports.append(report)
                if not as_json:
                    self.stdout.write(format_report(report))
        if as_json:
            self.stdout.write(json.dumps(reports, indent=2))


def format_report(report: dict) -> str:
    text = "on " if report["text_metrics"] else "off"
    return (f"{report['turns']:>8} turns  text metrics {text}"
            f"  {report['cpu_seconds']:7.2f} s CPU  {report['wall_seconds']:7.2f} s wall"
            f"  {report['turns_per_second']:8.0f} turns/s/core"
            f"  {1e6 * report['cpu_seconds'] / report['turns']:6.0f} µs/turn")
