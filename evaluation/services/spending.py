"""LLM budgets: every start that spends LLM money reserves its estimate in a ledger
(docs/operations.md, "LLM budgets").

An account is a person ("user:<id>") or the command line's operator ("operator"). Each has an
allowance per UTC day in tokens and in US dollars (CONCORD_LLM_DAILY_BUDGET_TOKENS,
CONCORD_LLM_DAILY_BUDGET_USD) and each start a cap (CONCORD_LLM_RUN_CAP_TOKENS,
CONCORD_LLM_RUN_CAP_USD); 0 switches a limit off.

- `spending_reserve`, called in the transaction that creates the job, locks the account's row
  (`LLMBudgetAccount`, select_for_update; SQLite's IMMEDIATE transactions serialise writers),
  sums what the account reserved or spent today, refuses with `BudgetExceeded` (a message that
  names the estimate, what is left, the setting and when it resets) or writes one `LLMSpend`
  row. Concurrent starts therefore queue on the lock and their sum never exceeds the budget;
  a refusal rolls the caller's transaction back, so nothing partial is stored.
- `spending_add` counts what a job has spent so far (simulations per batch, FACE per
  iteration); `spending_settle`, called when a job finishes, fails or is cancelled, replaces
  the reservation by the actual spend (an LLM run's `Run.usage`).
- A model without a known price counts by tokens only (its dollars are unknown, never $0);
  when no token limit is on but a dollar limit is, such a start is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from evaluation.models import LLMBudgetAccount, LLMSpend, Run

if TYPE_CHECKING:  # the estimate module loads the tokenizer; the job bookkeeping imports this
    from evaluation.lib.llm.estimate import RunEstimate

OPERATOR = "operator"
# How a start treats the budget: CHECK it (people; the command line by default), RECORD the
# spending without a check (the command line's --no-budget), or leave the ledger out (EXEMPT:
# the automatic runs on new uploads, held by their configuration's own budgets).
CHECK, RECORD, EXEMPT = "check", "record", "exempt"
WHAT = {LLMSpend.Kind.RUN: "run", LLMSpend.Kind.SIMULATION: "simulation",
        LLMSpend.Kind.FACE_OPTIMIZATION: "FACE optimisation"}


class BudgetExceeded(ValueError):
    """A start refused by a budget; the message says which, by how much and until when.
    DAILY: the daily allowance (try again tomorrow), else the per-run cap (never as is)."""

    def __init__(self, message: str, *, daily: bool):
        super().__init__(message)
        self.daily = daily


@dataclass(frozen=True)
class Allowance:
    """An account's use of today's budget; the limits are None when switched off."""

    tokens_used: int
    usd_used: float
    tokens_limit: int | None
    usd_limit: float | None
    resets_at: datetime

    @property
    def tokens_left(self) -> int | None:
        return None if self.tokens_limit is None else max(0, self.tokens_limit - self.tokens_used)

    @property
    def usd_left(self) -> float | None:
        return None if self.usd_limit is None else max(0.0, self.usd_limit - self.usd_used)


def account_key(user) -> str:
    return OPERATOR if user is None else f"user:{user.pk}"


def _day_start(now: datetime | None = None) -> datetime:
    return (now or timezone.now()).astimezone(UTC).replace(hour=0, minute=0, second=0,
                                                           microsecond=0)


def spending_remaining(*, user, now: datetime | None = None) -> Allowance:
    """USER's (None: the operator's) use of today's allowance (UTC). Reads only. A reservation
    counts its estimate until it is settled (or what it spent so far, when more); a settled one
    what it spent; unknown dollars count as none (their tokens still count)."""
    start = _day_start(now)
    tokens, usd = 0, 0.0
    rows = LLMSpend.objects.filter(account__key=account_key(user), created_at__gte=start)
    for row in rows.values("status", "estimated_tokens", "estimated_usd", "spent_tokens",
                           "spent_usd"):
        spent_usd = row["spent_usd"] or 0.0
        if row["status"] == LLMSpend.Status.SETTLED:
            tokens, usd = tokens + row["spent_tokens"], usd + spent_usd
        else:
            tokens += max(row["estimated_tokens"], row["spent_tokens"])
            usd += max(row["estimated_usd"] or 0.0, spent_usd)
    return Allowance(tokens_used=tokens, usd_used=usd,
                     tokens_limit=settings.LLM_DAILY_BUDGET_TOKENS or None,
                     usd_limit=settings.LLM_DAILY_BUDGET_USD or None,
                     resets_at=start + timedelta(days=1))


def tokens_text(n: int) -> str:
    """1.2 M, 300 k, 950: how the refusals and the estimate pages write token counts."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} M"
    if n >= 1_000:
        return f"{n / 1_000:.0f} k"
    return str(n)


def money_text(usd: float) -> str:
    return f"${usd:,.2f}" if usd >= 0.01 or usd == 0 else f"${usd:.4f}"


def budget_problem(estimate: RunEstimate, allowance: Allowance, *, what: str = "run") -> str:
    """Why a start of ESTIMATE may not go ahead under ALLOWANCE ("" when it may)."""
    return _budget_check(estimate, allowance, what)[0]


def _budget_check(estimate: RunEstimate, allowance: Allowance, what: str) -> tuple[str, bool]:
    """(why not, or "", and whether the reason is today's allowance rather than a cap)."""
    problem = _cap_problem(estimate, what)
    if problem:
        return problem, False
    return _daily_problem(estimate, allowance, what), True


