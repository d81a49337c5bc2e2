"""Surface text similarity for Trace (Appendix J "Text Quality").

Both metrics compare a system response with the reference system turn of the same context.
- BLEU-4: sacrebleu's sentence BLEU (13a tokenisation, exponential smoothing — Chen & Cherry —
  and effective order), reported on a 0–1 scale like the paper's tables (sacrebleu prints 0–100).
- ROUGE-L: F1 of the longest common subsequence over rouge-score's default tokens (lower-cased
  alphanumerics, no stemming).

Both are computed by sacrebleu / rouge-score's own building blocks (the 13a tokenizer's rules,
``BLEU.compute_bleu``, ``rouge_score`` tokenisation and F-measure), with the hot loops replaced:
per-order n-gram counting, the 13a tokenizer's rules without per-position regex scans, and
rapidfuzz's C++ LCS instead of rouge-score's pure-Python table. Tests check equality with
``sacrebleu.sentence_bleu`` and ``RougeScorer`` on random text.
"""

from __future__ import annotations

import re
from collections import Counter

from rapidfuzz.distance import LCSseq
from rouge_score import scoring
from rouge_score import tokenize as rouge_tokenize
from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp

MAX_NGRAM_ORDER = 4
BLEU_SMOOTH_METHOD = "exp"

# sacrebleu's 13a tokenizer is four regex substitutions. Scanning every position with a
# character-class regex dominates BLEU's cost, so the same rules are applied here by cheaper
# means with identical output (tests compare with sacrebleu's tokenizer on adversarial text):
# rule 1 pads each character of one class with spaces; rules 2 and 3 split periods and commas
# that do not sit next to a digit; rule 4 (digit followed by hyphen) keeps sacrebleu's regex.
_PADDED_CHARS = "".join(
    chr(code)
    for low, high in (("{", "~"), ("[", "`"), (" ", "&"), ("(", "+"), (":", "@"), ("/", "/"))
    for code in range(ord(low), ord(high) + 1)
)
_DIGITS = frozenset("0123456789")
_PERIOD_COMMA_RE = re.compile(r"[.,]")
_DIGIT_HYPHEN_RULE = TokenizerRegexp()._re[3]


def _pad_symbols(line: str) -> str:
    r"""Rule 1: ``([{-~[-` -&(-+:-@/])`` → `` \1 ``, one ``str.replace`` per present symbol."""
    for char in _PADDED_CHARS:
        if char in line:
            line = line.replace(char, f" {char} ")
    return line


def _split_after_non_digit(line: str) -> str:
    r"""Rule 2: ``([^0-9])([.,])`` → ``\1 \2 `` with the regex's left-to-right, non-overlapping
    matching (a match consumes the character before the period or comma)."""
    parts, last = [], 0
    for match in _PERIOD_COMMA_RE.finditer(line):
        i = match.start()
        if i - 1 < last or line[i - 1] in _DIGITS:
            continue
        parts += [line[last : i - 1], line[i - 1], " ", line[i], " "]
        last = i + 1
    parts.append(line[last:])
    return "".join(parts)


def _split_before_non_digit(line: str) -> str:
    r"""Rule 3: ``([.,])([^0-9])`` → `` \1 \2`` (a match consumes the following character)."""
    parts, last = [], 0
    for match in _PERIOD_COMMA_RE.finditer(line):
        i = match.start()
        if i < last or i + 1 >= len(line) or line[i + 1] in _DIGITS:
            continue
        parts += [line[last:i], " ", line[i], " ", line[i + 1]]
        last = i + 2
    parts.append(line[last:])
    return "".join(parts)


def bleu_tokens(line: str) -> tuple[str, ...]:
    """sacrebleu's 13a tokenisation of ``line``, as a tuple of tokens."""
    line = line.rstrip().replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&")
        line = line.replace("&lt;", "<").replace("&gt;", ">")
    line = _pad_symbols(f" {line} ")
    if "." in line or "," in line:
        line = _split_before_non_digit(_split_after_non_digit(line))
    if "-" in line:
        pattern, replacement = _DIGIT_HYPHEN_RULE
        line = pattern.sub(replacement, line)
    return tuple(line.split())


def _ngram_counts(tokens: tuple[str, ...]) -> tuple[Counter, ...]:
    """Counts of 1- to 4-grams (unigrams as plain strings, which hash faster than 1-tuples)."""
    return (
        Counter(tokens),
        Counter(zip(tokens, tokens[1:])),  # noqa: B905 - shifted slices, lengths differ on purpose
        Counter(zip(tokens, tokens[1:], tokens[2:])),  # noqa: B905
        Counter(zip(tokens, tokens[1:], tokens[2:], tokens[3:])),  # noqa: B905
    )


def sentence_bleu4(hypothesis: str, reference: str) -> float:
    """Sentence BLEU-4 in [0, 1] with exponential smoothing and effective order.

    Equals ``sacrebleu.sentence_bleu(hypothesis, [reference]).score / 100``.
    """
    hyp_tokens, ref_tokens = bleu_tokens(hypothesis), bleu_tokens(reference)
    hyp_counts, ref_counts = _ngram_counts(hyp_tokens), _ngram_counts(ref_tokens)
    # Clipped matches only need the n-grams both sides share: a C-level key intersection.
    correct = [
        sum(min(hyp[gram], ref[gram]) for gram in hyp.keys() & ref.keys())
        for hyp, ref in zip(hyp_counts, ref_counts, strict=True)
    ]
    total = [max(0, len(hyp_tokens) - order) for order in range(MAX_NGRAM_ORDER)]
    score = BLEU.compute_bleu(
        correct,
        total,
        len(hyp_tokens),
        len(ref_tokens),
        smooth_method=BLEU_SMOOTH_METHOD,
        effective_order=True,
    )
    return score.score / 100.0


def rouge_tokens(text: str) -> tuple[str, ...]:
    """rouge-score's default tokens (lower-cased ASCII alphanumerics, no stemming).

    Same as ``rouge_score.tokenize.tokenize(text, None)``: after its substitution every
    remaining token is already ``[a-z0-9]+``, so its per-token validity check is skipped.
    """
    return tuple(rouge_tokenize.NON_ALPHANUM_RE.sub(" ", text.lower()).split())


def rouge_l_f1(hypothesis: str, reference: str) -> float:
    """ROUGE-L F1 in [0, 1]; equals ``RougeScorer(["rougeL"]).score(reference, hypothesis)``."""
    hyp, ref = rouge_tokens(hypothesis), rouge_tokens(reference)
    if not hyp or not ref:
        return 0.0
    lcs = LCSseq.similarity(hyp, ref)
    return scoring.fmeasure(lcs / len(hyp), lcs / len(ref))
