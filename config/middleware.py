"""Site-wide answers to failures that any view can meet (docs/operations.md, "Failure modes")."""

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string

from evaluation.services.jobs import QueueUnavailable

# What a request may add around the largest file: the multipart boundaries and headers, the
# other form fields (a note, the CSRF token).
UPLOAD_OVERHEAD_BYTES = 1024 * 1024


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.1f} MB"  # as the upload form's own check says it (concord.js)


def _failure(request, *, status: int, message: str, template: str, title: str,
             headers: dict | None = None) -> HttpResponse:
    """MESSAGE as JSON under /api/, as a fragment for htmx (base.html's htmx-config swaps it
    in), as a page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=status, headers=headers)
    fragment = render_to_string(f"_{template}.html", {"message": message}, request=request)
    if request.headers.get("HX-Request"):
        return HttpResponse(fragment, status=status, headers=headers)
    return HttpResponse(render_to_string("failure.html", {"title": title, "fragment": fragment},
                                         request=request), status=status, headers=headers)


class OversizedUploadMiddleware:
    """A request whose declared body is larger than the largest upload Concord accepts
    (CONCORD_MAX_UPLOAD_BYTES, plus the form around the file) is answered 413 from its
    Content-Length alone, before anything reads the body (it sits above the CSRF check, which
    would read the form): a 300 MB upload costs the site no spooling, no parsing and no web
    worker time. Uploads within the limit are checked line by line as they are read."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > settings.MAX_UPLOAD_BYTES + UPLOAD_OVERHEAD_BYTES:
            response = _failure(
                request, status=413, template="upload_too_large", title="File too large",
                message=f"The upload is {_megabytes(declared)}; the limit is "
                        f"{_megabytes(settings.MAX_UPLOAD_BYTES)} per file. It was refused "
                        "before it was read, and nothing was stored.")
            # answered above CommonMiddleware, which would set it: a client still sending its
            # body knows where the answer ends
            response["Content-Length"] = str(len(response.content))
            return response
        return self.get_response(request)


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
        return _failure(request, status=503, template="queue_unavailable",
                        title="Evaluation queue unavailable", message=exception.message,
                        headers={"Retry-After": "60"})
