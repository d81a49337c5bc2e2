"""REST API representations (Django REST framework). Writes go through leaderboard.services."""

from django.db import models
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from evaluation.models import Benchmark, Submission, System


class BenchmarkSerializer(serializers.ModelSerializer):
    leaderboard = serializers.SerializerMethodField()
    public_bundle = serializers.SerializerMethodField()
    sample_submission = serializers.SerializerMethodField()

    class Meta:
        model = Benchmark
        fields = ("slug", "name", "version", "domain", "description", "license", "protocols",
                  "splits", "leaderboard", "public_bundle", "sample_submission")

    def get_leaderboard(self, obj) -> str:
        return reverse("leaderboard:api_leaderboard", args=[obj.slug])

    def get_public_bundle(self, obj) -> str:
        return reverse("leaderboard:api_benchmark_public", args=[obj.slug])

    def get_sample_submission(self, obj) -> str:
        return reverse("leaderboard:api_benchmark_sample", args=[obj.slug])


class StrictCharField(serializers.CharField):
    """Text only: DRF's CharField turns `{"name": 0}` into the name "0"."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class SystemSerializer(serializers.ModelSerializer):
    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: StrictCharField, models.TextField: StrictCharField,
    }
    owner = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    page = serializers.SerializerMethodField()

    class Meta:
        model = System
        fields = ("slug", "name", "description", "paper_url", "code_url", "team", "family",
                  "is_baseline", "owner", "created_at", "page")
        read_only_fields = ("slug", "is_baseline", "owner", "created_at", "page")

    def get_page(self, obj) -> str:
        return reverse("leaderboard:system_detail", args=[obj.slug])


class RunBriefSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    evaluator = serializers.CharField()
    evaluator_version = serializers.CharField()
    config_hash = serializers.CharField()
    status = serializers.CharField(source="job.status")
    progress = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    def get_progress(self, obj) -> dict:
        return {"stage": obj.job.stage, "done": obj.job.done, "total": obj.job.total,
                "error": obj.job.error or None}

    def get_url(self, obj) -> str:
        return reverse("leaderboard:api_run", args=[obj.pk])


class SubmissionSerializer(serializers.ModelSerializer):
    system = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    benchmark = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    runs = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = ("uuid", "system", "benchmark", "protocol", "line_count", "note", "is_public",
                  "created_at", "runs")
        read_only_fields = fields

    def get_runs(self, obj) -> list[dict]:
        runs = obj.runs.select_related("job").order_by("-created_at", "-pk")
        return RunBriefSerializer(runs, many=True).data


@extend_schema_field(OpenApiTypes.BINARY)
class UploadField(serializers.FileField):
    """A file part of a multipart upload (described as binary, not as a URL)."""


class SubmissionUploadSerializer(serializers.Serializer):
    system = serializers.SlugField(help_text="slug of one of your systems")
    benchmark = serializers.SlugField(help_text="slug of the benchmark the file answers")
    file = UploadField(help_text="submission.jsonl (docs/formats.md §2)")
    note = serializers.CharField(max_length=300, required=False, allow_blank=True)


class RequiredBooleanField(serializers.BooleanField):
    # DRF reads a missing checkbox in form data as False; here a missing field is an error,
    # so an empty POST can never withdraw a submission by accident.
    default_empty_html = serializers.empty


class PublishSerializer(serializers.Serializer):
    public = RequiredBooleanField(help_text="true publishes, false withdraws")


class FormatIssueSerializer(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    path = serializers.CharField()
    message = serializers.CharField()


class ValidationFailedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = FormatIssueSerializer(many=True)


class MetricValueSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    rank = serializers.IntegerField(allow_null=True)
    run = serializers.IntegerField()


class LeaderboardColumnSerializer(serializers.Serializer):
    key = serializers.CharField()
    evaluator = serializers.CharField()
    metric = serializers.CharField()
    axis = serializers.CharField()
    direction = serializers.ChoiceField(choices=["higher", "lower"])


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True)
    system = serializers.CharField()
    slug = serializers.CharField()
    family = serializers.CharField()
    team = serializers.CharField()
    baseline = serializers.BooleanField()
    public = serializers.BooleanField()
    runs = serializers.DictField(child=serializers.IntegerField())
    metrics = serializers.DictField(child=MetricValueSerializer())


class LeaderboardSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    protocol = serializers.CharField()
    sort = serializers.CharField()
    rank_metric = serializers.CharField(allow_null=True)
    bootstrap = serializers.DictField()
    columns = LeaderboardColumnSerializer(many=True)
    systems = LeaderboardRowSerializer(many=True)


class RunResultSerializer(serializers.Serializer):
    """evaluation.selectors.run_results plus the job's progress."""

    run = serializers.IntegerField()
    status = serializers.CharField()
    system = serializers.CharField()
    benchmark = serializers.CharField()
    evaluator = serializers.CharField()
    evaluator_version = serializers.CharField()
    config_hash = serializers.CharField()
    splits = serializers.ListField(child=serializers.CharField())
    bootstrap = serializers.DictField()
    metrics = serializers.DictField(child=serializers.DictField())
    unavailable = serializers.DictField(child=serializers.CharField())
    progress = serializers.DictField()
    submission = serializers.UUIDField()
    page = serializers.CharField()
