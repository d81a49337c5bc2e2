"""Writes for systems and submissions (formats.md §2). Keyword-only service functions.

`submission_create` validates the whole file first (line-numbered FormatError, nothing stored)
and only then stores the file under MEDIA_ROOT and its row. `submission_submit` is what the
browser and the API call: the same, under the account's daily quota, plus a queued evaluation run.
Uploads above CONCORD_INLINE_VALIDATION_BYTES reach it from a worker (`staged_uploads`).

The quota is enforced with a row lock: the owner's user row is locked (`SELECT … FOR UPDATE`)
for the rest of the transaction that counts today's submissions and inserts the new one, so
concurrent uploads of one account queue on that lock and exactly `quota` of them get in. On
SQLite the lock is a no-op, but its write transactions are serialised (IMMEDIATE mode) anyway.
"""

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID, uuid4

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.files import File
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from evaluation.lib.formats.errors import FormatError, FormatIssue
from evaluation.lib.formats.submission import (
    DEFAULT_NAME,
    TURN,
    SubmissionSummary,
    open_source,
    validate_submission,
)
from evaluation.lib.metrics.suite import CLOSED
from evaluation.lib.progress import Progress
from evaluation.models import Benchmark, Job, Run, Simulation, Submission, System
from evaluation.selectors.benchmarks import (
    benchmark_submission_reference,
    scored_splits,
    submission_hidden_lines,
)
from evaluation.services.auto_evaluation import auto_evaluations_start
from evaluation.services.runs import run_create
from evaluation.signals import results_changed_notify

SYSTEM_FIELDS = ("name", "description", "paper_url", "code_url", "team", "family")


class QuotaExceeded(Exception):
    """The account (or the system) already has its quota of submissions today (UTC)."""

    def __init__(self, *, quota: int, resets_at: datetime, account: bool = False):
        self.quota, self.resets_at = quota, resets_at
        who = "Your account" if account else "This system"
        scope = ", and every system of the account counts" if account else ""
        super().__init__(
            f"{who} has used its {quota} submission{'s' if quota != 1 else ''} for today "
            f"(failed runs count too{scope}). The quota resets at "
            f"{resets_at:%Y-%m-%d %H:%M} UTC.")


# --- systems ----------------------------------------------------------------------


def _unique_slug(name: str, prefix: str = "") -> str:
    base = (prefix + slugify(name))[:90] or "system"
    slug, n = base, 1
    while System.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def system_create(*, name: str, owner=None, description: str = "", family: str = "",
                  team: str = "", paper_url: str = "", code_url: str = "",
                  is_baseline: bool = False) -> System:
    """A new system with a unique slug derived from its name."""
    return System.objects.create(
        slug=_unique_slug(name), name=name, owner=owner, description=description, family=family,
        team=team, paper_url=paper_url, code_url=code_url, is_baseline=is_baseline,
    )


def system_update(*, system: System, **fields) -> System:
    """Change a system's public description (its slug, owner and baseline flag stay)."""
    unknown = set(fields) - set(SYSTEM_FIELDS)
    if unknown:
        raise ValueError(f"cannot change {', '.join(sorted(unknown))} of a system")
    for name, value in fields.items():
        setattr(system, name, value)
    system.full_clean(exclude=["slug", "owner"])
    system.save(update_fields=list(fields))
    return system


def system_get_or_create_baseline(*, key: str, name: str, family: str,
                                  description: str) -> System:
    """The system of one of Concord's reference baselines (slug `baseline-<key>`, no owner)."""
    system, _ = System.objects.update_or_create(
        slug=f"baseline-{slugify(key)}",
        defaults={"name": name, "family": family, "description": description,
                  "is_baseline": True},
    )
    return system


# --- quota ----------------------------------------------------------------------------------
#
# The quota belongs to the researcher's account and counts the submissions of every system it
# owns: a per-system quota let one researcher multiply it by creating systems (issue 18). A
# system's own `daily_quota` (set by staff) may lower it further for that system.


def system_daily_quota(system: System) -> int:
    """The binding daily quota for SYSTEM's next upload (see `submission_allowance`)."""
    return submission_allowance(system)[0]


def submissions_today(system: System) -> int:
    """Today's submissions counted against that quota."""
    return submission_allowance(system)[1]


