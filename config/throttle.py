"""Login throttling for the web form and the API token endpoint (issue 18, point 7).

After LOGIN_FAILURE_LIMIT failed logins for one account from one address within
LOGIN_FAILURE_WINDOW_SECONDS, further attempts for that pair are refused, without checking the
password, until the window ends; the answer says how long to wait. Counting per account *and*
address keeps an attacker from locking a user out from elsewhere, and a success clears the
count. The counts live in the "throttle" cache (Redis in service mode, shared by every web
process; process memory in the embedded mode, which runs one web process).
"""

import hashlib
import math
import time

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import caches


def _key(username: str, request) -> str:
    address = request.META.get("REMOTE_ADDR", "") if request is not None else ""
    digest = hashlib.sha256(f"{username.strip().lower()}\0{address}".encode()).hexdigest()
    return f"login-failures:{digest}"


def login_wait_seconds(username: str, request) -> int:
    """Seconds until USERNAME may try again from REQUEST's address (0: now)."""
    entry = caches["throttle"].get(_key(username, request))
    if not entry or entry["count"] < settings.LOGIN_FAILURE_LIMIT:
        return 0
    return max(1, math.ceil(entry["until"] - time.time()))


def login_wait_message(seconds: int) -> str:
    minutes = math.ceil(seconds / 60)
    return (f"Too many failed logins for this account from your address. Try again in "
            f"{minutes} minute{'s' if minutes != 1 else ''}.")


def login_failed(username: str, request) -> None:
    cache, key = caches["throttle"], _key(username, request)
    window = settings.LOGIN_FAILURE_WINDOW_SECONDS
    entry = cache.get(key) or {"count": 0, "until": time.time() + window}
    entry["count"] += 1
    cache.set(key, entry, timeout=max(1, math.ceil(entry["until"] - time.time())))


def login_succeeded(username: str, request) -> None:
    caches["throttle"].delete(_key(username, request))


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
    address = request.META.get("REMOTE_ADDR", "")
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
    key, cache = f"rate:{scope}:{slot}:{digest}", caches["throttle"]
    cache.add(key, 0, timeout=window + 1)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=window + 1)
        count = 1
    if count <= limit:
        return 0
    return max(1, math.ceil((slot + 1) * window - now))
