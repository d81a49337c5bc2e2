"""Check a submission file before uploading it, with the upload's own validator.

A researcher without access to the server validates against the public bundle they downloaded
(`--bundle`): its hidden dialogues keep the turns and pools that decide what must be answered,
so the report is the same, line for line, as the one the upload would give. On a Concord that
has the benchmark, `--benchmark SLUG` checks against the stored benchmark instead.
"""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from evaluation.lib.formats.bundle import read_bundle
from evaluation.lib.formats.errors import FormatError
from evaluation.lib.formats.submission import LOG, TURN, SubmissionReference, validate_submission
from evaluation.lib.metrics.suite import CLOSED, OPEN
from evaluation.models import Benchmark
from evaluation.selectors.benchmarks import benchmark_submission_reference


class Command(BaseCommand):
    help = ("Validate a submission file against a benchmark and print the same line-numbered "
            "report as the upload (exit status 1 when the file has problems).")

    def add_arguments(self, parser):
        parser.add_argument("file", help="the submission (.jsonl)")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--bundle", help="a benchmark bundle: the public download (.zip) "
                                             "or a folder")
        source.add_argument("--benchmark", help="the slug of a benchmark stored here")
        parser.add_argument("--protocol", choices=[TURN, LOG], default=TURN)
        parser.add_argument("--split", action="append", dest="splits",
                            help="a split that must be answered in full (repeatable; default: "
                                 "the splits the file answers, as the upload does)")
        parser.add_argument("--pool-mode", choices=[CLOSED, OPEN], default=CLOSED)

    def handle(self, file, bundle, benchmark, protocol, splits, pool_mode, **options):
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            reference = self._reference(bundle, benchmark, pool_mode)
        except FormatError as exc:
            raise CommandError(f"the bundle is not valid:\n{exc}") from exc
        try:
            summary = validate_submission(path, protocol=protocol, reference=reference,
                                          splits=splits, max_bytes=settings.MAX_UPLOAD_BYTES)
        except FormatError as exc:
            count = len(exc.issues)
            self.stdout.write(f"{path.name}: {count} problem{'s' if count != 1 else ''}; "
                              "the upload would be refused:")
            for issue in exc.issues:
                self.stdout.write(str(issue))
            raise SystemExit(1) from exc
        splits_text = ", ".join(summary.splits) if summary.splits else "—"
        self.stdout.write(self.style.SUCCESS(
            f"{path.name}: valid {summary.protocol} submission, {summary.line_count} lines"
            + (f", {summary.dialogue_count} dialogues of {splits_text} answered in full"
               if protocol == TURN else "")))

    def _reference(self, bundle, slug, pool_mode) -> SubmissionReference:
        if bundle:
            if not Path(bundle).exists():
                raise CommandError(f"{bundle}: no such file or folder")
            data = read_bundle(Path(bundle), max_bytes=settings.MAX_UPLOAD_BYTES)
            return SubmissionReference.from_records(items=data.items, reviews=data.reviews,
                                                    dialogues=data.dialogues,
                                                    pool_mode=pool_mode)
        stored = Benchmark.objects.filter(slug=slug).first()
        if stored is None:
            raise CommandError(f"no benchmark with slug {slug!r} here (use --bundle with the "
                               "public download)")
        return benchmark_submission_reference(benchmark=stored, pool_mode=pool_mode)
