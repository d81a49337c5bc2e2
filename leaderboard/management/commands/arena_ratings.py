"""python manage.py arena_ratings ARENA [--method elo|bt] [--dataset D] [--scenario S] [--json]"""

import json

from django.core.management.base import BaseCommand, CommandError

from evaluation.lib.stats.arena import METHODS
from evaluation.lib.stats.bootstrap import DEFAULT_RESAMPLES
from evaluation.models import Arena
from leaderboard.selectors.arenas import METHOD_LABELS, arena_board


class Command(BaseCommand):
    help = ("An arena's ratings (online Elo as CRS Arena, or Bradley–Terry as Chatbot Arena) "
            "with 95% bootstrap CIs and rank intervals. --json prints {system: {rating, "
            "ci_low, ci_high}}.")

    def add_arguments(self, parser):
        parser.add_argument("arena", help="the arena's slug")
        parser.add_argument("--method", choices=METHODS, default="elo")
        parser.add_argument("--dataset", default="", help="only battles on this data set")
        parser.add_argument("--scenario", default="", help="only battles on this dialogue")
        parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
        parser.add_argument("--json", action="store_true")

    def handle(self, arena, method, dataset, scenario, resamples, json=False, **options):
        found = Arena.objects.filter(slug=arena).first()
        if found is None:
            known = ", ".join(Arena.objects.order_by("slug").values_list("slug", flat=True))
            raise CommandError(f"no arena {arena!r} (arenas: {known or 'none'})")
        if resamples < 1:
            raise CommandError("--resamples must be at least 1")
        board = arena_board(found, method=method, dataset=dataset, scenario=scenario,
                            n_resamples=resamples)
        if json:
            self.stdout.write(_dumps({row["system"]: {"rating": row["rating"],
                                                      "ci_low": row["ci_low"],
                                                      "ci_high": row["ci_high"]}
                                      for row in board.rows}))
            return
        table = board.table
        self.stdout.write(f"{found.name}: {METHOD_LABELS[method]}, {table.n_votes} votes, "
                          f"95% bootstrap CIs ({table.valid_resamples} of {resamples} "
                          "resamples usable)")
        if board.excluded_notes:
            self.stdout.write("Not counted: " + "; ".join(
                f"{n} {note}" for n, note in board.excluded_notes))
        if table.undefined_reason:
            self.stdout.write(f"Ratings undefined: {table.undefined_reason}")
        if table.ci_note:
            self.stdout.write(f"No intervals: {table.ci_note}")
        for row in board.rows:
            if row["rating"] is None:
                self.stdout.write(f"   -  {row['system']}  ({row['votes']} votes)")
                continue
            ci = (f"[{row['ci_low']:.1f}, {row['ci_high']:.1f}]"
                  if row["ci_low"] is not None else "")
            self.stdout.write(f"{row['rank']:>4}  ({row['rank_low']}–{row['rank_high']})  "
                              f"{row['rating']:8.1f}  {ci:>18}  {row['system']}  "
                              f"({row['votes']} votes: {row['wins']} W / {row['losses']} L / "
                              f"{row['ties']} T)")


def _dumps(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
