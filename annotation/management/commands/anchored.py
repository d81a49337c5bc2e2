"""python manage.py anchored --study STUDY --evaluator NAME --aspect ASPECT --level turn|dialogue
[--metric METRIC] [--labelled-fraction F --seed S] --json"""

from argparse import ArgumentTypeError

from django.core.management.base import BaseCommand, CommandError

from annotation.lib import exports
from annotation.report_selectors import anchored_choice, resolve_evaluator, study_anchored

from ._common import get_study, write_output


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value <= 1.0:
        raise ArgumentTypeError(f"a share in (0, 1] of the labelled units, not {text!r}")
    return value


class Command(BaseCommand):
    help = ("Human-anchored system scores (PPI++): per system the human-only mean on the "
            "labelled units, the evaluator-only mean on every unit it scored and the PPI++ "
            "estimate that combines them, each with its 95% CI (clustered by dialogue for "
            "turns), n_labelled and n_unlabelled, the effective number of labels, the ranking "
            "and pairwise differences, exactly as the study report shows them.")

    def add_arguments(self, parser):
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("--evaluator", required=True,
                            help="an evaluator with runs on the study's benchmark")
        parser.add_argument("--aspect", required=True, help="a numeric human field")
        parser.add_argument("--level", required=True, choices=("turn", "dialogue"),
                            help="the unit type of the aspect")
        parser.add_argument("--metric", default="",
                            help="the evaluator's metric (default: the one named like the "
                                 "aspect)")
        parser.add_argument("--labelled-fraction", type=_fraction, default=None,
                            help="keep this seeded random share (0 < F ≤ 1) of each system's "
                                 "labelled units as labelled, the rest as unlabelled")
        parser.add_argument("--seed", type=int, default=0,
                            help="the seed of --labelled-fraction's draw (default 0)")
        parser.add_argument("--json", action="store_true", help="print JSON (--format json)")
        parser.add_argument("--format", choices=exports.FORMATS, default="csv")
        parser.add_argument("--output", help="write to this file instead of stdout")

    def handle(self, study, evaluator, aspect, level, metric, labelled_fraction, seed,
               json, format, output=None, **options):
        study = get_study(study)
        try:
            evaluator = resolve_evaluator(benchmark=study.benchmark, name=evaluator)
            aspect, metric = anchored_choice(study=study, evaluator=evaluator, aspect=aspect,
                                             metric=metric, level=level)
            report = study_anchored(study=study, evaluator=evaluator, aspect=aspect,
                                    metric=metric, labelled_fraction=labelled_fraction,
                                    seed=seed)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        fmt = "json" if json else format
        write_output(self, exports.render(report, exports.anchored_tables(report), fmt), output)
