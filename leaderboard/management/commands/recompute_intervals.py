"""Recompute every stored interval computed with an older method (docs/statistics.md, "Stored
intervals and their method"): run summaries, the trust column's metric–human correlations and
rank snapshots whose recorded method or version is not today's. `migrate` queues the same work
in the background; this runs it now, with a progress bar."""

from django.core.management.base import BaseCommand

from evaluation.cli import ProgressBars
from leaderboard.selectors.intervals import stale_intervals
from leaderboard.services import intervals_recompute


class Command(BaseCommand):
    help = "Recompute the intervals stored with an older statistical method."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true",
                            help="only say what would be recomputed")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, **options):
        stale = stale_intervals()
        self.stdout.write(
            f"computed with an older method: summaries of {len(stale.run_ids)} run(s), "
            f"metric-human correlations of {len(stale.study_ids)} study(ies), "
            f"{len(stale.snapshot_ids)} rank snapshot(s)")
        if options["dry_run"] or not stale.total:
            return
        bars = ProgressBars(self.stderr, enabled=not options["no_progress"])
        try:
            done = intervals_recompute(progress=bars)
        finally:
            bars.close()
        self.stdout.write(f"recomputed: {done['runs']} run(s), {done['studies']} study(ies), "
                          f"{done['rank_snapshots']} rank snapshot(s)")
