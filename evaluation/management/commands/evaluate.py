"""`manage.py evaluate`: validate a submission, store it, run an evaluator, report.

`--evaluator trace` (the default) runs the Trace metric suite on a `turn` submission; the other
choices are the registered LLM evaluators (`evaluation.lib.llm.registry`; docs/llm.md): built
in, `core` (CoRE: twelve factors and a debate, `log` submissions), `trace_judge` (Trace LLM
judge, `turn`), `pepper_judge` (PEPPER judge, `log`) and `face` (FACE: particles scored from
score distributions, `log`; `--instructions relevance-v1` uses an optimized instruction set from
`face_optimize`), each with
the operator's model profile given by --profile (default: `default`, the CONCORD_LLM_* settings),
its model replaced by --model if given.
`--submission-id` re-evaluates a stored submission (with the LLM cache, at no cost).

By default the run executes in this process (the same `run_process` a worker runs, recording
the Run's job progress in the database, so `/jobs/<id>/` shows it too); `--worker` enqueues it
for a Celery worker instead and follows its progress from the database.
"""

import json
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from evaluation.cli import (
    ProgressBars,
    add_budget_argument,
    add_llm_arguments,
    format_errors_as_command_error,
    format_usage,
    llm_model_options,
    spending_choice,
)
from evaluation.lib.formats.submission import TURN
from evaluation.lib.llm import registry
from evaluation.models import Benchmark, Job, Submission, System
from evaluation.selectors.benchmarks import run_results, run_unit_rows
from evaluation.services.jobs import jobs_fail_stale
from evaluation.services.runs import run_create, run_process
from evaluation.services.submissions import submission_create, system_create

WORKER_TIMEOUT_SECONDS = 6 * 3600
TRACE = "trace"


