"""Site-wide answers to failures that any view can meet (docs/operations.md, "Failure modes")."""

from urllib.parse import unquote_to_bytes

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


MALFORMED_URL_MESSAGE = "Bad request: the URL holds a NUL byte or bytes that are not UTF-8."


def _raw(meta, key: str) -> bytes:
    """META[KEY] as the bytes the client sent: a WSGI server passes them as latin-1 text; an
    ASGI server's path is already decoded text, encoded back here as UTF-8."""
    value = meta.get(key, "")
    try:
        return value.encode("iso-8859-1")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


def _url_is_malformed(meta) -> bool:
    """Whether the path or the decoded query string holds a NUL byte or invalid UTF-8.

    Django has already decoded the path and written its bytes that are not UTF-8 back as `%XX`
    (request.META["PATH_INFO"]), so the path's escapes are decoded here once more: a path that
    spells such bytes or NUL as a literal `%25XX` is refused too."""
    path = unquote_to_bytes(_raw(meta, "PATH_INFO"))
    for raw in (path, unquote_to_bytes(_raw(meta, "QUERY_STRING"))):
        if b"\0" in raw:
            return True
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return True
    return False


class MalformedUrlMiddleware:
    """A URL whose path or query string holds a NUL byte (`%00`) or bytes that are not UTF-8
    (`%ff`) is answered 400 with one plain sentence (JSON under /api/), before anything reads
    it: no view, form or query has to expect them (PostgreSQL refuses NUL in text, which would
    otherwise be a 500 wherever a URL's text reaches a query)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not _url_is_malformed(request.META):
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": MALFORMED_URL_MESSAGE}, status=400)
        return HttpResponse(MALFORMED_URL_MESSAGE, status=400,
                            content_type="text/plain; charset=utf-8")


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
