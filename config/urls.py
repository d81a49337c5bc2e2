from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path

from core.throttle import ThrottledAdminAuthenticationForm, ThrottledLoginView

admin.site.login_form = ThrottledAdminAuthenticationForm

# static() is resolved per request: at import time the production storage's manifest may not
# exist yet (`manage.py check --deploy` runs before collectstatic).
urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico on their own, before and besides the <link rel="icon">.
    path("favicon.ico", lambda request: HttpResponsePermanentRedirect(static("favicon.svg"))),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("studies/", include("annotation.urls")),
    path("", include("leaderboard.urls")),
    path("", include("evaluation.urls")),
]