def _cap_problem(estimate: RunEstimate, what: str) -> str:
    tokens, cost = estimate.total_tokens, estimate.cost_usd
    head = f"This {what} is estimated at {tokens_text(tokens)} tokens"
    if settings.LLM_RUN_CAP_TOKENS and tokens > settings.LLM_RUN_CAP_TOKENS:
        return (f"{head}, over the per-run cap of {tokens_text(settings.LLM_RUN_CAP_TOKENS)} "
                "tokens (CONCORD_LLM_RUN_CAP_TOKENS); make it smaller (fewer units, users or "
                "turns) or ask the operator.")
    if cost is not None and settings.LLM_RUN_CAP_USD and cost > settings.LLM_RUN_CAP_USD:
        return (f"{head} ({money_text(cost)}), over the per-run cap of "
                f"{money_text(settings.LLM_RUN_CAP_USD)} (CONCORD_LLM_RUN_CAP_USD); make it "
                "smaller (fewer units, users or turns) or ask the operator.")
    if cost is None and not settings.LLM_DAILY_BUDGET_TOKENS and settings.LLM_DAILY_BUDGET_USD:
        return (f"{head} at an unknown price (litellm has no price for the model), and no "
                "token budget is set (CONCORD_LLM_DAILY_BUDGET_TOKENS is 0), so it cannot be "
                "checked against CONCORD_LLM_DAILY_BUDGET_USD.")
    return ""


def _daily_problem(estimate: RunEstimate, allowance: Allowance, what: str) -> str:
    tokens, cost = estimate.total_tokens, estimate.cost_usd
    head = f"This {what} is estimated at {tokens_text(tokens)} tokens"
    resets = "it resets at 00:00 UTC"
    left = allowance.tokens_left
    if left is not None and tokens > left:
        return (f"{head}; your daily allowance has {tokens_text(left)} tokens left "
                f"(CONCORD_LLM_DAILY_BUDGET_TOKENS); {resets}.")
    if cost is None:
        return ""  # counted by its tokens alone
    if allowance.usd_left is not None and cost > allowance.usd_left:
        return (f"{head} ({money_text(cost)}); your daily allowance has "
                f"{money_text(allowance.usd_left)} left (CONCORD_LLM_DAILY_BUDGET_USD); "
                f"{resets}.")
    return ""


def _locked_account(key: str) -> LLMBudgetAccount:
    LLMBudgetAccount.objects.get_or_create(key=key)
    return LLMBudgetAccount.objects.select_for_update().get(key=key)


def spending_reserve(*, user, kind: str, estimate: RunEstimate, model: str, job,
                     description: str, enforce: bool = True) -> LLMSpend:
    """Reserve ESTIMATE for JOB on USER's account (None: the operator's), in the caller's
    transaction, the one that creates JOB. Raises BudgetExceeded (and the caller's transaction
    stores nothing) when it would pass a cap or today's allowance; ENFORCE false records it
    without a check (the command line's --no-budget)."""
    if not connection.in_atomic_block:
        raise RuntimeError("spending_reserve runs inside the transaction that creates the job")
    account = _locked_account(account_key(user))
    if enforce:
        problem, daily = _budget_check(estimate, spending_remaining(user=user), WHAT[kind])
        if problem:
            raise BudgetExceeded(problem, daily=daily)
    return LLMSpend.objects.create(
        account=account, user=user, kind=kind, job=job, description=description[:300],
        model=model[:200], estimated_tokens=estimate.total_tokens,
        estimated_usd=estimate.cost_usd, budgeted=enforce)


def spending_add(*, job_id: int, usage: dict) -> None:
    """Count USAGE (a `UsageMeter.summary()`: total_tokens, cost_usd or None) as spent by
    JOB_ID's reservation; unknown dollars make its dollars unknown."""
    tokens = int(usage.get("total_tokens") or 0)
    cost = usage.get("cost_usd")
    changes = {"spent_tokens": F("spent_tokens") + tokens,
               "spent_usd": None if cost is None else F("spent_usd") + cost}
    LLMSpend.objects.filter(job_id=job_id).update(**changes)


def spending_settle(*, job_id: int) -> LLMSpend | None:
    """JOB_ID finished (succeeded, failed or cancelled): its reservation now counts what it
    spent. An LLM run's spend is its `Run.usage`; the others' what `spending_add` counted.
    Settling twice changes nothing."""
    with transaction.atomic():
        spend = (LLMSpend.objects.select_for_update()
                 .filter(job_id=job_id, status=LLMSpend.Status.RESERVED).first())
        if spend is None:
            return None
        if spend.kind == LLMSpend.Kind.RUN:
            usage = Run.objects.filter(job_id=job_id).values_list("usage", flat=True).first()
            usage = usage or {}
            spend.spent_tokens = int(usage.get("total_tokens") or 0)
            spend.spent_usd = usage.get("cost_usd", 0.0) if usage else 0.0
        spend.status, spend.settled_at = LLMSpend.Status.SETTLED, timezone.now()
        spend.save(update_fields=["spent_tokens", "spent_usd", "status", "settled_at"])
    return spend


def spending_preview(*, user, estimate: RunEstimate | None, kind: str) -> dict:
    """What a page shows before the user confirms a start: the estimate, today's allowance
    and, when the start would be refused, why (reads only)."""
    if estimate is None:
        return {}
    allowance = spending_remaining(user=user)
    return {"estimate": estimate, "allowance": allowance,
            "tokens_text": tokens_text(estimate.total_tokens),
            "problem": budget_problem(estimate, allowance, what=WHAT[kind])}
