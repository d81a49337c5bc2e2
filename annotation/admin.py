from django.contrib import admin

from .models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    BlindingEntry,
    Draft,
    ImportedField,
    ImportedLabel,
    Study,
    StudyItem,
    StudyMember,
)


class MemberInline(admin.TabularInline):
    model = StudyMember
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["title", "slug", "benchmark", "author", "source", "overlap_k", "is_open",
                    "is_public", "created_at"]
    list_filter = ["is_public", "is_open"]
    list_editable = ["is_public"]
    search_fields = ["title", "slug"]
    raw_id_fields = ["author", "benchmark"]
    inlines = [MemberInline]


@admin.register(StudyItem)
class StudyItemAdmin(admin.ModelAdmin):
    list_display = ["study", "position", "mode", "kind", "dialogue", "turn_index", "system"]
    list_filter = ["mode", "kind"]
    raw_id_fields = ["study", "dialogue", "system", "submission", "blind", "system_b",
                     "submission_b", "blind_b"]


@admin.register(BlindingEntry)
class BlindingEntryAdmin(admin.ModelAdmin):
    list_display = ["study", "dialogue", "letter", "source_key", "system"]
    raw_id_fields = ["study", "dialogue", "system"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["member", "position", "item", "status", "handed_out_at", "focused_ms"]
    list_filter = ["status"]
    raw_id_fields = ["member", "item"]


class RevisionInline(admin.TabularInline):
    model = AnnotationRevision
    extra = 0
    readonly_fields = ["number", "values", "time_spent_ms", "created_at"]


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ["item", "annotator", "submitted_at", "updated_at", "revision_count"]
    raw_id_fields = ["assignment", "item", "annotator"]
    inlines = [RevisionInline]


@admin.register(Draft)
class DraftAdmin(admin.ModelAdmin):
    list_display = ["assignment", "saved_at"]
    raw_id_fields = ["assignment"]


@admin.register(ImportedField)
class ImportedFieldAdmin(admin.ModelAdmin):
    list_display = ["study", "name", "unit_type", "level", "scale_min", "scale_max"]
    list_filter = ["level", "unit_type"]
    raw_id_fields = ["study"]


@admin.register(ImportedLabel)
class ImportedLabelAdmin(admin.ModelAdmin):
    list_display = ["study", "unit_type", "unit_id", "system", "annotator", "field", "value_num",
                    "value_text"]
    list_filter = ["unit_type"]
    search_fields = ["unit_id", "annotator", "field"]
    raw_id_fields = ["study"]
