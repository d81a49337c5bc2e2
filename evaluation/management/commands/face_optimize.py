"""`manage.py face_optimize`: optimize FACE's instructions for one aspect against a human study
(FACE §2.3, Algorithm 1), print each iteration's beam, tokens and cost, and the resulting
instruction version (`evaluate --evaluator face --instructions VERSION` uses it).

`--resume VERSION` continues an optimization whose job stopped (its worker died, or it was
interrupted) after its last finished iteration.
"""

import sys

from django.core.management.base import BaseCommand, CommandError

from evaluation.cli import (
    ProgressBars,
    add_budget_argument,
    add_llm_arguments,
    format_usage,
    llm_model_options,
    spending_choice,
)
from evaluation.models import Job


class Command(BaseCommand):
    help = ("Optimize FACE's instructions for one aspect against a study's human labels "
            "(textual gradients, UCB candidate selection, beam search).")

    def add_arguments(self, parser):
        parser.add_argument("--study", help="study slug (its labels of the aspect train FACE)")
        parser.add_argument("--aspect", help="relevance, interestingness, understanding, "
                            "task_completion, interest_arousal, efficiency or overall")
        parser.add_argument("--iterations", type=int, help="K (default 3)")
        parser.add_argument("--beam", type=int, help="beam width b (default 2)")
        parser.add_argument("--candidates", type=int, help="candidate size b' (default 4)")
        parser.add_argument("--gradients", type=int, help="α: gradients per instruction–score "
                            "pair (default 2)")
        parser.add_argument("--seed", type=int, help="seed of the train/dev split and the "
                            "samples (default 0)")
        parser.add_argument("--dev-share", type=float, help="share of dialogues held out for "
                            "the final selection (default 0.2)")
        parser.add_argument("--gradient-particles", type=int, help="training particles asked "
                            "for gradients per beam instruction (default 4; 0: all)")
        parser.add_argument("--ucb-sample", type=int, help="particles per UCB round (default 8)")
        parser.add_argument("--ucb-rounds", type=int, help="UCB rounds T (default 2.5 × the "
                            "rewrites, FACE Appendix C.1)")
        parser.add_argument("--final-size", type=int, help="instructions in the final set "
                            "(default b)")
        parser.add_argument("--resume", metavar="VERSION",
                            help="continue this optimization (e.g. relevance-v1)")
        parser.add_argument("--no-progress", action="store_true")
        add_llm_arguments(parser)
        add_budget_argument(parser)

    def handle(self, *args, **opts):
        from evaluation.services.face_optimization import (
            FaceOptimizationError,
            face_optimization_create,
            face_optimization_find,
            face_optimization_process,
            face_optimization_restart,
        )
        from evaluation.services.spending import BudgetExceeded

        try:
            if opts["resume"]:
                optimization = face_optimization_find(opts["resume"])
                face_optimization_restart(optimization=optimization, enqueue=False,
                                          spending=spending_choice(opts))
            else:
                if not opts["study"] or not opts["aspect"]:
                    raise CommandError("give --study and --aspect (or --resume VERSION)")
                optimization = face_optimization_create(
                    study=opts["study"], aspect=opts["aspect"], model=llm_model_options(opts),
                    enqueue=False, iterations=opts["iterations"], beam=opts["beam"],
                    candidates=opts["candidates"], gradients=opts["gradients"],
                    seed=opts["seed"], dev_share=opts["dev_share"],
                    gradient_particles=opts["gradient_particles"],
                    ucb_sample=opts["ucb_sample"], ucb_rounds=opts["ucb_rounds"],
                    final_size=opts["final_size"], spending=spending_choice(opts))
        except BudgetExceeded as exc:
            raise CommandError(f"{exc} (--no-budget starts it anyway)") from exc
        except FaceOptimizationError as exc:
            raise CommandError(str(exc)) from exc
        optimization.refresh_from_db()
        self.stderr.write(f"FACE {optimization.name}: {len(optimization.train_dialogues)} "
                          f"training and {len(optimization.dev_dialogues)} dev dialogues of "
                          f"study {optimization.study_slug} (field {optimization.label_field})")
        bars = ProgressBars(sys.stderr, enabled=not opts["no_progress"])
        try:
            face_optimization_process(job_id=optimization.job_id, progress=bars)
        finally:
            bars.close()
        optimization.refresh_from_db()
        job = optimization.job
        for report in optimization.usage:
            self.stdout.write(f"iteration {report['iteration']}: "
                              + ", ".join(f"{key} {report[key]}" for key in
                                          ("rewrites", "candidates") if key in report))
            self.stdout.write(format_usage(report))
        if job.status != Job.Status.SUCCEEDED:
            raise CommandError(f"FACE optimization {optimization.name} stopped: {job.error} "
                               f"(continue with --resume {optimization.name})")
        self.stdout.write(
            f"FACE instructions {optimization.name}: training correlation "
            f"{_number(optimization.train_correlation)}, dev correlation "
            f"{_number(optimization.dev_correlation)} (report the dev one)\n"
            f"Use: manage.py evaluate --evaluator face --instructions {optimization.name} …")


def _number(value) -> str:
    return "undefined" if value is None else f"{value:.3f}"
