from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView

from . import api, views

app_name = "leaderboard"

urlpatterns = [
    # pages
    path("leaderboards/", views.leaderboard_index, name="index"),
    path("leaderboards/<slug:benchmark>/", views.board, name="board_default"),
    path("leaderboards/<slug:benchmark>/<str:protocol>/", views.board, name="board"),
    path("leaderboards/<slug:benchmark>/<str:protocol>/export.<str:fmt>", views.board_export,
         name="board_export"),
    path("systems/", views.system_list, name="system_list"),
    path("systems/new/", views.system_create_view, name="system_create"),
    path("systems/<slug:slug>/", views.system_detail, name="system_detail"),
    path("systems/<slug:slug>/edit/", views.system_edit, name="system_edit"),
    path("systems/<slug:slug>/simulate/", views.system_simulate, name="system_simulate"),
    path("systems/<slug:slug>/submit/", views.submission_create, name="submission_create"),
    path("submissions/<uuid:uuid>/", views.submission_detail, name="submission_detail"),
    path("submissions/<uuid:uuid>/status/", views.submission_status, name="submission_status"),
    path("submissions/<uuid:uuid>/publish/", views.submission_publish,
         name="submission_publish"),
    path("submissions/<uuid:uuid>/file/", views.submission_download, name="submission_download"),
    path("submissions/<uuid:uuid>/dialogues/<str:dialogue_id>/", views.submission_dialogue,
         name="submission_dialogue"),
    path("compare/", views.compare, name="compare"),
    path("signup/", views.signup, name="signup"),
    path("account/api-token/", views.api_token, name="api_token"),
    # REST API
    path("api/benchmarks/", api.BenchmarkList.as_view(), name="api_benchmarks"),
    path("api/benchmarks/<slug:slug>/", api.BenchmarkDetail.as_view(), name="api_benchmark"),
    path("api/benchmarks/<slug:slug>/public.zip", api.BenchmarkPublicBundle.as_view(),
         name="api_benchmark_public"),
    path("api/benchmarks/<slug:slug>/sample-submission.jsonl",
         api.BenchmarkSampleSubmission.as_view(), name="api_benchmark_sample"),
    path("api/systems/", api.SystemList.as_view(), name="api_systems"),
    path("api/systems/<slug:slug>/", api.SystemDetail.as_view(), name="api_system"),
    path("api/submissions/", api.SubmissionList.as_view(), name="api_submissions"),
    path("api/submissions/<uuid:uuid>/", api.SubmissionDetail.as_view(), name="api_submission"),
    path("api/submissions/<uuid:uuid>/publish/", api.SubmissionPublish.as_view(),
         name="api_submission_publish"),
    path("api/runs/<int:run_id>/", api.RunDetail.as_view(), name="api_run"),
    path("api/leaderboards/<slug:benchmark>/", api.LeaderboardDetail.as_view(),
         name="api_leaderboard"),
    path("api/token/", api.TokenObtain.as_view(), name="api_token_obtain"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api_schema"),
    path("api/docs/", views.api_docs, name="api_docs"),
    re_path(r"^api/", api.api_not_found, name="api_not_found"),  # last: JSON, not HTML, 404s
]
