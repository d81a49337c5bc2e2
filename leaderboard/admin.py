from django.contrib import admin

from evaluation.models import Submission, System

from .models import RankSnapshot


@admin.register(System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "owner", "family", "team", "is_baseline", "daily_quota",
                    "created_at")
    list_filter = ("is_baseline", "family")
    search_fields = ("name", "slug", "team", "owner__username")
    raw_id_fields = ("owner",)


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("uuid", "system", "benchmark", "protocol", "line_count", "is_public",
                    "created_at")
    list_filter = ("is_public", "protocol", "benchmark")
    list_select_related = ("system", "benchmark")
    search_fields = ("uuid", "system__name", "system__slug")
    raw_id_fields = ("system", "created_by")
    readonly_fields = ("uuid", "file", "line_count", "created_at")


@admin.register(RankSnapshot)
class RankSnapshotAdmin(admin.ModelAdmin):
    list_display = ("benchmark", "protocol", "evaluator", "computed_at", "seconds")
    readonly_fields = ("benchmark", "protocol", "evaluator", "run_ids", "metrics", "bootstrap",
                       "seconds", "computed_at")
    exclude = ("better",)
