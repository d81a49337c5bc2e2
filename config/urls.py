from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from config.throttle import ThrottledAdminAuthenticationForm, ThrottledLoginView

admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico on their own, before and besides the <link rel="icon">.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("studies/", include("annotation.urls")),
    path("", include("leaderboard.urls")),
    path("", include("evaluation.urls")),
]
