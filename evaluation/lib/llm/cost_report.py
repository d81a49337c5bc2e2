"""What CoRE costs in tokens per log, measured with real prompts and scripted answers.

CoRE, Appendix E, Tables 20 and 21 report ≈ 21.1k tokens per log for the twelve
factors (16.5k input, 4.6k output, i.e. ≈ 383 output tokens per factor) and ≈ 51.3k for a
four-round debate (49.0k input, ≈ 146 output tokens per statement). To measure Concord's own
figures without an API key, ``measure_core_cost`` runs the real CoRE code path (prompt
building, the gateway, litellm, HTTP) against ``DryRunServer``, a local OpenAI-compatible server
that answers every request with a well-formed answer of a fixed length in tokens:

- factor prompts: reasoning of ``factor_answer_tokens`` tokens, then ``<rating>3</rating>``;
- debate prompts: a JSON statement of ``statement_tokens`` tokens with per-role scores that never
  converge, so every debate runs all its rounds (CoRE's Table 21 case, and the worst case);
- the persuasiveness prompt: a short reason and ``<rating>1</rating>``.

Prompt sizes are therefore real (counted with the cl100k_base BPE bundled with litellm, over the
message contents) and answer sizes are CoRE's averages, an assumption. The per-round prompt
size of every role shows how the debate grows: the discussion buffer adds the previous round's
four statements, so the prompt grows linearly in the number of rounds.

Pure Python: no Django import.
"""

from __future__ import annotations

import json
import re
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evaluation.lib.llm.core_debate import DebateSettings, run_debate
from evaluation.lib.llm.core_factors import score_factors
from evaluation.lib.llm.core_recall_persuasiveness import score_persuasiveness
from evaluation.lib.llm.core_rubrics import DEBATE_ROLES
from evaluation.lib.llm.gateway import InMemoryResponseCache, LLMGateway, ModelConfig, UsageMeter

SEED_FACTOR_TOKENS = {"input": 16_519.2, "output": 4_593.6, "total": 21_114.0}
SEED_DEBATE_TOKENS = {"input": 49_000.01, "output": 2_337.16, "total": 51_337.15}
SEED_FACTOR_ANSWER_TOKENS = 383  # 4,593.6 output tokens / 12 factors
SEED_STATEMENT_TOKENS = 146  # 2,337.16 output tokens / 16 statements

_FILLER = (
    "Looking at the interaction, the system's turns mostly follow what the user asked for, "
    "although one reply drifts from the stated need and one suggestion repeats an earlier item, "
    "so I count each such turn against the standard before applying the rule. "
)
_ROLE_SCORES = {"Common User": 40, "Domain Expert": 55, "Linguist": 70, "HCI Expert": 20}


@cache
def _encoding():
    """litellm's default tokenizer, loaded on first use (importing litellm costs seconds and
    ~140 MB, which a process that never counts tokens must not pay)."""
    from litellm.litellm_core_utils.default_encoding import encoding

    return encoding


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text))


