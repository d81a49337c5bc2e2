"""python manage.py arena_ratings ARENA [--method elo|bt] [--dataset D] [--scenario S] [--json]"""

import json

from django.core.management.base import BaseCommand, CommandError

from evaluation.lib.arena_signals import RATE_METHOD
from evaluation.lib.stats.arena import METHODS, STABILITY_THRESHOLD, TOP_K
from evaluation.lib.stats.bootstrap import DEFAULT_RESAMPLES
from evaluation.models import Arena
from leaderboard.selectors.arenas import METHOD_LABELS, arena_board, arena_board_payload


class Command(BaseCommand):
    help = ("An arena's ratings (online Elo as CRS Arena, or Bradley–Terry as Chatbot Arena) "
            "with 95% bootstrap CIs and rank intervals, satisfaction and acceptance rates, "
            "style-controlled ratings, vote quality and ranking stability. --json prints what "
            "GET /api/arenas/<slug>/ratings/ answers.")

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
            self.stdout.write(_dumps(arena_board_payload(board)))
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
        self._crs(board)

    def _crs(self, board):
        """Satisfaction and acceptance (Wilson 95%), style control, stability, vote quality."""
        table, crs = board.table, board.crs
        if table.top_k_stable_share is not None:
            self.stdout.write(f"Top {TOP_K} order stable in {table.top_k_stable_share:.0%} of "
                              f"the bootstrap replicates: "
                              f"{'stable' if table.top_k_stable else 'not yet stable'} "
                              f"(threshold {STABILITY_THRESHOLD:.0%})")
        self.stdout.write(f"Per system ({RATE_METHOD}):")
        for row in board.rows:
            self.stdout.write(f"  {row['system']}: satisfied {_rate(row, 'satisfaction')}; "
                              f"accepted an item {_rate(row, 'acceptance')}")
        style = crs.style
        if style.undefined_reason:
            self.stdout.write(f"Style control: undefined ({style.undefined_reason})")
        else:
            self.stdout.write(f"Style control, {style.method_label}, {style.n_votes} votes:")
            for c in style.coefficients:
                self.stdout.write(f"  {c.label}: " + (
                    c.note if c.coefficient is None else
                    f"{c.coefficient:+.3f} [{c.ci_low:+.3f}, {c.ci_high:+.3f}]"))
            for row in board.rows:
                if row["style_rating"] is not None:
                    self.stdout.write(f"  #{row['style_rank']} {row['style_rating']:.1f}  "
                                      f"{row['system']}")
        flagged = ", ".join(f"{n} {name}" for name, n in crs.flag_counts.items())
        self.stdout.write(f"Vote quality: flagged {flagged}; {crs.unflagged_votes} votes kept "
                          "without flagged votes")


def _rate(row, name) -> str:
    if not row[f"{name}_n"]:
        return "—"
    return (f"{row[f'{name}_rate']:.0%} [{row[f'{name}_ci_low']:.0%}, "
            f"{row[f'{name}_ci_high']:.0%}] of {row[f'{name}_n']}")


def _dumps(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
