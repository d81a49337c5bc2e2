from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard: rankings of systems per benchmark"

    def ready(self):
        from evaluation.signals import results_changed

        from . import tasks  # noqa: F401 - registers the app's Celery tasks (task_enqueue)
        from .services import rank_refresh_enqueue

        results_changed.connect(rank_refresh_enqueue, dispatch_uid="leaderboard-rank-refresh")
