"""python manage.py bench_anchored --study STUDY --evaluator NAME --aspect ASPECT --metric METRIC
[--fraction F ...] [--draws K] [--json]"""

import json

from django.core.management.base import BaseCommand, CommandError

from annotation import report_selectors
from annotation.lib import anchored

from ._common import get_study


class Command(BaseCommand):
    help = ("Coverage of the human-anchored (PPI++) intervals on real labels: keep a seeded "
            "share of each system's labelled units, treat the rest as unlabelled, and count how "
            "often the interval covers the human mean on all labels; with the width against the "
            "human-only interval on the same share (docs/statistics.md, 'Human-anchored system "
            "scores').")

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True)
        parser.add_argument("--evaluator", required=True)
        parser.add_argument("--aspect", required=True)
        parser.add_argument("--metric", default="")
        parser.add_argument("--fraction", type=float, nargs="+", default=[0.1, 0.25],
                            help="shares of the labels kept (default 0.1 0.25)")
        parser.add_argument("--draws", type=int, default=200,
                            help="seeded draws per share (default 200)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        study = get_study(options["study"])
        if options["draws"] < 1 or not all(0 < f <= 1 for f in options["fraction"]):
            raise CommandError("--draws must be at least 1 and every --fraction in (0, 1]")
        try:
            evaluator = report_selectors.resolve_evaluator(benchmark=study.benchmark,
                                                           name=options["evaluator"])
            aspect, metric = report_selectors.anchored_choice(
                study=study, evaluator=evaluator, aspect=options["aspect"],
                metric=options["metric"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        table = report_selectors.study_label_table(study=study)
        score = next(s for s in report_selectors.evaluator_score_sets(
            benchmark=study.benchmark, evaluators=[evaluator],
            unit_type=table.fields[aspect].unit_type)[evaluator] if s.metric == metric)
        results = [anchored.resampled_coverage(table, score, aspect, fraction=fraction,
                                               seeds=range(options["draws"]))
                   for fraction in options["fraction"]]
        if options["json"]:
            self.stdout.write(json.dumps(results, indent=2))
            return
        for result in results:
            overall = result["overall"]
            self.stdout.write(
                f"{evaluator} {metric} on {aspect}, {result['fraction']:.0%} of the labels, "
                f"{result['draws']} draws: coverage {overall['coverage']:.3f} (human only "
                f"{overall['human_only_coverage']:.3f}), width ratio "
                f"{overall['width_ratio']:.3f} (largest {overall['largest_width_ratio']:.3f})")