def prose(tokens: int) -> str:
    """English reasoning of exactly ``tokens`` cl100k_base tokens (up to a boundary effect)."""
    ids = _encoding().encode(_FILLER * (tokens // 20 + 2))[:tokens]
    return _encoding().decode(ids).strip()


@dataclass(frozen=True)
class Exchange:
    kind: str  # "factor", "debate", "persuasiveness" or "other"
    name: str  # the factor or the role
    round: int
    prompt_tokens: int
    completion_tokens: int


class DryRunServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 with well-formed answers."""

    def __init__(self, *, factor_answer_tokens: int = SEED_FACTOR_ANSWER_TOKENS,
                 statement_tokens: int = SEED_STATEMENT_TOKENS) -> None:
        self.factor_answer = prose(factor_answer_tokens) + "\n<rating>3</rating>"
        self.statement = prose(statement_tokens)
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def api_base(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def take_exchanges(self) -> list[Exchange]:
        with self._lock:
            taken, self.exchanges = self.exchanges, []
        return taken

    def answer(self, messages: Sequence[Mapping[str, Any]]) -> tuple[str, Exchange]:
        prompt = "\n".join(str(m.get("content") or "") for m in messages)
        factor = re.search(r'<guideline factor="([^"]+)">', prompt)
        role = re.search(r"YOUR ROLE: ([A-Za-z ]+)\n", prompt)
        if factor:
            kind, name, text = "factor", factor.group(1), self.factor_answer
            number = 0
        elif role:
            name = role.group(1).strip()
            found = re.search(r"This is round (\d+)\.", prompt)
            number = int(found.group(1)) if found else 1
            kind = "debate"
            text = json.dumps({"evaluator": name, "statement": self.statement,
                               "score": _ROLE_SCORES.get(name, 50) + number})
        elif "how persuasive" in prompt:
            kind, name, number = "persuasiveness", "persuasiveness", 0
            text = "The explanation is accurate but only partly fits my wishes.\n<rating>1</rating>"
        else:
            kind, name, number, text = "other", "", 0, "<rating>3</rating>"
        exchange = Exchange(kind, name, number, sum(count_tokens(str(m.get("content") or ""))
                                                    for m in messages), count_tokens(text))
        with self._lock:
            self.exchanges.append(exchange)
        return text, exchange

    @contextmanager
    def running(self) -> Iterator[DryRunServer]:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        thread = threading.Thread(target=self._httpd.serve_forever,
                                  kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._httpd.shutdown()
            self._httpd.server_close()


def _handler(server: DryRunServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            text, exchange = server.answer(body.get("messages") or [])
            payload = json.dumps({
                "id": "chatcmpl-dry-run", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", ""),
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": exchange.prompt_tokens,
                          "completion_tokens": exchange.completion_tokens,
                          "total_tokens": exchange.prompt_tokens + exchange.completion_tokens},
            }).encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


# --------------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------------


@dataclass
class LogCost:
    log_id: str
    turns: int
    factors: dict[str, int]  # input, output, total
    debate: dict[str, int]
    persuasiveness: dict[str, int]
    rounds: int
    round_inputs: dict[str, dict[int, int]]  # role name -> round -> prompt tokens


@dataclass
class CostReport:
    logs: list[LogCost] = field(default_factory=list)
    factor_answer_tokens: int = SEED_FACTOR_ANSWER_TOKENS
    statement_tokens: int = SEED_STATEMENT_TOKENS

    def mean(self, part: str, key: str) -> float:
        return statistics.fmean(getattr(log, part)[key] for log in self.logs)

    def per_round(self) -> dict[str, dict[int, float]]:
        """Mean prompt tokens per role and round (CoRE's Table 21, input column)."""
        table: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
        for log in self.logs:
            for role, rounds in log.round_inputs.items():
                for number, tokens in rounds.items():
                    table[role][number].append(tokens)
        return {role: {n: statistics.fmean(v) for n, v in sorted(rounds.items())}
                for role, rounds in table.items()}

    def growth(self) -> dict[str, Any]:
        """Per-round prompt increments per role and how far they are from constant.

        Linear growth means a constant increment (the previous round's four statements);
        ``max_increment_change`` is the largest change between consecutive increments over the
        logs, in tokens (0 when growth is exactly linear).
        """
        worst, increments = 0, {}
        for log in self.logs:
            for role, rounds in log.round_inputs.items():
                sizes = [rounds[n] for n in sorted(rounds)]
                steps = [b - a for a, b in zip(sizes, sizes[1:], strict=False)]
                increments.setdefault(role, []).append(steps)
                worst = max([worst, *(abs(b - a) for a, b in zip(steps, steps[1:], strict=False))])
        mean_steps = {role: [statistics.fmean(s[i] for s in steps if len(s) > i)
                             for i in range(max(len(s) for s in steps))]
                      for role, steps in increments.items()}
        return {"mean_increments": mean_steps, "max_increment_change": worst}

    def summary(self) -> dict[str, Any]:
        parts = ("factors", "debate", "persuasiveness")
        return {
            "logs": len(self.logs),
            "mean_turns": statistics.fmean(log.turns for log in self.logs) if self.logs else 0,
            "answer_tokens": {"factor": self.factor_answer_tokens,
                              "statement": self.statement_tokens},
            "per_log": {part: {key: round(self.mean(part, key), 1)
                               for key in ("input", "output", "total")} for part in parts},
            "max_per_log": {part: max(getattr(log, part)["total"] for log in self.logs)
                            for part in parts},
            "rounds": statistics.fmean(log.rounds for log in self.logs) if self.logs else 0,
            "per_round_input": {role: {n: round(v, 1) for n, v in rounds.items()}
                                for role, rounds in self.per_round().items()},
            "growth": self.growth(),
            "seed": {"factors": SEED_FACTOR_TOKENS, "debate": SEED_DEBATE_TOKENS},
        }


def measure_core_cost(
    logs: Sequence[Mapping[str, Any]],
    *,
    item_names: Mapping[str, str] | None = None,
    domain: str = "items",
    max_rounds: int = 4,
    factor_answer_tokens: int = SEED_FACTOR_ANSWER_TOKENS,
    statement_tokens: int = SEED_STATEMENT_TOKENS,
    max_concurrency: int = 8,
) -> CostReport:
    """Run CoRE on each log against a ``DryRunServer`` and count the tokens of every call."""
    server = DryRunServer(factor_answer_tokens=factor_answer_tokens,
                          statement_tokens=statement_tokens)
    report = CostReport(factor_answer_tokens=factor_answer_tokens,
                        statement_tokens=statement_tokens)
    settings = DebateSettings(max_rounds=max_rounds, domain=domain)
    with server.running():
        gateway = LLMGateway(InMemoryResponseCache(), max_concurrency=max_concurrency)
        config = ModelConfig(model="openai/dry-run", api_base=server.api_base, api_key="dry-run")
        for log in logs:
            meters = {part: UsageMeter() for part in ("factors", "debate", "persuasiveness")}
            results = score_factors(log, gateway=gateway, config=config, item_names=item_names,
                                    meter=meters["factors"])
            debate = run_debate(log, results, gateway=gateway, config=config, settings=settings,
                                item_names=item_names, meter=meters["debate"])
            score_persuasiveness(log, gateway=gateway, config=config, item_names=item_names,
                                 meter=meters["persuasiveness"])
            report.logs.append(_log_cost(log, meters, len(debate.rounds),
                                         server.take_exchanges()))
    return report


def _log_cost(log, meters, rounds: int, exchanges: Sequence[Exchange]) -> LogCost:
    def tokens(meter: UsageMeter) -> dict[str, int]:
        # Paid and cached alike: the cost of a log the first time it is judged.
        prompt = meter.prompt_tokens + meter.cached_prompt_tokens
        completion = meter.completion_tokens + meter.cached_completion_tokens
        return {"input": prompt, "output": completion, "total": prompt + completion}

    round_inputs: dict[str, dict[int, int]] = defaultdict(dict)
    for exchange in exchanges:
        if exchange.kind == "debate":
            round_inputs[exchange.name][exchange.round] = exchange.prompt_tokens
    order = {role.name: n for n, role in enumerate(DEBATE_ROLES)}
    return LogCost(
        log_id=str(log["log_id"]), turns=len(log["turns"]),
        factors=tokens(meters["factors"]), debate=tokens(meters["debate"]),
        persuasiveness=tokens(meters["persuasiveness"]), rounds=rounds,
        round_inputs=dict(sorted(round_inputs.items(), key=lambda kv: order.get(kv[0], 9))),
    )
