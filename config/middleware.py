"""Site-wide answers to failures that any view can meet (docs/operations.md, "Failure modes")."""

from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string

from evaluation.services.jobs import QueueUnavailable


class QueueUnavailableMiddleware:
    """A view that had to queue a job while the Celery broker was down answers 503 with
    "evaluation queue unavailable, nothing was stored, try again": the service raised before
    its transaction committed, so nothing was stored. JSON under /api/, a page (or, for htmx,
    a fragment it swaps: see the htmx-config in base.html) elsewhere."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, QueueUnavailable):
            return None
        headers = {"Retry-After": "60"}
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": exception.message}, status=503, headers=headers)
        template = "_queue_unavailable.html" if request.headers.get("HX-Request") else \
            "queue_unavailable.html"
        return HttpResponse(render_to_string(template, {"message": exception.message},
                                             request=request), status=503, headers=headers)
