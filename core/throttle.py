"""Login throttling for the web form and the API token endpoint (issue 18, point 7).

After LOGIN_FAILURE_LIMIT failed logins for one account from one address within
LOGIN_FAILURE_WINDOW_SECONDS, further attempts for that pair are refused, without checking the
password, until the window ends; the answer says how long to wait. Counting per account *and*
address keeps an attacker from locking a user out from elsewhere, and a success clears the
count. The counts live in the "throttle" cache (Redis in service mode, shared by every web
process; process memory in the embedded mode, which runs one web process).

When that Redis server does not answer, the counts go to process memory (the "throttle-fallback"
cache) with a logged warning, and Redis is tried again after RETRY_SECONDS: every limit stays in
force, per web process instead of site-wide, and no request fails (docs/operations.md, "Client
addresses, proxies and Redis outages"). A client is known by `client_address`, which reads
X-Forwarded-For only as far as CONCORD_TRUSTED_PROXIES says.
"""

import hashlib
import ipaddress
import logging
import math
import time
from collections.abc import Callable

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import caches

logger = logging.getLogger(__name__)

# After the throttle cache's server failed, this process counts in memory for this long before
# it tries the server again (so an outage costs one refused connection per process and period).
RETRY_SECONDS = 30
_DOWN_KEY = "throttle-primary-down"


# --- who the client is ------------------------------------------------------------------------


def client_address(request) -> str:
    """The client's IP address. Directly reachable (CONCORD_TRUSTED_PROXIES=0) that is
    REMOTE_ADDR, and X-Forwarded-For is ignored: anyone can write it. Behind N trusted reverse
    proxies, each appending the address it received from to X-Forwarded-For, the client is the
    Nth entry from the right (entries further left are the client's own claims). A missing,
    too short or malformed header gives REMOTE_ADDR."""
    remote = request.META.get("REMOTE_ADDR", "")
    hops = settings.TRUSTED_PROXIES
    if not hops:
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
    if len(forwarded) < hops:
        return remote
    try:
        return str(ipaddress.ip_address(forwarded[-hops].strip()))
    except ValueError:
        return remote


# --- the throttle cache, and what happens when its server is down ---------------------------


def _unavailable_errors() -> tuple[type[Exception], ...]:
    """What the throttle cache raises when its server does not answer (none in memory)."""
    if "redis" not in type(caches["throttle"]).__module__:
        return ()
    from redis.exceptions import RedisError  # only in service mode: redis is a client import

    return (RedisError,)


def _on_cache(operation: Callable):
    """OPERATION(cache) on the throttle cache; on process memory, with a warning, when its
    server does not answer (and for RETRY_SECONDS after, without trying it)."""
    fallback = caches["throttle-fallback"]
    if not fallback.get(_DOWN_KEY):
        try:
            return operation(caches["throttle"])
        except _unavailable_errors() as error:
            logger.warning("throttle cache unavailable (%s: %s); login and arena limits are "
                           "counted per web process for %s s", type(error).__name__, error,
                           RETRY_SECONDS)
            fallback.set(_DOWN_KEY, True, timeout=RETRY_SECONDS)
    return operation(fallback)


# --- login throttling -------------------------------------------------------------------------


def _key(username: str, request) -> str:
    address = client_address(request) if request is not None else ""
    digest = hashlib.sha256(f"{username.strip().lower()}\0{address}".encode()).hexdigest()
    return f"login-failures:{digest}"


def login_wait_seconds(username: str, request) -> int:
    """Seconds until USERNAME may try again from REQUEST's address (0: now)."""
    entry = _on_cache(lambda cache: cache.get(_key(username, request)))
    if not entry or entry["count"] < settings.LOGIN_FAILURE_LIMIT:
        return 0
    return max(1, math.ceil(entry["until"] - time.time()))


def login_wait_message(seconds: int) -> str:
    minutes = math.ceil(seconds / 60)
    return (f"Too many failed logins for this account from your address. Try again in "
            f"{minutes} minute{'s' if minutes != 1 else ''}.")


def login_failed(username: str, request) -> None:
    key, window = _key(username, request), settings.LOGIN_FAILURE_WINDOW_SECONDS

    def count(cache) -> None:
        entry = cache.get(key) or {"count": 0, "until": time.time() + window}
        entry["count"] += 1
        cache.set(key, entry, timeout=max(1, math.ceil(entry["until"] - time.time())))

    _on_cache(count)


def login_succeeded(username: str, request) -> None:
    key = _key(username, request)
    _on_cache(lambda cache: cache.delete(key))


# --- the web forms (the site's and the admin's) ---------------------------------------------


class ThrottledFormMixin:
    throttled = False

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        wait = login_wait_seconds(username, self.request)
        if wait:
            self.throttled = True
            raise forms.ValidationError(login_wait_message(wait), code="throttled")
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            login_failed(username, self.request)
            raise
        login_succeeded(username, self.request)
        return cleaned


class ThrottledAuthenticationForm(ThrottledFormMixin, AuthenticationForm):
    pass


class ThrottledAdminAuthenticationForm(ThrottledFormMixin, AdminAuthenticationForm):
    pass


class ThrottledLoginView(auth_views.LoginView):
    """Django's login view; a throttled attempt answers 429 with the wait message."""

    form_class = ThrottledAuthenticationForm

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.throttled:
            response.status_code = 429
        return response


# --- rate limits for anonymous-friendly pages (the arena) -----------------------------------


def address_hash(request) -> str:
    """A stable, non-reversible handle of the client address (keyed by the site secret)."""
    address = client_address(request)
    return hashlib.sha256(f"{settings.SECRET_KEY}\0address\0{address}".encode()).hexdigest()


def rate_limit_take(scope: str, ident: str, *, limit: int, window: int) -> int:
    """Count one event of SCOPE for IDENT; 0 when it is within LIMIT events per WINDOW seconds,
    else the seconds until the window ends (the event is refused and not counted twice).

    Fixed windows in the shared "throttle" cache: `add` then `incr` are atomic in Redis, so
    concurrent requests from several web processes cannot both slip under the limit.
    """
    now = time.time()
    slot = int(now // window)
    digest = hashlib.sha256(f"{scope}\0{ident}".encode()).hexdigest()
    key = f"rate:{scope}:{slot}:{digest}"

    def take(cache) -> int:
        cache.add(key, 0, timeout=window + 1)
        try:
            return cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.add(key, 1, timeout=window + 1)
            return 1

    count = _on_cache(take)
    if count <= limit:
        return 0
    return max(1, math.ceil((slot + 1) * window - now))
