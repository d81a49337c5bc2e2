from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation: benchmarks, systems, submissions, runs"

    def ready(self):
        # Register the app's Celery tasks: services enqueue them by name (task_enqueue).
        from . import tasks  # noqa: F401
