from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard: rankings of systems per benchmark"

    def ready(self):
        from django.db.models.signals import post_migrate

        from evaluation.signals import results_changed

        from . import tasks  # noqa: F401 - registers the app's Celery tasks (task_enqueue)
        from .services import intervals_recompute_enqueue, rank_refresh_enqueue

        results_changed.connect(rank_refresh_enqueue, dispatch_uid="leaderboard-rank-refresh")
        # After `migrate`: rows stored with an older interval method are recomputed in the
        # background (docs/statistics.md, "Stored intervals and their method").
        post_migrate.connect(intervals_recompute_enqueue, sender=self,
                             dispatch_uid="leaderboard-recompute-intervals")
