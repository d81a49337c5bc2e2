"""Shared glue for management commands: progress bars and format errors on stderr."""

import time
from contextlib import contextmanager

from django.core.management.base import CommandError
from tqdm import tqdm

from evaluation.lib.formats.errors import FormatError


class ProgressBars:
    """A `progress(stage, done, total)` callback: one tqdm bar per stage on a terminal; plain
    lines elsewhere (a log file, `make run` piped to a file), since a bar redrawn with escape
    codes is unreadable there: the stage's start, every tenth of the way or every 10 seconds,
    and its end."""

    PLAIN_EVERY_SECONDS = 10.0

    def __init__(self, stream, enabled: bool = True):
        self.stream = stream
        self.enabled = enabled
        self.bars: dict[str, tqdm] = {}
        isatty = getattr(stream, "isatty", None)
        self.plain = not (isatty and isatty())
        self.shown: dict[str, tuple[int, float]] = {}  # stage -> (tenths shown, at)

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.plain:
            self._line(stage, done, total)
            return
        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=stage, unit="", file=self.stream,
                                          leave=True, dynamic_ncols=True)
        bar.update(done - bar.n)

    def _line(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        tenths = 10 * done // total if total else 0
        last = self.shown.get(stage)
        finished = total and done >= total
        if last is not None and not finished and tenths <= last[0] \
                and now - last[1] < self.PLAIN_EVERY_SECONDS:
            return
        if last is not None and finished and last[0] >= 10:
            return
        self.shown[stage] = (tenths, now)
        share = f" ({100 * done // total}%)" if total else ""
        self.stream.write(f"  {stage}: {done}/{total}{share}{' done' if finished else ''}\n")
        self.stream.flush()

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


@contextmanager
def format_errors_as_command_error():
    """Print every format issue, one per line, and exit 1."""
    try:
        yield
    except FormatError as exc:
        raise CommandError("invalid input, nothing was stored:\n" + str(exc)) from exc


def add_llm_arguments(parser) -> None:
    """--profile, --model, --temperature, --max-tokens (docs/llm.md)."""
    group = parser.add_argument_group("LLM (default: the operator's `default` profile, made "
                                      "of the CONCORD_LLM_* settings)")
    group.add_argument("--profile", help="one of the operator's model profiles "
                                         "(CONCORD_LLM_PROFILES; default: default)")
    group.add_argument("--model", help="litellm model string, e.g. openai/gpt-4o-mini, in place "
                                       "of the profile's model (reached at the profile's address "
                                       "with its credential)")
    group.add_argument("--temperature", type=float)
    group.add_argument("--max-tokens", type=int)


def llm_model_options(opts: dict, model: str | None = None) -> dict:
    """A run-configuration model entry from the command's LLM options (MODEL overrides)."""
    # Imported here: the LLM layer loads litellm, which takes seconds to import.
    from evaluation.lib.llm.gateway import LLMConfigurationError
    from evaluation.services.llm_models import NO_MODEL, model_options

    try:
        return model_options(profile=opts.get("profile"), model=model or opts.get("model"),
                             temperature=opts.get("temperature"),
                             max_tokens=opts.get("max_tokens"))
    except LLMConfigurationError as exc:
        hint = " (or pass --model)" if str(exc) == NO_MODEL else ""
        raise CommandError(f"{exc}{hint}") from exc


def add_budget_argument(parser) -> None:
    """--no-budget: the operator's commands check the LLM budgets like the web does (on the
    "operator" account, docs/operations.md "LLM budgets") unless told not to."""
    parser.add_argument("--no-budget", action="store_true",
                        help="start even over the LLM budgets (CONCORD_LLM_DAILY_BUDGET_*, "
                             "CONCORD_LLM_RUN_CAP_*); the spending is still recorded")


def spending_choice(opts: dict) -> str:
    from evaluation.services.spending import CHECK, RECORD

    return RECORD if opts.get("no_budget") else CHECK


def format_usage(usage: dict) -> str:
    """One paragraph on an LLM run's tokens and money (unknown cost is said, never $0)."""
    if not usage:
        return ""
    cost = usage.get("cost_usd")
    money = "unknown (no price for this model)" if cost is None else f"${cost:.6f}"
    sent, cached = usage.get("calls", 0), usage.get("cached_calls", 0)
    # Every figure says which calls it covers, so a fully cached re-run (0 sent, all cached,
    # no tokens paid, $0) reads the same on every line.
    lines = [
        f"LLM usage ({usage.get('model', '')}): {sent + cached} calls answered: {sent} by the "
        f"model, {cached} from the cache (free); {usage.get('failed_calls', 0)} failed",
        f"  paid (by the model): {usage.get('prompt_tokens', 0)} prompt + "
        f"{usage.get('completion_tokens', 0)} completion tokens, cost {money}",
        f"  from the cache: {usage.get('cached_prompt_tokens', 0)} prompt + "
        f"{usage.get('cached_completion_tokens', 0)} completion tokens, cost $0",
    ]
    for name, stage in (usage.get("stages") or {}).items():
        lines.append(f"  {name}: {stage['calls']} calls by the model "
                     f"({stage['total_tokens']} tokens), {stage['cached_calls']} from the cache "
                     f"({stage['cached_prompt_tokens'] + stage['cached_completion_tokens']} "
                     "tokens)")
    return "\n".join(lines)
