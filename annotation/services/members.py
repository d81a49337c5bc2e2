"""Study membership: joining by invitation, adding annotators, excluding one."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.utils import timezone

from core.roles import ANNOTATOR

from ..models import (
    Study,
    StudyMember,
)
from .validation import study_validations_refresh_enqueue


def study_member_add(*, study: Study, user) -> StudyMember:
    """Make USER an annotator of STUDY (idempotent: joining twice keeps one membership)."""
    member, _ = StudyMember.objects.get_or_create(
        study=study, user=user, defaults={"order_seed": secrets.randbits(62)})
    user.groups.add(Group.objects.get_or_create(name=ANNOTATOR)[0])
    return member


def study_join(*, token: str, user) -> StudyMember | None:
    study = Study.objects.filter(invite_token=token, is_open=True).first()
    if study is None:
        return None
    return study_member_add(study=study, user=user)


def study_member_set_excluded(*, member: StudyMember, excluded: bool, reason: str = "") -> None:
    """Exclude an annotator from new items and from reports (recorded in the export)."""
    if excluded and not reason.strip():
        raise ValidationError("Say why the annotator is excluded (it goes into the export).")
    member.excluded = excluded
    member.exclusion_reason = reason.strip()[:300] if excluded else ""
    member.excluded_at = timezone.now() if excluded else None
    member.save(update_fields=["excluded", "exclusion_reason", "excluded_at"])
    study_validations_refresh_enqueue(study=member.study)
