"""Reads for automatic LLM runs (services/auto_evaluation.py): a configuration's spending."""

from datetime import UTC, datetime

from django.db.models import Q, Sum
from django.utils import timezone

from evaluation.models import AutoEvaluation, AutoEvaluator


def auto_evaluation_spent_today(config: AutoEvaluator, now: datetime | None = None) -> float:
    """The estimated cost of the runs CONFIG started today (UTC): automatic ones on the day
    their submission arrived, approved ones on the day of their approval."""
    start = (now or timezone.now()).astimezone(UTC).replace(hour=0, minute=0, second=0,
                                                            microsecond=0)
    started = config.evaluations.filter(status=AutoEvaluation.Status.STARTED).filter(
        Q(decided_at__gte=start) | Q(decided_at__isnull=True, created_at__gte=start))
    return started.aggregate(total=Sum("cost_usd"))["total"] or 0.0