def submission_allowance(system: System) -> tuple[int, int, bool]:
    """(quota, used today, whether it is the account's) for SYSTEM's next upload: of the
    account's and the system's own quota, the one with the fewest uploads left."""
    start, _ = today_bounds()
    # a simulation's log submission is no upload: simulations have an allowance of their own
    today = Submission.objects.filter(created_at__gte=start).exclude(
        pk__in=Simulation.objects.exclude(submission=None).values("submission_id"))
    options = []
    if system.owner_id is not None:
        options.append((settings.DAILY_SUBMISSION_QUOTA,
                        today.filter(system__owner_id=system.owner_id).count(), True))
    if system.daily_quota is not None or system.owner_id is None:
        quota = system.daily_quota if system.daily_quota is not None else (
            settings.DAILY_SUBMISSION_QUOTA)
        options.append((quota, today.filter(system=system).count(), False))
    return min(options, key=lambda option: option[0] - option[1])


def today_bounds(now: datetime | None = None) -> tuple[datetime, datetime]:
    now = (now or timezone.now()).astimezone(UTC)
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def submission_quota_check(system: System) -> None:
    """Raise QuotaExceeded when SYSTEM's next upload would be over its quota (a check that
    fails fast; `_quota_reserve` is the one that counts, under its lock)."""
    quota, used, account = submission_allowance(system)
    if used >= quota:
        raise QuotaExceeded(quota=quota, resets_at=today_bounds()[1], account=account)


def _quota_reserve(system: System) -> None:
    """Lock the owner's row (the system's for an ownerless one) for this transaction, then
    check today's count (never the other way round: a count taken before the lock could be
    stale by the time we insert). Uploads of one account, to any of its systems, queue here."""
    if system.owner_id is not None:
        get_user_model().objects.select_for_update().filter(pk=system.owner_id) \
            .values_list("pk").get()
    else:
        System.objects.select_for_update().filter(pk=system.pk).values_list("pk").get()
    submission_quota_check(system)


# --- submissions ----------------------------------------------------------------------------


def submission_validate(*, benchmark: Benchmark, path_or_file, protocol: str = TURN,
                        splits: Sequence[str] | None = None, pool_mode: str = CLOSED,
                        progress: Progress | None = None) -> SubmissionSummary:
    """Check a submission file against the benchmark (raises FormatError listing every
    problem; writes nothing). The one validation every upload gets, in the web request or in
    a worker (`staged_uploads`); PROGRESS hears how much of the file was read."""
    reference = benchmark_submission_reference(benchmark=benchmark, pool_mode=pool_mode)
    return validate_submission(path_or_file, protocol=protocol, reference=reference,
                               splits=splits, max_bytes=settings.MAX_UPLOAD_BYTES,
                               progress=progress)


def submission_create(*, system: System, benchmark: Benchmark, path_or_file, user,
                      protocol: str = TURN, splits: Sequence[str] | None = None,
                      pool_mode: str = CLOSED, note: str = "",
                      check_quota: bool = False) -> Submission:
    """Validate a submission file against the benchmark, then store the file and its row.

    `path_or_file` is a path or an open binary file (an upload). Raises FormatError listing
    every problem when the file is invalid; then nothing is stored. For protocol `turn`, every
    answered turn of `splits` (default: the splits the file answers) must be present. With
    `check_quota`, raises QuotaExceeded (nothing stored) when the account or system has used
    its quota today.
    Submissions of reference baselines are public from the start; all others are private
    until their owner publishes them.
    """
    summary = submission_validate(benchmark=benchmark, path_or_file=path_or_file,
                                  protocol=protocol, splits=splits, pool_mode=pool_mode)
    return _submission_store(system=system, benchmark=benchmark, path_or_file=path_or_file,
                             user=user, summary=summary, note=note, check_quota=check_quota)


def _submission_store(*, system: System, benchmark: Benchmark, path_or_file, user,
                      summary: SubmissionSummary, note: str, check_quota: bool,
                      uuid: UUID | None = None) -> Submission:
    """Store a validated file and its row (`submission_create`'s second half)."""
    if check_quota:
        submission_quota_check(system)  # fail fast, before the file is copied
    submission = Submission(uuid=uuid or uuid4(), system=system, benchmark=benchmark,
                            protocol=summary.protocol, line_count=summary.line_count, note=note,
                            created_by=user, is_public=system.is_baseline)
    with open_source(path_or_file, name="submission.jsonl",
                     max_bytes=settings.MAX_UPLOAD_BYTES) as (stream, _):
        # The storage names the file after the submission's uuid (submission_upload_path).
        submission.file.save("submission.jsonl", File(stream), save=False)
    try:
        with transaction.atomic():
            if check_quota:
                _quota_reserve(system)
            submission.save()
    except BaseException:
        submission.file.delete(save=False)
        raise
    return submission


