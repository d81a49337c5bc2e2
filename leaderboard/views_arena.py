"""The arena's pages (docs/arena.md): start a blind battle, talk to System A and System B, vote.

Nothing a page, fragment, header or URL of a battle carries says which system is which before
the vote: battles are addressed by a random UUID, replies by message number and side, errors by
their kind only. Rate limits (core.throttle) count per browser session, per account when logged
in, and per client address (core.throttle.client_address).
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core.throttle import address_hash, rate_limit_take
from evaluation.access import get_battle_for_request, get_benchmark_for_user
from evaluation.models import BattleTurn
from evaluation.selectors.arena import (
    SIDES,
    arena_of_benchmark,
    battle_turns,
    battle_view,
    battles_of_session,
    reply_view,
)
from evaluation.services.arena import (
    arena_live_systems,
    battle_abandon,
    battle_replies_start,
    battle_retry,
    battle_say,
    battle_start,
    battle_vote,
)

WINDOW = 3600


def _throttled(request, scope: str, per_session: int, per_address: int,
               user_id: int | None) -> int:
    """Seconds to wait when the session, the account USER_ID (logged in: the session's limit,
    however many browsers it uses) or the client address is over SCOPE's hourly limit (a
    request one limit refuses does not count against the next)."""
    counters = [("session", request.session.session_key or "", per_session)]
    if user_id is not None:
        counters.append(("user", str(user_id), per_session))
    counters.append(("address", address_hash(request), per_address))
    for kind, ident, limit in counters:
        wait = rate_limit_take(f"arena-{scope}-{kind}", ident, limit=limit, window=WINDOW)
        if wait:
            return wait
    return 0


def _too_many(request, wait: int, template: str, context: dict) -> HttpResponse:
    minutes = -(-wait // 60)
    context["error"] = (f"Too many requests from this browser, account or address. Try again in "
                        f"{minutes} minute{'s' if minutes != 1 else ''}.")
    return render(request, template, context, status=429)


@require_GET
def arena_home(request, benchmark):
    benchmark = get_benchmark_for_user(request.user, benchmark)
    arena = arena_of_benchmark(benchmark)
    systems = arena_live_systems(arena) if arena else []
    battles = (list(battles_of_session(
        arena=arena, session_key=request.session.session_key, user=request.user,
        uuids=request.session.get("arena_battles", ()))[:20]) if arena else [])
    return render(request, "leaderboard/arena_home.html", {
        "benchmark": benchmark, "arena": arena, "system_count": len(systems),
        "battles": battles})


@require_POST
def arena_battle_start(request, benchmark):
    benchmark = get_benchmark_for_user(request.user, benchmark)
    arena = arena_of_benchmark(benchmark)
    context = {"benchmark": benchmark, "arena": arena, "battles": [],
               "system_count": len(arena_live_systems(arena)) if arena else 0}
    if arena is None:
        context["error"] = "No arena is open on this benchmark."
        return render(request, "leaderboard/arena_home.html", context, status=404)
    if not request.session.session_key:
        request.session["arena"] = True
        request.session.save()
    wait = _throttled(request, "battle", settings.ARENA_BATTLES_PER_HOUR_SESSION,
                      settings.ARENA_BATTLES_PER_HOUR_ADDRESS,
                      request.user.pk if request.user.is_authenticated else None)
    if wait:
        return _too_many(request, wait, "leaderboard/arena_home.html", context)
    try:
        battle = battle_start(arena=arena, session_key=request.session.session_key,
                              user=request.user, address_hash=address_hash(request),
                              own_request=request.POST.get("scenario") == "own")
    except ValidationError as error:
        context["error"] = " ".join(error.messages)
        return render(request, "leaderboard/arena_home.html", context, status=400)
    request.session["arena_battles"] = [*request.session.get("arena_battles", [])[-49:],
                                        str(battle.uuid)]
    return redirect("leaderboard:arena_battle", uuid=battle.uuid)


@require_GET
def arena_battle(request, uuid):
    battle = get_battle_for_request(request, uuid)
    return render(request, "leaderboard/arena_battle.html",
                  {"view": battle_view(battle=battle, fresh=True)})


def _body(request, battle, status=200, error=""):
    return render(request, "leaderboard/_arena_body.html",
                  {"view": battle_view(battle=battle), "error": error}, status=status)


@require_POST
def arena_battle_say(request, uuid):
    return _message(request, uuid, lambda battle: (
        battle_say(battle=battle, text=request.POST.get("message", "")), SIDES))


@require_POST
def arena_battle_retry(request, uuid):
    """Ask the systems that failed to answer the last message again (the same message)."""
    return _message(request, uuid, lambda battle: battle_retry(battle=battle))


def _message(request, uuid, send):
    """A message to the battle's systems, new or the last one again: throttled as a message,
    SEND(battle) -> (index, sides) writes it under the battle's lock, then the calls start."""
    battle = get_battle_for_request(request, uuid)
    # the battle's account, not request.user: reading that would load the session (a query)
    wait = _throttled(request, "message", settings.ARENA_MESSAGES_PER_HOUR_SESSION,
                      settings.ARENA_MESSAGES_PER_HOUR_ADDRESS, battle.user_id)
    if wait:
        return _too_many(request, wait, "leaderboard/_arena_body.html",
                         {"view": battle_view(battle=battle)})
    try:
        index, sides = send(battle)
    except ValidationError as error:
        return _body(request, battle, status=400, error=" ".join(error.messages))
    turns = battle_turns(battle)  # with the message's rows: the calls' and the page's
    battle_replies_start(battle=battle, index=index, turns=turns, sides=sides)
    if not request.headers.get("HX-Request"):
        return redirect("leaderboard:arena_battle", uuid=battle.uuid)
    # SEND found the battle open under its lock: the row read above is still true
    return render(request, "leaderboard/_arena_body.html",
                  {"view": battle_view(battle=battle, fresh=True, turns=turns)})


