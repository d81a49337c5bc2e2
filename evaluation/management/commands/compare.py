"""`manage.py compare --benchmark SLUG --systems A B`: paired comparison of two systems' latest
Trace runs (statistics.md "Comparing systems"; Trace §7.1, appendix K.3 and L).

For every metric: mean(A) − mean(B) with its paired studentized cluster (jackknife-t) 95% CI
over the dialogues both runs scored (the compare page's; with 6–12 shared dialogues the exact
randomisation test over dialogues and its interval, method column "rand."), whether it is
significant, and the per-dialogue paired t-test.
"""

import json

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from evaluation.models import Benchmark, System
from evaluation.selectors.benchmarks import latest_run, runs_compare


class Command(BaseCommand):
    help = "Compare two systems on a benchmark: paired jackknife-t CI of the difference and t-test."

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", required=True, help="benchmark slug")
        parser.add_argument("--systems", nargs=2, required=True, metavar=("A", "B"),
                            help="system names or slugs")
        parser.add_argument("--metric", action="append", dest="metrics",
                            help="only this metric (repeatable)")
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, benchmark, systems, metrics, as_json, **options):
        found = Benchmark.objects.filter(slug=benchmark).first()
        if found is None:
            raise CommandError(f"no benchmark {benchmark!r}")
        runs = [self._run(found, name) for name in systems]
        rows = runs_compare(run_a=runs[0], run_b=runs[1], metrics=metrics)
        same_config = runs[0].config_hash == runs[1].config_hash
        if as_json:
            self.stdout.write(json.dumps({
                "benchmark": found.slug,
                "a": {"system": runs[0].submission.system.name, "run": runs[0].pk},
                "b": {"system": runs[1].submission.system.name, "run": runs[1].pk},
                "same_config": same_config, "metrics": rows,
            }, indent=2))
            return
        if not same_config:
            self.stderr.write("warning: the two runs used different configurations "
                              f"({runs[0].config_hash[:12]} vs {runs[1].config_hash[:12]})")
        self.stdout.write(format_comparison(runs, rows))

    def _run(self, benchmark, name):
        system = System.objects.filter(Q(slug=name) | Q(name=name)).order_by("pk").first()
        if system is None:
            raise CommandError(f"no system {name!r}")
        run = latest_run(benchmark=benchmark, system=system)
        if run is None:
            raise CommandError(f"system {name!r} has no finished evaluation on {benchmark.slug}")
        return run


METHOD_LABELS = {"cluster_t_difference": "jk-t", "cluster_randomisation_difference": "rand."}


def _n(value, digits=3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def format_comparison(runs, rows) -> str:
    a, b = (run.submission.system.name for run in runs)
    lines = [f"A = {a} (run {runs[0].pk}), B = {b} (run {runs[1].pk}); difference = A − B",
             f"{'metric':<28} {'A':>7} {'B':>7} {'A − B':>7}  {'95% CI':<19} {'sig':<4} "
             f"{'better':<6} {'t':>7} {'p':>8}  dialogues  method"]
    for row in rows:
        if row["difference"] is None:
            lines.append(f"{row['metric']:<28} {row['undefined_reason']}")
            continue
        ci = f"[{_n(row['ci'][0])}, {_n(row['ci'][1])}]"
        t = row["t_test"]
        better = {"A": a, "B": b}.get(row["better"], "—")[:6]
        lines.append(
            f"{row['metric']:<28} {_n(row['mean_a']):>7} {_n(row['mean_b']):>7} "
            f"{_n(row['difference']):>7}  {ci:<19} {'yes' if row['significant'] else 'no':<4} "
            f"{better:<6} {_n(t['t'], 2):>7} {_n(t['p_value'], 4):>8}  "
            f"{row['shared_dialogues']:>9}  {METHOD_LABELS.get(row.get('method'), '')}"
        )
    return "\n".join(lines)
