"""Researchers add their live systems to a benchmark's arena; staff approve or reject the
requests when the operator requires approval (docs/arena.md, "Adding your system").

- `POST /systems/<slug>/arena/`: the system's owner (or staff) asks to add it to a benchmark's
  arena; granted at once unless `CONCORD_ARENA_REQUIRE_APPROVAL` is on.
- `/arena-requests/`: staff see the waiting requests and decide them.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evaluation.access import get_benchmark_for_user
from evaluation.models import ArenaRequest
from evaluation.services.arena_requests import arena_request_create, arena_request_decide

from .access import get_arena_request_to_decide, get_system_for_user, require_arena_operator
from .selectors.arena_requests import arena_requests_page


@login_required
@require_POST
def system_arena_join(request, slug):
    system = get_system_for_user(request.user, slug, write=True)
    benchmark = get_benchmark_for_user(request.user, request.POST.get("benchmark", "")[:100])
    back = reverse("leaderboard:system_detail", args=[system.slug]) + "#arena"
    try:
        arena_request = arena_request_create(system=system, benchmark=benchmark,
                                             user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(back)
    if arena_request.status == ArenaRequest.Status.APPROVED:
        messages.success(request, f"{system.name} now battles in the arena of {benchmark.name}.")
    else:
        messages.success(request, f"Asked to add {system.name} to the arena of {benchmark.name}: "
                                  "an operator approves each new arena system, and this page "
                                  "shows their answer.")
    return redirect(back)


@login_required
@require_GET
def arena_requests(request):
    require_arena_operator(request.user)
    return render(request, "leaderboard/arena_requests.html", arena_requests_page())


@login_required
@require_POST
def arena_request_decision(request, pk, decision):
    arena_request = get_arena_request_to_decide(request.user, pk)
    try:
        decided = arena_request_decide(arena_request=arena_request, user=request.user,
                                       approve=decision == "approve",
                                       note=request.POST.get("note", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        verb = "joins" if decided.status == ArenaRequest.Status.APPROVED else "does not join"
        messages.success(request, f"{decided.system.name} {verb} the arena of "
                                  f"{decided.benchmark.name}.")
    return redirect("leaderboard:arena_requests")