class Command(BaseCommand):
    help = ("Validate a submission for a benchmark, store it and evaluate it: every automated "
            "Trace metric (default), or a registered LLM evaluator (core, trace_judge, "
            "pepper_judge, face, …); 95% studentized cluster CIs.")

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", required=True, help="benchmark slug")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--submission", help="submission .jsonl file")
        source.add_argument("--submission-id", type=int,
                            help="evaluate a stored submission of the benchmark again")
        evaluators = registry.registered()
        parser.add_argument("--evaluator", default=TRACE,
                            choices=[TRACE, *(spec.name for spec in evaluators)],
                            help="trace (metrics, turn protocol), " + ", ".join(
                                f"{spec.name} ({spec.protocol})" for spec in evaluators))
        parser.add_argument("--system", help="system name (default: the file's name)")
        parser.add_argument("--split", action="append", dest="splits",
                            help="evaluate this split (repeatable; default: every split the "
                                 "file answers, each answered in full)")
        parser.add_argument("--json", action="store_true", help="print the results as JSON")
        parser.add_argument("--per-unit", metavar="FILE",
                            help="write unit-level values as JSON Lines (formats.md §3)")
        parser.add_argument("--include-hidden", action="store_true",
                            help="include hidden-split dialogues in --per-unit (reveals gold)")
        parser.add_argument("--pool", choices=["closed", "open"], default="closed")
        parser.add_argument("--no-text", action="store_true", help="skip BLEU-4 and ROUGE-L")
        parser.add_argument("--no-nli", action="store_true",
                            help="skip entailment grounding even when NLI_MODEL_PATH is set")
        parser.add_argument("--worker", action="store_true",
                            help="let a Celery worker run the evaluation and follow its progress")
        parser.add_argument("--no-progress", action="store_true")
        add_llm_arguments(parser)
        add_budget_argument(parser)
        core = parser.add_argument_group("CoRE")
        core.add_argument("--debate-model", help="the debate's model (default: --model)")
        core.add_argument("--judge", action="append", dest="judges", default=[],
                          metavar="MODEL", help="another candidate judge model (repeatable): "
                          "each factor goes to the judge with the highest QWK against the "
                          "human CoRE ratings of --human-study")
        core.add_argument("--human-study", help="study slug (default: the newest study on the "
                          "benchmark with the CoRE form)")
        core.add_argument("--no-debate", action="store_true", help="score the factors only")
        core.add_argument("--max-rounds", type=int, default=4, help="debate rounds at most")
        core.add_argument("--debate-buffer", choices=["all_rounds", "latest_round"],
                          default="all_rounds", help="what later rounds see: every earlier "
                          "round (CoRE; the prompt grows linearly) or the latest one only")
        core.add_argument("--debate-factors", choices=["own_factors", "all_scores"],
                          default="own_factors", help="what each role sees of the factor "
                          "results: its own three factors' scores and reasons (CoRE §4.2) or "
                          "all twelve scores with its own reasons (variant)")
        face = parser.add_argument_group("FACE")
        face.add_argument("--instructions", action="append", default=[], metavar="VERSION",
                          help="an optimized instruction set, e.g. relevance-v1 (repeatable, "
                               "one per aspect; other aspects use the initial instruction)")
        face.add_argument("--aspect", action="append", dest="aspects", default=[],
                          help="score only these FACE aspects (repeatable; default: all seven)")
        trial = parser.add_argument_group("a cheap trial (LLM evaluators)")
        trial.add_argument("--limit", type=int, help="score only the first N units")
        trial.add_argument("--dialogues", action="append", default=[], metavar="ID",
                           help="score only the units of these dialogues (repeatable, or "
                                "comma-separated)")
        trial.add_argument("--stop-after", type=int, metavar="N",
                           help="stop when the first N units all fail (default: "
                                "CONCORD_LLM_STOP_AFTER_FAILED_UNITS, 3; 0: never)")
        parser.add_argument("--max-reasks", type=int, default=2,
                            help="re-asks after an unusable LLM answer before it is recorded "
                                 "as a failure")

    def handle(self, *args, **opts):
        benchmark = Benchmark.objects.filter(slug=opts["benchmark"]).first()
        if benchmark is None:
            raise CommandError(f"no benchmark {opts['benchmark']!r}")
        evaluator = opts["evaluator"]
        if evaluator == TRACE and (opts["limit"] or opts["dialogues"] or
                                   opts["stop_after"] is not None):
            raise CommandError("--limit, --dialogues and --stop-after are for LLM evaluators")
        # An LLM evaluator without a model is refused before anything is stored.
        model = llm_model_options(opts) if evaluator != TRACE else None
        protocol = TURN if evaluator == TRACE else registry.get(evaluator).protocol
        submission = self._submission(benchmark, opts, protocol)
        if evaluator == TRACE:
            suite = {"pool_mode": opts["pool"]}
            if opts["no_text"]:
                suite["text_metrics"] = False
            run = run_create(submission=submission, splits=opts["splits"], suite_options=suite,
                             use_nli=not opts["no_nli"], enqueue=opts["worker"])
        else:
            run = self._llm_run(submission, evaluator, model, opts)
        bars = ProgressBars(sys.stderr, enabled=not opts["no_progress"])
        try:
            if opts["worker"]:
                self.stderr.write(f"Queued as job {run.job_id} (/jobs/{run.job_id}/); waiting for "
                                  "a worker (`celery -A config worker`).")
                self._follow(run.job_id, bars)
            else:
                run_process(job_id=run.job_id, progress=bars)
        finally:
            bars.close()
        run.refresh_from_db()
        if run.job.status != Job.Status.SUCCEEDED:
            # An expected failure (unreachable server, nothing parsed): its reason and what it
            # cost, without a traceback.
            usage = format_usage(run.usage) if evaluator != TRACE else ""
            raise CommandError(f"evaluation run {run.pk} failed: {run.job.error}"
                               + (f"\n{usage}" if usage else ""))
        results = run_results(run=run)
        if opts["per_unit"]:
            self._write_units(run, Path(opts["per_unit"]), opts["include_hidden"])
        if evaluator != TRACE:
            results["usage"] = run.usage
            results["job_result"] = run.job.result
        if opts["json"]:
            self.stdout.write(json.dumps(results, indent=2))
        else:
            self.stdout.write(format_results(results))
            if evaluator != TRACE:
                self.stdout.write(format_usage(run.usage))
                failed = run.job.result.get("failed_units", 0)
                if failed:
                    self.stdout.write(f"{failed} units have a recorded LLM failure; see "
                                      f"/runs/{run.pk}/")

    def _submission(self, benchmark, opts, protocol: str) -> Submission:
        if opts["submission_id"]:
            submission = Submission.objects.filter(pk=opts["submission_id"],
                                                   benchmark=benchmark).first()
            if submission is None:
                raise CommandError(f"no submission {opts['submission_id']} on "
                                   f"{benchmark.slug!r}")
            return submission
        path = Path(opts["submission"])
        with format_errors_as_command_error(), transaction.atomic():
            # The system is created only together with a valid submission.
            return submission_create(
                system=self._system(opts["system"] or path.stem), benchmark=benchmark,
                path_or_file=path, user=None, splits=opts["splits"], pool_mode=opts["pool"],
                protocol=protocol)

    def _llm_run(self, submission, evaluator: str, model: dict, opts):
        from evaluation.services.face_optimization import face_instructions_resolve
        from evaluation.services.llm_runs import LLMRunFailed, llm_run_create
        from evaluation.services.spending import BudgetExceeded

        try:
            face = None
            if "face" in registry.get(evaluator).options:
                instructions = face_instructions_resolve(opts["instructions"])
                face = {"aspects": opts["aspects"] or None, "instructions": instructions}
            elif opts["instructions"] or opts["aspects"]:
                raise CommandError("--instructions and --aspect are FACE options")
            return llm_run_create(
                submission=submission, evaluator=evaluator, model=model,
                debate_model=(llm_model_options(opts, opts["debate_model"])
                              if opts["debate_model"] else None),
                judges=[llm_model_options(opts, judge) for judge in opts["judges"]],
                human_study=opts["human_study"], debate={"max_rounds": opts["max_rounds"],
                                                 "buffer": opts["debate_buffer"],
                                                 "factor_view": opts["debate_factors"]},
                use_debate=not opts["no_debate"], max_reasks=opts["max_reasks"],
                splits=opts["splits"], enqueue=opts["worker"], face=face,
                limit=opts["limit"], stop_after=opts["stop_after"],
                dialogues=[d.strip() for value in opts["dialogues"] for d in value.split(",")
                           if d.strip()], spending=spending_choice(opts))
        except BudgetExceeded as exc:
            raise CommandError(f"{exc} (--no-budget starts it anyway)") from exc
        except (ValueError, LLMRunFailed) as exc:
            raise CommandError(str(exc)) from exc

    def _system(self, name: str) -> System:
        return System.objects.filter(name=name).order_by("pk").first() or system_create(name=name)

    def _follow(self, job_id: int, bars: ProgressBars) -> None:
        deadline = time.monotonic() + WORKER_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            jobs_fail_stale()
            job = Job.objects.get(pk=job_id)
            if job.total:
                bars(job.stage, job.done, job.total)
            if job.is_finished:
                return
            time.sleep(0.5)
        raise CommandError(f"gave up waiting for job {job_id}; see /jobs/{job_id}/")

    def _write_units(self, run, path: Path, include_hidden: bool) -> None:
        with path.open("w", encoding="utf-8") as handle:
            for row in run_unit_rows(run=run, include_hidden=include_hidden):
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def _number(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def format_results(results: dict) -> str:
    """A plain-text table: metric, axis, value, 95% CI, n, which direction is better."""
    lines = [
        f"{results['system']} on {results['benchmark']} (splits: "
        f"{', '.join(results['splits'])}) — {results['evaluator']} "
        f"{results['evaluator_version']}, config {results['config_hash'][:12]}, run "
        f"{results['run']}",
        f"{'metric':<28} {'axis':<16} {'value':>7}  {'95% CI':<17} {'n':>6}  better",
    ]
    for name, row in results["metrics"].items():
        if row["value"] is None:
            lines.append(f"{name:<28} {row['axis']:<16} {'n/a':>7}  {row['undefined_reason']}")
            continue
        ci = f"[{_number(row['ci'][0])}, {_number(row['ci'][1])}]"
        lines.append(f"{name:<28} {row['axis']:<16} {_number(row['value']):>7}  {ci:<17} "
                     f"{row['n']:>6}  {row['direction']}")
    if results["missing_turns"]:
        lines.append(f"{results['missing_turns']} answered turns were missing (scored as empty).")
    return "\n".join(lines)
