"""Object-level access to studies and assignments: every annotation view goes through these.

- Staff and a study's author manage it (dashboard, members, export, system identities).
- A member (annotator) reads the study's instructions and works on their own assignments only.
- Anyone else gets 404: the study's existence is not revealed.
- A member asking to manage the study, or to write to a closed study, gets 403.
"""

from django.core.exceptions import PermissionDenied
from django.http import Http404

from core.roles import STUDY_AUTHOR, has_role

from . import rows
from .models import Assignment, Study, StudyMember

CLOSED = ("This study is closed: your labels can be read but not changed. Ask its author to "
          "reopen it if you need to change one.")


def can_create_studies(user) -> bool:
    return user.is_authenticated and has_role(user, STUDY_AUTHOR)


def can_manage_study(user, study: Study) -> bool:
    return user.is_authenticated and (user.is_staff or study.author_id == user.pk)


def get_study_for_user(user, slug: str, *, write: bool = False) -> Study:
    """The study if the user may read it; write=True also requires managing it."""
    study = Study.objects.filter(slug=slug).select_related("benchmark").first()
    if study is None or not user.is_authenticated:
        raise Http404("No such study.")
    if can_manage_study(user, study):
        return study
    if not StudyMember.objects.filter(study=study, user=user).exists():
        raise Http404("No such study.")
    if write:
        raise PermissionDenied("Only the study's author (or staff) can change it; as a member you "
                               "label your own items.")
    return study


def get_member_for_user(user, slug: str, *, write: bool = False) -> StudyMember:
    """The user's own membership of the study (404 for non-members, 403 on a closed study)."""
    if not user.is_authenticated:
        raise Http404("No such study.")
    member = (StudyMember.objects.select_related("study", "study__benchmark")
              .filter(study__slug=slug, user=user).first())
    if member is None:
        raise Http404("No such study.")
    if write and not member.study.is_open:
        raise PermissionDenied(CLOSED)
    return member


def get_assignment_for_user(user, slug: str, position: int, *, write: bool = False) -> Assignment:
    """The user's own assignment at POSITION of their queue, with its member, item, study and
    autosaved draft (`assignment.draft_values`, None without one).

    Only the annotator it was handed to can open it (an author reads labels in the dashboard
    and the export). It runs on every item page, autosave and submission, so it is one
    statement (`rows.assignment_lookup`; docs/performance.md).
    """
    if not user.is_authenticated:
        raise Http404("No such item.")
    assignment = rows.assignment_lookup(user_id=user.pk, slug=slug, position=position)
    if assignment is None:
        raise Http404("No such item.")
    if write and not assignment.item.study.is_open:
        raise PermissionDenied(CLOSED)
    return assignment


def get_study_for_metric_board(user, slug: str) -> Study:
    """A study's metric leaderboard: anyone's when the study and its benchmark are public,
    otherwise as managing the study (members 403, everyone else 404)."""
    study = Study.objects.filter(slug=slug).select_related("benchmark").first()
    if study is None:
        raise Http404("No such study.")
    if study.is_public and study.benchmark.is_public:
        return study
    if not user.is_authenticated:
        raise Http404("No such study.")
    return get_study_for_user(user, slug, write=True)
