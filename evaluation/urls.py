from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("benchmarks/", views.benchmark_list, name="benchmark_list"),
    path("benchmarks/<slug:slug>/", views.benchmark_detail, name="benchmark_detail"),
    path("benchmarks/<slug:slug>/public.zip", views.benchmark_public_download,
         name="benchmark_public_download"),
    path("benchmarks/<slug:slug>/sample-submission.jsonl", views.benchmark_sample_submission,
         name="benchmark_sample_submission"),
    path("benchmarks/<slug:slug>/release-hidden/", views.benchmark_hidden_release,
         name="benchmark_hidden_release"),
    path("benchmarks/<slug:slug>/dialogues/<str:dialogue_id>/", views.dialogue_detail,
         name="dialogue_detail"),
    path("benchmarks/<slug:slug>/items/<str:item_id>/", views.item_detail, name="item_detail"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/retry/", views.run_retry, name="run_retry"),
    path("jobs/<int:job_id>/", views.job_detail, name="job_detail"),
    path("simulations/<int:simulation_id>/cancel/", views.simulation_cancel_view,
         name="simulation_cancel"),
]
