"""Researchers' requests to add their live systems to arenas, as the system page and the staff
page show them (docs/arena.md, "Adding your system"). Reads only."""

from django.conf import settings

from evaluation.access import benchmarks_for_user
from evaluation.models import Arena, ArenaRequest, System

RECENT = 20


def system_arena_panel(*, system: System, user) -> dict:
    """The arenas SYSTEM battles in, its requests (latest first), and the benchmarks USER may
    still ask to add it to (visible to USER, not already its arena's, nothing waiting)."""
    arenas = list(Arena.objects.filter(systems=system).select_related("benchmark")
                  .order_by("name"))
    requests = list(ArenaRequest.objects.filter(system=system).select_related("benchmark")
                    .order_by("-created_at", "-pk")[:RECENT])
    joined = {a.benchmark_id for a in arenas if a.benchmark_id and a.slug == a.benchmark.slug}
    waiting = {r.benchmark_id for r in requests if r.status == ArenaRequest.Status.PENDING}
    choices = [b for b in benchmarks_for_user(user).order_by("name")
               if b.pk not in joined and b.pk not in waiting]
    return {"arenas": arenas, "requests": requests, "choices": choices,
            "approval": settings.ARENA_REQUIRE_APPROVAL}


def arena_requests_page() -> dict:
    """Staff: every waiting request (oldest first) and the latest decided ones."""
    related = ("system__owner", "benchmark", "requested_by", "decided_by")
    waiting = (ArenaRequest.objects.filter(status=ArenaRequest.Status.PENDING)
               .select_related(*related).order_by("created_at", "pk"))
    decided = (ArenaRequest.objects.exclude(status=ArenaRequest.Status.PENDING)
               .select_related(*related).order_by("-decided_at", "-pk")[:RECENT])
    return {"waiting": list(waiting), "decided": list(decided),
            "approval": settings.ARENA_REQUIRE_APPROVAL}


def arena_requests_waiting_count() -> int:
    return ArenaRequest.objects.filter(status=ArenaRequest.Status.PENDING).count()
