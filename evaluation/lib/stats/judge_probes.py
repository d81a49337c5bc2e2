"""Judge-bias probes of an LLM evaluator run (statistics.md, "Judge-bias probes"). Pure Python.

- **Length sensitivity**: the within-dialogue slope of a turn-level score on the response's
  length (per 100 words): the least-squares slope with dialogue fixed effects (each dialogue's
  lengths and scores centred on its own means), so a judge is not credited with preferring long
  answers because some dialogues invite both long answers and high scores. Interval: the
  delete-one-dialogue jackknife, t with G − 1 df (as every clustered interval in Concord).
  LLM judges' preference for longer answers: Zheng et al. 2023 ("Judging LLM-as-a-judge", verbosity
  bias), Dubois et al. 2024 (length-controlled AlpacaEval).
- **Position bias** (pairwise judges): each pair judged in both orders; the share of pairs whose
  verdict flips with the order (A wins as first, B wins as first), with a Wilson interval
  (Zheng et al. 2023, position bias; Wang et al. 2023, "Large Language Models are not Fair
  Evaluators").
- **Self-preference**: the judge's model family equals a ranked system's family (Panickssery et al.
  2024, "LLM Evaluators Recognize and Favor Their Own Generations"); a flag, not a test. The family
  is read from the litellm model string and from the system's name, description and family
  fields by the keywords of MODEL_FAMILIES.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np
from scipy import stats

DEFAULT_CONFIDENCE = 0.95
PER_WORDS = 100
MIN_DIALOGUES = 3

# family -> keywords (whole words or model-name prefixes, lower case)
MODEL_FAMILIES: dict[str, tuple[str, ...]] = {
    "GPT (OpenAI)": ("gpt", "openai", "chatgpt", "o1", "o3", "o4"),
    "Claude (Anthropic)": ("claude", "anthropic"),
    "Gemini (Google)": ("gemini", "palm", "bard", "vertex_ai"),
    "Gemma (Google)": ("gemma",),
    "Llama (Meta)": ("llama", "meta-llama", "codellama"),
    "Mistral": ("mistral", "mixtral", "codestral", "ministral"),
    "Qwen (Alibaba)": ("qwen", "qwq"),
    "DeepSeek": ("deepseek",),
    "Phi (Microsoft)": ("phi",),
    "Command (Cohere)": ("cohere", "command-r"),
}


def model_family(text: str) -> str | None:
    """The model family named in TEXT (a litellm model string or a system's description), or
    None; the first family in MODEL_FAMILIES order whose keyword starts a word of TEXT."""
    words = re.findall(r"[a-z0-9][a-z0-9._-]*", (text or "").lower())
    for family, keys in MODEL_FAMILIES.items():
        for word in words:
            for part in re.split(r"[/_]", word):
                # a short key (gpt, phi, o1) only before a version: phi3, gpt-4o, not philo…
                if any(part.startswith(key) if len(key) > 3 else
                       re.match(rf"{re.escape(key)}([0-9.:-]|$)", part) for key in keys):
                    return family
    return None


# litellm prefixes that name a protocol or a server, not a model's maker
GENERIC_PREFIXES = frozenset({"openai", "hosted_vllm", "ollama", "ollama_chat", "openrouter",
                              "together_ai", "huggingface", "azure", "bedrock", "groq"})


def judge_family(model: str) -> str | None:
    """The family of a litellm MODEL string: from the model's name after the provider prefix,
    else from the prefix when it names a maker (`anthropic/…`), never from a generic one
    (`openai/` is any OpenAI-compatible server)."""
    prefix, _, name = (model or "").rpartition("/")
    family = model_family(name)
    if family is None and prefix and prefix.split("/")[0] not in GENERIC_PREFIXES:
        family = model_family(prefix)
    return family


def self_preference(judge_model: str, systems: Iterable[tuple[str, str]]) -> dict:
    """{"judge_family", "systems": the names of SYSTEMS ((name, text to read)) of the judge's
    family}; no family for the judge: no flag."""
    family = judge_family(judge_model)
    same = [name for name, text in systems if family and model_family(text) == family]
    return {"judge_family": family, "systems": sorted(same), "flag": bool(same)}


def length_slope(scores: Mapping[Hashable, float], lengths: Mapping[Hashable, int],
                 clusters: Mapping[Hashable, Hashable], *,
                 confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """The within-dialogue slope of score per PER_WORDS words of response, with its
    dialogue-jackknife interval; `value` None (and a reason) when it cannot be estimated."""
    keys = [k for k in scores if k in lengths and k in clusters]
    by_cluster: dict[Hashable, list] = defaultdict(list)
    for k in keys:
        by_cluster[clusters[k]].append((lengths[k] / PER_WORDS, float(scores[k])))
    parts = []  # per dialogue: (Σ x̃ ỹ, Σ x̃²) with x̃, ỹ centred in the dialogue
    for rows in by_cluster.values():
        if len(rows) < 2:
            continue
        x = np.array([r[0] for r in rows])
        y = np.array([r[1] for r in rows])
        xc = x - x.mean()
        parts.append((float(xc @ (y - y.mean())), float(xc @ xc)))
    out = {"value": None, "ci_low": None, "ci_high": None, "per_words": PER_WORDS,
           "n": {"units": len(keys), "dialogues": len(parts)}, "reason": ""}
    sxy = np.array([p[0] for p in parts])
    sxx = np.array([p[1] for p in parts])
    if len(parts) < MIN_DIALOGUES or sxx.sum() <= 0:
        out["reason"] = (f"needs {MIN_DIALOGUES} dialogues with two or more scored turns of "
                         "different lengths")
        return out
    slope = float(sxy.sum() / sxx.sum())
    g = len(parts)
    rest_xx = sxx.sum() - sxx
    usable = rest_xx > 0
    leave = (sxy.sum() - sxy[usable]) / rest_xx[usable]
    out["value"] = slope
    if usable.sum() < MIN_DIALOGUES:
        out["reason"] = "too few dialogues with varying lengths for an interval"
        return out
    variance = (g - 1) / g * float(np.sum((leave - leave.mean()) ** 2))
    half = float(stats.t.ppf(0.5 + confidence / 2, g - 1)) * math.sqrt(variance)
    out.update({"ci_low": slope - half, "ci_high": slope + half})
    return out


def position_flips(verdicts: Sequence[tuple[str, str]], *,
                   confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """VERDICTS: per pair, (winner with A shown first, winner with B shown first), each "A", "B"
    or "tie". A flip: the verdict changes with the order. The share of flips with its Wilson
    interval."""
    n = len(verdicts)
    flips = sum(first != second for first, second in verdicts)
    if n == 0:
        return {"value": None, "ci_low": None, "ci_high": None, "n": 0, "flips": 0}
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = flips / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return {"value": p, "ci_low": max(0.0, centre - half), "ci_high": min(1.0, centre + half),
            "n": n, "flips": flips}
