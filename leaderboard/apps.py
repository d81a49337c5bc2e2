from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard: rankings of systems per benchmark"

    def ready(self):
        from evaluation.signals import results_changed

        from .services import rank_refresh_enqueue

        results_changed.connect(rank_refresh_enqueue, dispatch_uid="leaderboard-rank-refresh")
