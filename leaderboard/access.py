"""Object-level access to systems and submissions: every view and API endpoint goes through
these (annotation.md §Roles; house style: one helper per object type).

- A system is visible to everyone once it is a reference baseline or has a public submission;
  before that only to its owner and staff. A stranger gets 404 (its existence is not revealed).
- A submission (and its runs) is visible to everyone who can see its benchmark once published,
  and always to the system's owner and staff.
- Writes (edit, submit, publish) are for the owner and staff; anyone else who can see the
  object gets 403.
- Registering systems and uploading need the researcher role (staff hold every role).
"""

from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import Http404

from core.roles import RESEARCHER, STUDY_AUTHOR, has_role, role_needed, staff_only
from evaluation.access import arenas_for_user, benchmarks_for_user, get_benchmark_for_user
from evaluation.models import Arena, ArenaRequest, AutoEvaluation, Benchmark, Submission, System


def can_write_system(user, system: System) -> bool:
    return user.is_authenticated and (user.is_staff or system.owner_id == user.pk)


def systems_for_user(user) -> QuerySet[System]:
    if user.is_staff:
        return System.objects.all()
    public = Submission.objects.filter(system=OuterRef("pk"), is_public=True,
                                       benchmark__in=benchmarks_for_user(user))
    visible = Q(is_baseline=True) | Q(Exists(public))
    if user.is_authenticated:
        visible |= Q(owner=user)
    return System.objects.filter(visible)


def get_system_for_user(user, slug: str, *, write: bool = False) -> System:
    system = systems_for_user(user).filter(slug=slug).select_related("owner").first()
    if system is None:
        raise Http404("No such system.")
    if write and not can_write_system(user, system):
        raise PermissionDenied("Only the system's owner (or staff) can change it; register your "
                               "own system under Systems.")
    return system


def submissions_for_user(user) -> QuerySet[Submission]:
    submissions = Submission.objects.select_related("system", "benchmark")
    if user.is_staff:
        return submissions
    public = Q(is_public=True, benchmark__in=benchmarks_for_user(user))
    if user.is_authenticated:
        return submissions.filter(public | Q(system__owner=user))
    return submissions.filter(public)


def get_submission_for_user(user, uuid, *, write: bool = False) -> Submission:
    submission = submissions_for_user(user).filter(uuid=uuid).first()
    if submission is None:
        raise Http404("No such submission.")
    if write and not can_write_system(user, submission.system):
        raise PermissionDenied("Only the system's owner (or staff) can change its submissions.")
    return submission


def get_submission_to_evaluate(user, uuid) -> Submission:
    """A submission USER may start an LLM evaluator on: one they can see (404 otherwise), and
    they are staff, a study author, or a researcher who owns its system (403 otherwise): LLM
    calls spend the operator's money, within each account's budget (evaluation.services.
    spending)."""
    submission = get_submission_for_user(user, uuid)
    if not can_evaluate_submission(user, submission):
        raise PermissionDenied(role_needed(
            "Starting an LLM evaluator on another system's submission (it spends the "
            "operator's money)", STUDY_AUTHOR).removesuffix(".")
            + "; researchers may start one on their own systems' submissions.")
    return submission


def can_start_llm_runs(user) -> bool:
    return user.is_authenticated and (user.is_staff or has_role(user, STUDY_AUTHOR))


def can_evaluate_submission(user, submission: Submission) -> bool:
    """Staff and study authors on any submission they see; a researcher on their own."""
    return can_start_llm_runs(user) or (
        user.is_authenticated and has_role(user, RESEARCHER)
        and submission.system.owner_id == user.pk)


def get_benchmark_to_operate(user, slug: str) -> Benchmark:
    """A benchmark whose automatic LLM evaluators USER may configure: one they can see (404
    otherwise), and they are staff (403 otherwise): automatic runs spend the operator's money."""
    benchmark = get_benchmark_for_user(user, slug)
    if not user.is_staff:
        raise PermissionDenied(staff_only("configure a leaderboard's automatic LLM evaluators"))
    return benchmark


def get_auto_evaluation_to_decide(user, pk: int) -> AutoEvaluation:
    """A waiting automatic run staff may approve or reject (404 for anyone else: its
    submission may be private)."""
    evaluation = AutoEvaluation.objects.select_related("submission__system").filter(pk=pk).first()
    if evaluation is None or not user.is_staff:
        raise Http404("No such automatic run.")
    return evaluation


def require_researcher(user) -> None:
    """Registering a system or uploading needs the researcher role (403 otherwise)."""
    if not has_role(user, RESEARCHER):
        raise PermissionDenied(role_needed("Registering systems and submitting", RESEARCHER))


def get_arena_for_user(user, slug: str) -> Arena:
    arena = arenas_for_user(user).filter(slug=slug).select_related("benchmark").first()
    if arena is None:
        raise Http404("No such arena.")
    return arena


def require_arena_operator(user) -> None:
    """The arena requests page: staff only (403 otherwise)."""
    if not user.is_staff:
        raise PermissionDenied(staff_only("decide which systems join an arena") + " To add your "
                               "own live system, use the Arena section of its page.")


def get_arena_request_to_decide(user, pk: int) -> ArenaRequest:
    """A request staff may approve or reject (404 for anyone else: its system may be private)."""
    arena_request = ArenaRequest.objects.filter(pk=pk).first()
    if arena_request is None or not user.is_staff:
        raise Http404("No such arena request.")
    return arena_request
