"""Annotation URLs, mounted at /studies/. Annotators' URLs carry their queue position, never an
item or system id."""

from django.urls import path

from . import views, views_handout

app_name = "annotation"

urlpatterns = [
    path("", views.study_list, name="study_list"),
    path("new/", views.study_create, name="study_create"),
    path("new/arena/<slug:arena>/", views.arena_study_create, name="arena_study_create"),
    path("join/<str:token>/", views.study_join, name="study_join"),
    path("metric-leaderboards/", views.metric_board_index, name="metric_board_index"),
    path("<slug:slug>/", views.study_detail, name="study_detail"),
    path("<slug:slug>/next/", views.study_next, name="study_next"),
    path("<slug:slug>/items/<int:position>/", views.item_detail, name="item_detail"),
    path("<slug:slug>/items/<int:position>/draft/", views.item_draft, name="item_draft"),
    path("<slug:slug>/items/<int:position>/submit/", views.item_submit, name="item_submit"),
    path("<slug:slug>/dashboard/", views.study_dashboard, name="study_dashboard"),
    path("<slug:slug>/handout/", views_handout.study_handout, name="study_handout"),
    path("<slug:slug>/members/", views.study_member_add, name="study_member_add"),
    path("<slug:slug>/members/<int:member_id>/exclude/", views.study_member_exclude,
         name="study_member_exclude"),
    path("<slug:slug>/export/", views.study_export, name="study_export"),
    path("<slug:slug>/export/<int:job_id>/download/", views.study_export_download,
         name="study_export_download"),
    path("<slug:slug>/report/", views.study_report, name="study_report"),
    path("<slug:slug>/face/", views.study_face, name="study_face"),
    path("<slug:slug>/face/optimize/", views.study_face_optimize, name="study_face_optimize"),
    path("<slug:slug>/face/evaluate/", views.study_face_evaluate, name="study_face_evaluate"),
    path("<slug:slug>/face/<int:optimization_id>/resume/", views.study_face_resume,
         name="study_face_resume"),
    path("<slug:slug>/report/<str:kind>.<str:fmt>", views.study_report_download,
         name="study_report_download"),
    path("<slug:slug>/metric-leaderboard/", views.metric_board, name="metric_board"),
    path("<slug:slug>/metric-leaderboard/anchored/", views.metric_board_anchored,
         name="metric_board_anchored"),
    path("<slug:slug>/metric-leaderboard.<str:fmt>", views.metric_board_download,
         name="metric_board_download"),
]
