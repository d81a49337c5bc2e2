from django.contrib import admin

from .models import Benchmark, Citation, Dialogue, Item, LLMCacheEntry, Review, Turn


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "version", "domain", "is_public", "owner", "created_at")
    search_fields = ("name", "slug")


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("external_id", "name", "type", "city", "price_level", "stars", "benchmark")
    list_filter = ("benchmark", "type", "city")
    search_fields = ("external_id", "name")


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    list_display = ("external_id", "item", "stars")
    list_select_related = ("item",)
    raw_id_fields = ("item",)
    search_fields = ("external_id", "text")


class TurnInline(admin.TabularInline):
    model = Turn
    extra = 0
    fields = ("index", "role", "action", "text")


@admin.register(Dialogue)
class DialogueAdmin(admin.ModelAdmin):
    list_display = ("external_id", "benchmark", "split", "difficulty")
    list_filter = ("benchmark", "split", "difficulty")
    search_fields = ("external_id",)
    inlines = [TurnInline]


@admin.register(Citation)
class CitationAdmin(admin.ModelAdmin):
    list_display = ("turn", "label", "review", "start", "end")
    raw_id_fields = ("turn", "review")


@admin.register(LLMCacheEntry)
class LLMCacheEntryAdmin(admin.ModelAdmin):
    """Cached LLM answers (docs/llm.md): delete a model's entries to get fresh answers."""

    list_display = ("key", "model", "created_at")
    list_filter = ("model",)
    search_fields = ("key", "model")
    readonly_fields = ("key", "model", "response", "created_at")

    def has_add_permission(self, request) -> bool:
        return False
