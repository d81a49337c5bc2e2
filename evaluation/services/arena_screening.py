"""Which arena votes count (docs/arena.md, "Which votes count"; security issue 28.7, 28.10).

A battle stays blind only while neither answer names its system: `battle_identity_screen`
checks each answer as its row is settled (`evaluation.lib.arena_identity`) and marks the
battle `identity_leaked`, before the row stops being pending, so a vote, which waits for both
answers, always sees the mark. `vote_excluded_reason` decides, under the vote's lock, why the
ratings will leave the vote out: its battle leaked an identity, or the voter owns one of the
two systems (and could recognise its answers). The ratings then read the one stored column.
"""

from __future__ import annotations

from evaluation.lib.arena_identity import identity_leak
from evaluation.models import Battle, System, Vote


def battle_identity_screen(*, battle: Battle, system: System, text: str) -> bool:
    """Mark BATTLE `identity_leaked` when TEXT, SYSTEM's answer, names SYSTEM; whether it did."""
    if not identity_leak(text, names=(system.name, system.slug), family=system.family):
        return False
    Battle.objects.filter(pk=battle.pk, identity_leaked=False).update(identity_leaked=True)
    battle.identity_leaked = True
    return True


def vote_excluded_reason(*, battle: Battle, user=None) -> str:
    """Why BATTLE's vote, cast by USER (or by the battle's signed-in starter), is not counted:
    `identity_leaked`, `owner`, or "" (counted). Read under the battle's lock, after its answers
    settled, so the mark of the last answer is seen."""
    if Battle.objects.filter(pk=battle.pk, identity_leaked=True).exists():
        return Vote.Excluded.IDENTITY_LEAKED
    voters = {battle.user_id, user.pk if user is not None and user.is_authenticated else None}
    owners = {battle.system_a.owner_id, battle.system_b.owner_id}
    return Vote.Excluded.OWNER if (voters & owners) - {None} else Vote.Excluded.COUNTED