@require_GET
def arena_battle_reply(request, uuid, index, side):
    battle = get_battle_for_request(request, uuid)
    if side not in (BattleTurn.Side.A, BattleTurn.Side.B):
        return HttpResponse("No such side.", status=404, content_type="text/plain")
    reply, view = reply_view(battle=battle, index=index, side=side)
    if reply is None:
        return HttpResponse("No such reply.", status=404, content_type="text/plain")
    context = {"reply": reply, "view": view, "battle": battle}
    return render(request, "leaderboard/_arena_reply.html", context)


@require_POST
def arena_battle_vote(request, uuid):
    battle = get_battle_for_request(request, uuid)
    try:
        battle_vote(battle=battle, outcome=request.POST.get("outcome", ""),
                    reason=request.POST.get("reason", ""),
                    voter_ref=f"user:{request.user.pk}" if request.user.is_authenticated
                    else "", user=request.user,
                    satisfaction={side: request.POST.get(f"satisfaction_{side}", "")
                                  for side in SIDES},
                    accepted={side: request.POST.get(f"accepted_{side}", "")[:200]
                              for side in SIDES})
    except ValidationError as error:
        status = 409 if battle.status != "open" or "already" in " ".join(error.messages) else 400
        return render(request, "leaderboard/arena_battle.html",
                      {"view": battle_view(battle=battle), "error": " ".join(error.messages)},
                      status=status)
    return redirect(reverse("leaderboard:arena_battle", kwargs={"uuid": battle.uuid}) + "#reveal")


@require_POST
def arena_battle_abandon(request, uuid):
    battle = get_battle_for_request(request, uuid)
    try:
        battle_abandon(battle=battle)
    except ValidationError as error:
        return render(request, "leaderboard/arena_battle.html",
                      {"view": battle_view(battle=battle), "error": " ".join(error.messages)},
                      status=409)
    return redirect("leaderboard:arena_home", benchmark=battle.arena.benchmark.slug)
