"""Hand-out: which item an annotator gets next (the decision is `annotation.lib.handout`;
here the rows are read and locked), and giving back the slots of abandoned items."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.lib import handout

from ..models import (
    Annotation,
    Assignment,
    Draft,
    Study,
    StudyItem,
    StudyMember,
)
from . import handout_policy


def assignments_release_stale(*, study: Study, now=None) -> int:
    """Give back the slots of items whose annotator has been inactive past the timeout."""
    now = now or timezone.now()
    return Assignment.objects.filter(
        item__study=study, status=Assignment.Status.ACTIVE,
        last_active_at__lt=now - timedelta(seconds=study.timeout_seconds),
    ).update(status=Assignment.Status.RELEASED, released_at=now)


def _candidates(study: Study, member: StudyMember) -> list[handout.Candidate]:
    counted = Annotation.objects.filter(item=OuterRef("pk"), assignment__member__excluded=False)
    holding = Assignment.objects.filter(item=OuterRef("pk"), status=Assignment.Status.ACTIVE
                                        ).exclude(member=member)
    rows = (StudyItem.objects.filter(study=study)
            .annotate(labels=Coalesce(Subquery(counted.values("item").annotate(n=Count("pk"))
                                               .values("n")), 0),
                      holds=Coalesce(Subquery(holding.values("item").annotate(n=Count("pk"))
                                              .values("n")), 0))
            .values_list("pk", "kind", "labels", "holds", "target_labels", "position"))
    return [handout.Candidate(pk, kind, labels, holds, target, position)
            for pk, kind, labels, holds, target, position in rows]


def _estimate_seconds(member: StudyMember, study: Study) -> float:
    """The median of the annotator's recent item times (annotation/lib/handout.py)."""
    recent = list(member.assignments.filter(status=Assignment.Status.SUBMITTED,
                                            item__kind=StudyItem.Kind.NORMAL, focused_ms__gt=0)
                  .order_by("-submitted_at", "-position")
                  .values_list("focused_ms", flat=True)[:handout.ESTIMATE_WINDOW])
    return handout.seconds_per_item(recent, study.seconds_per_item)


def assignment_next(*, member: StudyMember, now=None) -> Assignment | None:
    """Hand the annotator their next item (or give back their unfinished one); None when done.

    Hand-outs of one study are serialized by a lock on the study row, so two annotators asking
    at the same moment never both take the last open slot of an item. Under the active policy
    only the items drawn so far are handed out, and the next wave is drawn (under the same lock)
    once every item of the last one has its labels.
    """
    now = now or timezone.now()
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=member.study_id)
        if member.excluded or not study.is_open:
            return None
        assignments_release_stale(study=study, now=now)
        mine = list(member.assignments.select_related("item").annotate(
            has_draft=Exists(Draft.objects.filter(assignment=OuterRef("pk")))))
        mine.sort(key=lambda a: a.position)
        open_ = [a for a in mine if a.status == Assignment.Status.ACTIVE
                 or (a.status == Assignment.Status.RELEASED and a.has_draft)]
        done = {a.item_id for a in mine if a.status != Assignment.Status.RELEASED} | {
            a.item_id for a in open_}
        candidates = _candidates(study, member)
        if study.is_active_handout:  # only the items drawn so far (handout_policy)
            withheld = handout_policy.active_exclusions(
                study=study, labels={c.item_id: c.labels for c in candidates}, now=now)
            candidates = [c for c in candidates if c.item_id not in withheld]
        kinds = [a.item.kind for a in mine if a.status == Assignment.Status.SUBMITTED]
        decision = handout.choose_next(
            resume=[a.item_id for a in open_], candidates=candidates, done=done,
            member_seed=member.order_seed, gold_rate=study.gold_rate,
            gold_done=kinds.count(handout.GOLD), regular_done=kinds.count(handout.NORMAL))
        if decision is None:
            return None
        by_item = {a.item_id: a for a in mine}
        assignment = by_item.get(decision.item_id)
        remaining = handout.remaining_for(candidates=candidates, done=done | {decision.item_id},
                                        gold_rate=study.gold_rate)
        per_item = _estimate_seconds(member, study)
        if decision.reason == "resume":
            if assignment.status == Assignment.Status.RELEASED:
                assignment.status, assignment.released_at = Assignment.Status.ACTIVE, None
                assignment.last_active_at = now
                assignment.save(update_fields=["status", "released_at", "last_active_at"])
            return assignment
        position = max((a.position for a in mine), default=0) + 1
        fields = {
            "position": position, "status": Assignment.Status.ACTIVE, "reason": decision.reason,
            "handed_out_at": now, "last_active_at": now, "released_at": None,
            "swapped": secrets.randbelow(2) == 1,
            "queue_total": position + remaining,
            "seconds_left": round((remaining + 1) * per_item),
        }
        if assignment is not None:  # released without a draft earlier, handed out again
            for name, value in fields.items():
                setattr(assignment, name, value)
            assignment.save()
            return assignment
        return Assignment.objects.create(member=member, item_id=decision.item_id, **fields)
