"""Researchers add their own live systems to a benchmark's arena (docs/arena.md, "Adding your
system").

`arena_request_create` records the request; with `CONCORD_ARENA_REQUIRE_APPROVAL` off it is
granted in the same transaction (the system joins the arena through `arena_open`, as the
`arena_open` command adds systems), with it on it waits for staff, who approve or reject it
(`arena_request_decide`). A request that cannot be granted (not a live system, a credential the
operator does not offer, already in the arena, already waiting) is refused with a message that
says why, and nothing is stored.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from evaluation.models import ArenaRequest, Benchmark, System
from evaluation.selectors.arena import arena_of_benchmark
from evaluation.services.arena import arena_open
from evaluation.services.credentials import credential_problem

MAX_NOTE_CHARS = 500


def _check_joinable(*, system: System, benchmark: Benchmark) -> None:
    if not system.is_live:
        raise ValidationError(
            f"{system.name} is not a live system: battles call a system as people talk to it. "
            "Give it an endpoint first (its Simulate users page).")
    if system.live_kind == "http":
        problem = credential_problem(system.live_credential, owner=system.owner)
        if problem:
            raise ValidationError(f"{system.name}'s endpoint is not called: {problem}.")
    arena = arena_of_benchmark(benchmark)
    if arena is not None and arena.systems.filter(pk=system.pk).exists():
        raise ValidationError(f"{system.name} already battles in {arena.name}.")


def arena_request_create(*, system: System, benchmark: Benchmark, user) -> ArenaRequest:
    """USER (the system's owner or staff; the caller checked) asks for SYSTEM to battle in
    BENCHMARK's arena: granted at once, or waiting for staff when the operator requires it."""
    _check_joinable(system=system, benchmark=benchmark)
    approve_now = not settings.ARENA_REQUIRE_APPROVAL
    try:
        with transaction.atomic():
            request = ArenaRequest.objects.create(
                benchmark=benchmark, system=system, requested_by=user,
                status=ArenaRequest.Status.APPROVED if approve_now
                else ArenaRequest.Status.PENDING,
                decided_at=timezone.now() if approve_now else None)
            if approve_now:
                arena_open(benchmark=benchmark, systems=[system])
    except IntegrityError:  # the partial unique index: one waiting request per pair
        raise ValidationError(f"{system.name} is already waiting for an operator to add it to "
                              f"the arena of {benchmark.name}.") from None
    return request


def arena_request_decide(*, arena_request: ArenaRequest, user, approve: bool,
                         note: str = "") -> ArenaRequest:
    """Staff (the caller checked) approve a waiting request (the system joins the arena) or
    reject it with NOTE, which the researcher reads on their system's page."""
    note = note.strip()
    if len(note) > MAX_NOTE_CHARS:
        raise ValidationError(f"a note has at most {MAX_NOTE_CHARS} characters")
    with transaction.atomic():
        locked = (ArenaRequest.objects.select_for_update(of=("self",))
                  .select_related("system__owner", "benchmark").get(pk=arena_request.pk))
        if locked.status != ArenaRequest.Status.PENDING:
            raise ValidationError(f"this request was already {locked.get_status_display()}")
        if approve:
            _check_joinable(system=locked.system, benchmark=locked.benchmark)
            arena_open(benchmark=locked.benchmark, systems=[locked.system])
        locked.status = (ArenaRequest.Status.APPROVED if approve
                         else ArenaRequest.Status.REJECTED)
        locked.decided_by, locked.decided_at, locked.note = user, timezone.now(), note
        locked.save(update_fields=["status", "decided_by", "decided_at", "note"])
    return locked
