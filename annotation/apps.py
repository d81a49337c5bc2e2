from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation: studies, assignments, agreement"

    def ready(self):
        from evaluation.ports import (
            FaceStudyLabels,
            face_study_labels_register,
            human_core_ratings_register,
        )
        from evaluation.signals import results_changed

        from . import tasks  # noqa: F401 - registers the app's Celery tasks (task_enqueue)
        from .core_ratings import HUMAN_CORE_RATINGS
        from .face_labels import can_author, face_labels
        from .services.validation import validations_refresh_enqueue

        results_changed.connect(validations_refresh_enqueue,
                                dispatch_uid="annotation-validation-refresh")
        human_core_ratings_register(HUMAN_CORE_RATINGS)
        face_study_labels_register(FaceStudyLabels(labels=face_labels, can_author=can_author))
