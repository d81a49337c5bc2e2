import os

from django.core.wsgi import get_wsgi_application
from django.db import connections
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Import every view now (the URLconf pulls in the statistics stack: NumPy, SciPy, scikit-learn),
# not on each web process's first request, which would otherwise take seconds; with
# `gunicorn --preload` it happens once, before the workers fork (docs/performance.md).
get_resolver().url_patterns  # noqa: B018 (the import is the point)
connections.close_all()  # nothing opened before a fork may be shared by the workers
