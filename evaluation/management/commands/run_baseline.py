"""`manage.py run_baseline NAME --benchmark SLUG`: run a Trace reference baseline (or `all`),
store its submission under the baseline's system and evaluate it in this process.

The LLM baselines `llm_zero_shot` and `rag_citation` (docs/llm.md) call the model given by
--profile (the operator's model profiles; default: the CONCORD_LLM_* settings) and --model;
`all` never includes them."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from evaluation.cli import (
    ProgressBars,
    add_llm_arguments,
    format_errors_as_command_error,
    format_usage,
    llm_model_options,
)
from evaluation.lib.rankers import BASELINES, EmbeddingsUnavailable, baseline_class
from evaluation.management.commands.evaluate import format_results
from evaluation.models import Benchmark, Job
from evaluation.selectors.benchmarks import run_results
from evaluation.services.reference_rankers import baseline_submission_create
from evaluation.services.runs import run_create, run_process

LLM_BASELINE_NAMES = ("llm_zero_shot", "rag_citation")


class Command(BaseCommand):
    help = ("Run a reference baseline (" + ", ".join(BASELINES) + ", or all; or an LLM "
            "baseline: " + ", ".join(LLM_BASELINE_NAMES) + ") on a benchmark: write its "
            "submission and evaluate it.")

    def add_arguments(self, parser):
        parser.add_argument("name", help="baseline name, or 'all'")
        parser.add_argument("--benchmark", required=True, help="benchmark slug")
        parser.add_argument("--split", action="append", dest="splits",
                            help="answer and evaluate only this split (repeatable)")
        parser.add_argument("--no-text", action="store_true", help="skip BLEU-4 and ROUGE-L")
        parser.add_argument("--no-nli", action="store_true", help="skip entailment grounding")
        parser.add_argument("--json", action="store_true", dest="as_json")
        parser.add_argument("--no-progress", action="store_true")
        add_llm_arguments(parser)
        parser.add_argument("--max-retries", type=int, default=2,
                            help="LLM baselines: re-asks after an unusable answer or a failed "
                                 "quote check")
        parser.add_argument("--limit", type=int, metavar="N",
                            help="LLM baselines: a cheap trial that answers only the first N "
                                 "turns and prints them with the usage; nothing is stored or "
                                 "evaluated")
        parser.add_argument("--dialogues", action="append", default=[], metavar="ID",
                            help="LLM baselines: a cheap trial that answers only the turns of "
                                 "these dialogues (repeatable, or comma-separated); nothing is "
                                 "stored or evaluated")

    def handle(self, name, benchmark, splits, no_text, no_nli, as_json, no_progress, **options):
        found = Benchmark.objects.filter(slug=benchmark).first()
        if found is None:
            raise CommandError(f"no benchmark {benchmark!r}")
        suite = {"text_metrics": False} if no_text else {}
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be at least 1")
        options["dialogues"] = [d for value in options["dialogues"]
                                for d in value.split(",") if d.strip()]
        if ((options["limit"] is not None or options["dialogues"])
                and name.lower().replace("-", "_") not in LLM_BASELINE_NAMES):
            raise CommandError("--limit and --dialogues are for LLM baselines ("
                               + ", ".join(LLM_BASELINE_NAMES)
                               + "): the reference rankers cost nothing to run in full")
        if name.lower().replace("-", "_") in LLM_BASELINE_NAMES:
            self._llm_baseline(found, name.lower().replace("-", "_"), splits, suite, no_nli,
                               as_json, no_progress, options)
            return
        try:
            names = list(BASELINES) if name.lower() == "all" else [baseline_class(name).key]
        except KeyError as exc:
            raise CommandError(exc.args[0]) from exc
        outputs = []
        for key in names:
            bars = ProgressBars(sys.stderr, enabled=not no_progress)
            try:
                with format_errors_as_command_error():
                    submission = baseline_submission_create(benchmark=found, name=key,
                                                            splits=splits, progress=bars)
                run = run_create(submission=submission, splits=splits, suite_options=suite,
                                 use_nli=not no_nli, enqueue=False)
                run_process(job_id=run.job_id, progress=bars)
            except EmbeddingsUnavailable as exc:
                raise CommandError(f"{key}: no sentence-embedding model: {exc}") from exc
            finally:
                bars.close()
            run.job.refresh_from_db()
            if run.job.status != Job.Status.SUCCEEDED:
                raise CommandError(f"{key}: evaluation run {run.pk} failed: {run.job.error}")
            outputs.append(run_results(run=run))
            if not as_json:
                self.stdout.write(format_results(outputs[-1]) + "\n")
        if as_json:
            self.stdout.write(json.dumps(outputs, indent=2))

    def _trial(self, report, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps({"answers": report.lines, "usage": report.usage,
                                          "unanswered_turns": report.failures}, indent=2))
            return
        for line in report.lines:
            key = f"{line['dialogue_id']}#{line['turn_index']}"
            answer = report.failures.get(key) or line["response"]
            self.stdout.write(f"{key}: {answer} (ranked: "
                              f"{', '.join(line['ranked_item_ids']) or 'none'})")
        self.stdout.write(f"A trial of {report.turns} turns: nothing stored or evaluated.")
        self.stdout.write(format_usage(report.usage) + "\n")

    def _llm_baseline(self, benchmark, name, splits, suite, no_nli, as_json, no_progress,
                      options):
        from evaluation.services.llm_responders import llm_baseline_submission_create

        model = llm_model_options(options)
        bars = ProgressBars(sys.stderr, enabled=not no_progress)
        try:
            with format_errors_as_command_error():
                try:
                    report = llm_baseline_submission_create(
                        benchmark=benchmark, name=name, model=model, splits=splits,
                        max_retries=options["max_retries"], limit=options["limit"],
                        dialogues=[d.strip() for d in options["dialogues"]], progress=bars)
                except ValueError as exc:  # a choice the benchmark cannot meet
                    raise CommandError(str(exc)) from exc
            if report.submission is None:
                self._trial(report, as_json)
                return
            run = run_create(submission=report.submission, splits=splits, suite_options=suite,
                             use_nli=not no_nli, enqueue=False)
            run_process(job_id=run.job_id, progress=bars)
        finally:
            bars.close()
        run.job.refresh_from_db()
        if run.job.status != Job.Status.SUCCEEDED:
            raise CommandError(f"{name}: evaluation run {run.pk} failed: {run.job.error}")
        results = run_results(run=run)
        if as_json:
            self.stdout.write(json.dumps({**results, "baseline_usage": report.usage,
                                          "unanswered_turns": report.failures}, indent=2))
            return
        self.stdout.write(format_results(results) + "\n")
        self.stdout.write(format_usage(report.usage) + "\n")
        if report.failures:
            self.stderr.write(f"{len(report.failures)} of {report.turns} turns have no answer "
                              "(stored as explicit non-answers, scored as misses):")
            for unit, reason in list(report.failures.items())[:20]:
                self.stderr.write(f"  {unit}: {reason}")
