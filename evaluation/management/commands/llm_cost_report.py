"""`manage.py llm_cost_report`: CoRE's tokens per log (twelve factors, the debate), measured on
the demo benchmark's reference conversations with real prompts and scripted answers of the
CoRE paper's average lengths (evaluation.lib.llm.cost_report), beside the paper's ≈ 21k + ≈ 51k
tokens.

No model and no API key are needed: a local dry-run server answers. `--benchmark` measures a
stored benchmark instead of the generated demo.
"""

import json

from django.core.management.base import BaseCommand, CommandError

from evaluation.lib.demo import generate_demo_bundle
from evaluation.models import Benchmark
from evaluation.selectors.benchmarks import benchmark_bundle


class Command(BaseCommand):
    help = ("Measure CoRE's tokens per log (12 factors and the 4-round debate) on the demo "
            "benchmark against a local dry-run server: real prompts, scripted answers.")

    def add_arguments(self, parser):
        parser.add_argument("--benchmark", help="a stored benchmark's slug (default: the "
                                                "generated demo, seed --seed)")
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--logs", type=int, default=40, help="how many conversations "
                                                                  "(in id order)")
        parser.add_argument("--split", help="only this split")
        parser.add_argument("--max-rounds", type=int, default=4)
        parser.add_argument("--json", action="store_true", dest="as_json")

    def handle(self, benchmark, seed, logs, split, max_rounds, as_json, **options):
        from evaluation.lib.llm.adapters import reference_log
        from evaluation.lib.llm.cost_report import measure_core_cost

        if benchmark:
            found = Benchmark.objects.filter(slug=benchmark).first()
            if found is None:
                raise CommandError(f"no benchmark {benchmark!r}")
            bundle = benchmark_bundle(benchmark=found)
            items, dialogues, domain = bundle.items, bundle.dialogues, found.domain
        else:
            demo = generate_demo_bundle(seed)
            items, dialogues = demo["items"], demo["dialogues"]
            domain = demo["benchmark"]["domain"]
        chosen = sorted((d for d in dialogues if not split or d["split"] == split),
                        key=lambda d: d["id"])[:logs]
        if not chosen:
            raise CommandError("no dialogue to measure")
        report = measure_core_cost([reference_log(d) for d in chosen],
                                   item_names={i["id"]: i["name"] for i in items},
                                   domain=domain, max_rounds=max_rounds)
        summary = report.summary()
        if as_json:
            self.stdout.write(json.dumps(summary, indent=2))
        else:
            self.stdout.write(format_cost_summary(summary))


def format_cost_summary(summary: dict) -> str:
    seed = summary["seed"]
    per_log = summary["per_log"]
    lines = [
        f"CoRE tokens per log on {summary['logs']} conversations "
        f"({summary['mean_turns']:.1f} turns on average), cl100k_base tokens; answers scripted "
        f"at {summary['answer_tokens']['factor']} tokens per factor and "
        f"{summary['answer_tokens']['statement']} per debate statement.",
        f"{'part':<22} {'input':>9} {'output':>9} {'total':>9} {'seed total':>11}",
    ]
    for part, seed_total in (("factors", seed["factors"]["total"]),
                             ("debate", seed["debate"]["total"]), ("persuasiveness", None)):
        row = per_log[part]
        seed_text = f"{seed_total:>11,.0f}" if seed_total else f"{'—':>11}"
        lines.append(f"{part:<22} {row['input']:>9,.0f} {row['output']:>9,.0f} "
                     f"{row['total']:>9,.0f} {seed_text}")
    lines.append(f"debate rounds per log: {summary['rounds']:.1f}")
    lines.append("debate prompt tokens per role and round (mean):")
    for role, rounds in summary["per_round_input"].items():
        lines.append(f"  {role:<14} " + "  ".join(f"r{n}: {v:,.0f}" for n, v in rounds.items()))
    growth = summary["growth"]
    for role, steps in growth["mean_increments"].items():
        lines.append(f"  {role:<14} increment per round: "
                     + ", ".join(f"{step:,.0f}" for step in steps))
    lines.append(f"largest change between consecutive increments (0 = exactly linear): "
                 f"{growth['max_increment_change']} tokens")
    return "\n".join(lines)