def submission_submit_check(*, system: System, benchmark: Benchmark, user,
                            protocol: str = TURN) -> None:
    """What an upload is refused for before its file is read: not the system's owner
    (PermissionDenied), a protocol the benchmark does not take (ValueError)."""
    if not (user.is_staff or system.owner_id == user.pk):
        raise PermissionDenied("Only the system's owner (or staff) can submit for it; register "
                               "your own system to submit.")
    if protocol not in (benchmark.protocols or [TURN]):
        raise ValueError(f"{benchmark.name} takes {' and '.join(benchmark.protocols or [TURN])} "
                         f"submissions, not `{protocol}` ones")


def submission_submit(*, system: System, benchmark: Benchmark, file, user,
                      note: str = "", protocol: str = TURN, progress: Progress | None = None,
                      uuid: UUID | None = None) -> tuple[Submission, Run | None]:
    """An upload from the browser or the API: validate, count against today's quota, store,
    and queue the evaluation run (its task starts when the transaction commits).

    A `turn` file gets a Trace run; a `log` file has no automatic metric of its own (`run` is
    None). Both get the LLM evaluators the benchmark's operator runs on new uploads of their
    protocol (`auto_evaluations_start`), count against the same quota, and neither may be
    scored on the hidden split before its release (`_refuse_hidden`).

    The file is validated before the transaction opens (a large one takes seconds: no row
    lock or transaction is held meanwhile, and a worker's PROGRESS is visible as it goes).
    A large upload comes here from a worker (`staged_uploads`), with the UUID its staging
    chose, so a redelivered job finds the submission it already made."""

    submission_submit_check(system=system, benchmark=benchmark, user=user, protocol=protocol)
    name = Path(str(getattr(file, "name", "") or DEFAULT_NAME[protocol])).name
    summary = submission_validate(benchmark=benchmark, path_or_file=file, protocol=protocol,
                                  progress=progress)
    with transaction.atomic():
        submission = _submission_store(system=system, benchmark=benchmark, path_or_file=file,
                                       user=user, summary=summary, note=note, check_quota=True,
                                       uuid=uuid)
        try:
            _refuse_hidden(submission, name)
            run = run_create(submission=submission, user=user) if protocol == TURN else None
            auto_evaluations_start(submission=submission)
        except BaseException:
            submission.file.delete(save=False)  # the row itself is rolled back
            raise
    return submission, run


def _refuse_hidden(submission: Submission, name: str) -> None:
    """Before the hidden scores are released, a `turn` file must answer a public split too
    (its hidden part is scored at the release), and a `log` file may not hold logs of hidden
    dialogues at all: an LLM evaluator scores every log it is given, so their scores would be
    shown before the release (issue 18)."""
    if submission.benchmark.hidden_released_at is not None:
        return
    if submission.protocol == TURN:
        if not scored_splits(submission=submission):
            raise FormatError([FormatIssue(
                name, None, "$", "the file answers only hidden dialogues, which are scored when "
                "the benchmark's owner releases the hidden scores; answer a public split too")])
        return
    hidden = submission_hidden_lines(submission=submission)
    if hidden:
        raise FormatError([FormatIssue(
            name, line, "$.dialogue_id", f"dialogue {dialogue_id!r} is a hidden dialogue; logs "
            "of hidden dialogues are accepted once the benchmark's owner releases the hidden "
            "scores") for line, dialogue_id in hidden])


def submission_set_public(*, submission: Submission, user, public: bool) -> Submission:
    """Publish (or withdraw) a submission: its runs appear on public leaderboards.

    Only the system's owner (or staff) may; a submission is published only once one of its
    runs has succeeded, so a public leaderboard never links to a failed or running run.
    """
    if not (user.is_staff or submission.system.owner_id == user.pk):
        raise PermissionDenied("Only the system's owner (or staff) can publish its submissions.")
    if public and not submission.runs.filter(job__status=Job.Status.SUCCEEDED).exists():
        raise ValueError("Only a submission with a finished, successful run can be published.")
    Submission.objects.filter(pk=submission.pk).update(is_public=public)
    submission.is_public = public
    results_changed_notify(benchmark_id=submission.benchmark_id, protocol=submission.protocol)
    return submission


