from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation: studies, assignments, agreement"

    def ready(self):
        from evaluation.ports import human_core_ratings_register

        from . import tasks  # noqa: F401 - registers the app's Celery tasks (task_enqueue)
        from .core_ratings import HUMAN_CORE_RATINGS

        human_core_ratings_register(HUMAN_CORE_RATINGS)
