"""Reads of the annotation app: the item page, study pages, dashboard and export rows.

The item page is what an annotator's browser receives, so everything it shows is built here
from the item snapshot and never includes a system's name, slug, id, submission or score: a
response is "System <letter>" and nothing else.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.core.cache import caches
from django.db.models import Count, Max, Q, Sum

from annotation import rows
from annotation.lib import taskforms
from annotation.lib.form_registry import Point, ScaleRow
from evaluation.lib.highlight import span_segments
from evaluation.lib.metrics.quotes import extract_quotes
from evaluation.models import DialogueItem, Item, Review

from .models import Annotation, Assignment, HandoutDraw, Study, StudyItem, StudyMember

# --- the item page -------------------------------------------------------------------------


def item_layout(item: StudyItem, study: Study, *, swapped: bool = False, quote_checker=None,
                candidate_ids: tuple[str, ...] | None = None) -> taskforms.Layout:
    """What the item asks for (forms, quotes, scales, rated turns, candidates)."""
    forms = tuple(f for f in study.forms if f in taskforms.keys_for_mode(item.mode))
    quote_count = len(extract_quotes(item.response_text)) if item.mode == "response" else 0
    rated = tuple(t["index"] for t in item.context if t.get("rated"))
    if item.mode == StudyItem.Mode.RECOMMEND and candidate_ids is None:
        candidate_ids = tuple(_candidate_links(item).values_list("item__external_id", flat=True))
    return taskforms.Layout(
        forms=forms, quote_count=quote_count,
        likert_scales=tuple(study.likert_scales) if taskforms.LIKERT in forms else (),
        rated_turns=rated if item.mode == StudyItem.Mode.CONVERSATION else (),
        candidate_ids=candidate_ids or (), quote_checker=quote_checker, swapped=swapped)


def _candidate_links(item: StudyItem):
    return DialogueItem.objects.filter(dialogue_id=item.dialogue_id,
                                       role=DialogueItem.Role.CANDIDATE)


def recommend_quote_checker(item: StudyItem):
    """Check captured quotes against the candidates' reviews (one query, on first use)."""
    texts: dict[str, tuple[str, str]] = {}

    def check(review_id, start, end, text, item_id) -> bool:
        if not texts:
            found = Review.objects.filter(item__in=_candidate_links(item).values("item")
                                          ).values_list("external_id", "text", "item__external_id")
            texts.update({rid: (body, owner) for rid, body, owner in found})
        body, owner = texts.get(review_id, ("", None))
        return owner == item_id and body[start:end] == text

    return check


def _current_values(assignment: Assignment) -> tuple[dict, str]:
    """The autosaved draft if there is one (access.get_assignment_for_user brings it), else the
    submitted annotation, else nothing."""
    if assignment.draft_values is not None:
        return assignment.draft_values, "draft"
    if assignment.status == Assignment.Status.SUBMITTED:
        values = (Annotation.objects.filter(assignment=assignment)
                  .values_list("values", flat=True).first())
        if values is not None:
            return values, "submitted"
    return {}, "new"


# Items are snapshots, the blinding map is drawn once, and a benchmark cannot be replaced while
# a study uses it: each web process keeps what an item page derives from them in its own
# memory, Django's "items" cache (settings.CACHES; docs/hot-path.md).
ITEM_CACHE = "items"


def item_cache_key(item: StudyItem, study: Study, *parts) -> str:
    # created_at tells apart a study that reuses a deleted one's primary keys
    return ":".join(str(part) for part in (item.pk, item.study_id, study.created_at.timestamp(),
                                           *parts))


def _cached(key: str, build):
    cache = caches[ITEM_CACHE]
    value = cache.get(key)
    if value is None:
        value = build()
        cache.set(key, value)
    return value


def item_static(item: StudyItem, study: Study) -> dict:
    """What an item page shows that never changes: its letters, cited reviews, candidates."""
    def build() -> dict:
        found = {"letters": rows.letters([pk for pk in (item.blind_id, item.blind_b_id) if pk])}
        if item.mode in (StudyItem.Mode.RESPONSE, StudyItem.Mode.PAIRWISE):
            cited = {c["review_id"] for c in (*item.citations, *item.citations_b)}
            found["reviews"] = rows.reviews(study.benchmark_id, sorted(cited))
        elif item.mode == StudyItem.Mode.RECOMMEND:
            links = _candidate_links(item).select_related("item").order_by("position")
            candidates = [link.item for link in links]
            by_item = defaultdict(list)
            for review in Review.objects.filter(item__in=candidates).order_by("external_id"):
                by_item[review.item_id].append(review)
            found["candidates"] = [(c, by_item[c.pk]) for c in candidates]
        return found

    return _cached(item_cache_key(item, study, "static"), build)


def _find(text: str, quote: str) -> int:
    start = text.find(quote)
    return start if start >= 0 else text.lower().find(quote.lower())


@dataclass
class ResponseView:
    letter: str
    segments: list
    quotes: list  # (number, Quote, ScaleRow | None)
    reviews: list = field(default_factory=list)


def _response_view(text: str, citations: list[dict], letter: str, reviews: dict,
                   values: dict | None, *, with_rows: bool) -> ResponseView:
    quotes = extract_quotes(text)
    label_to_review = {c["label"]: c["review_id"] for c in citations}
    verdicts = (values or {}).get("citations", {})
    listed = []
    spans_by_review: dict[str, list] = defaultdict(list)
    for n, quote in enumerate(quotes):
        row = None
        if with_rows:
            current = verdicts.get(str(n))  # unset until the annotator chooses
            row = ScaleRow(f"citation-{n}", f"Quote {n + 1}", [
                Point(c.value, c.label, c.key, c.help, c.value == current)
                for c in taskforms.CITATION_VERDICTS], question=quote.text, current=current)
        listed.append((n + 1, quote, row))
        for label in quote.labels:
            review_id = label_to_review.get(label)
            review = reviews.get(review_id)
            if review is not None:
                start = _find(review.text, quote.text)
                if start >= 0:
                    spans_by_review[review_id].append((start, start + len(quote.text), n + 1))
    shown = []
    for citation in citations:
        review = reviews.get(citation["review_id"])
        if review is not None and review not in [r["review"] for r in shown]:
            labels = [c["label"] for c in citations if c["review_id"] == citation["review_id"]]
            shown.append({"review": review, "labels": labels,
                          "segments": span_segments(review.text,
                                                    spans_by_review[citation["review_id"]])})
    segments = span_segments(text, [(q.start, q.end, n + 1) for n, q in enumerate(quotes)])
    return ResponseView(letter, segments, listed, shown)


@dataclass(frozen=True)
class ItemView:
    """What the item's own part of the page (dialogue, response, reviews, forms) depends on:
    the item, its study's settings, the values to show, and the two per-annotator choices,
    the side swap of a pair and the shuffle of a candidate pool. Nothing else of the
    assignment, so a fresh item's rendering can be shared between annotators."""

    item: StudyItem
    study: Study
    values: dict
    swapped: bool = False
    shuffle_seed: str = ""  # a recommend item's per-annotator candidate order


def item_page(*, assignment: Assignment, render_body) -> dict:
    """Everything the item page shows, in at most two queries beyond the assignment.

    The item's own part goes through RENDER_BODY(context) -> (main, panel) HTML, from a
    context built by `item_body_context` out of an `ItemView` alone. A fresh item (no draft,
    no annotation) looks the same to every annotator with the same side swap, so that part is
    rendered once per web process and kept in the "items" cache; only a per-annotator order
    (a shuffled candidate pool) opts out.
    """
    item, study = assignment.item, assignment.item.study
    values, state = _current_values(assignment)
    context = {
        "study": study, "assignment": assignment, "item": item, "state": state,
        "minutes_left": max(1, round(assignment.seconds_left / 60)),
        "is_practice": item.kind == StudyItem.Kind.CALIBRATION,
    }
    if context["is_practice"] and state == "submitted":
        picked = [i for i in str(dict(taskforms.flatten(values)).get(taskforms.RECOMMEND_FIELD)
                                 or "").split("|") if i]
        wanted = list((item.expected or {}).get(taskforms.RECOMMEND_FIELD) or [])
        context["practice_feedback"] = practice_feedback(
            item.expected, values, item_names=benchmark_item_names(
                benchmark_id=study.benchmark_id, external_ids=picked + wanted))
    view = ItemView(item, study, values, swapped=assignment.swapped,
                    shuffle_seed=(f"candidates:{assignment.pk}"
                                  if item.mode == StudyItem.Mode.RECOMMEND else ""))

    def build() -> tuple[str, str]:
        return render_body(item_body_context(view))

    shared = state == "new" and not view.shuffle_seed
    context["main_html"], context["panel_html"] = (
        _cached(item_cache_key(item, study, "body", view.swapped), build) if shared
        else build())
    return context


def item_body_context(view: ItemView) -> dict:
    """The template context of the item's own part: built from VIEW only."""
    item, values = view.item, view.values
    body = {"item": item, "values": values, "turns": item.context,
            "comment": values.get("comment", ""), "flagged": bool(values.get("flag")),
            "flag_reason": values.get("flag_reason", "")}
    builder = {
        StudyItem.Mode.RESPONSE: _response_page,
        StudyItem.Mode.CONVERSATION: _conversation_page,
        StudyItem.Mode.RECOMMEND: _recommend_page,
        StudyItem.Mode.PAIRWISE: _pairwise_page,
    }[item.mode]
    body.update(builder(view, item_static(item, view.study)))
    layout = body.pop("layout")
    shown = taskforms.in_panel_order(layout.forms)
    body["forms"] = set(layout.forms)
    body["panels"] = [{"form": form, "template": form.template,
                       "context": form.panel_context(values, layout)} for form in shown]
    body["shortcuts"] = [pair for form in shown for pair in form.shortcuts]
    return body


def _response_page(view: ItemView, static: dict) -> dict:
    item, values = view.item, view.values
    layout = item_layout(item, view.study)
    response = _response_view(item.response_text, item.citations,
                              static["letters"][item.blind_id], static["reviews"],
                              values, with_rows=taskforms.CITATION in layout.forms)
    return {"layout": layout, "response": response}


def _conversation_page(view: ItemView, static: dict) -> dict:
    item, values = view.item, view.values
    layout = item_layout(item, view.study)
    forms = taskforms.enabled(layout.forms)
    turns = [{**turn, "rows": [row for form in forms
                               for row in form.turn_rows(values, turn["index"])]
              if turn.get("rated") else []} for turn in item.context]
    return {"layout": layout, "turns": turns, "letter": static["letters"][item.blind_id]}


def _recommend_page(view: ItemView, static: dict) -> dict:
    item, values = view.item, view.values
    pool = list(static["candidates"])
    # The pool's stored order could hint at the answer; each annotator sees their own shuffle.
    random.Random(view.shuffle_seed).shuffle(pool)
    layout = item_layout(item, view.study, candidate_ids=tuple(c.external_id for c, _ in pool))
    rec = values.get(taskforms.RECOMMEND, {})
    picked = set(rec.get("items", []))
    cited = {q["review_id"] for q in rec.get("quotes", [])}
    user_turns = [t["index"] for t in item.context if t["role"] == "user"]
    return {
        "layout": layout,
        "request_index": user_turns[-1] if user_turns else None,
        "candidates": [{"item": c, "reviews": reviews, "picked": c.external_id in picked}
                       for c, reviews in pool],
        "cited_reviews": cited,
    }


def _pairwise_page(view: ItemView, static: dict) -> dict:
    item, values = view.item, view.values
    layout = item_layout(item, view.study, swapped=view.swapped)
    letters, reviews = static["letters"], static["reviews"]
    a = _response_view(item.response_text, item.citations, letters[item.blind_id], reviews,
                       None, with_rows=False)
    b = _response_view(item.response_b_text, item.citations_b, letters[item.blind_b_id],
                       reviews, None, with_rows=False)
    left, right = (b, a) if view.swapped else (a, b)
    pair = values.get("pairwise", {})
    shown = taskforms.pairwise_to_display(pair.get("choice"), view.swapped)
    row = ScaleRow("pair-choice", "Which response is better?", [
        Point("left", f"System {left.letter} is better", "1", "", shown == "left"),
        Point("tie", "Tie", "2", "", shown == "tie"),
        Point("right", f"System {right.letter} is better", "3", "", shown == "right"),
    ], current=shown)
    return {"layout": layout, "left": left, "right": right, "pair_row": row}


def practice_feedback(expected: dict, values: dict,
                      item_names: dict[str, str] | None = None) -> list[dict]:
    """The practice item's expected answers beside the annotator's, in the form's words:
    quotes numbered from 1 as the form numbers them ("Quote 1"), items by name, no raw keys."""
    given = dict(taskforms.flatten(values))
    names = item_names or {}

    def items(ids) -> str:
        return ", ".join(names.get(i, i) for i in ids) or "—"

    rows = []
    for name, want in expected.items():
        got = given.get(name)
        if name == taskforms.RECOMMEND_FIELD:
            picked = [i for i in str(got or "").split("|") if i]
            ok = bool(set(picked) & set(want))
            want_text, got_text = " or ".join(names.get(i, i) for i in want), items(picked)
        else:
            ok = got == want
            want_text, got_text = _answer_text(want), _answer_text(got)
        rows.append({"field": taskforms.field_label(name), "expected": want_text, "given": got_text,
                     "ok": ok})
    return rows


def _answer_text(value) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, bool) or value in (0, 1) and isinstance(value, int):
        return "yes" if value else "no"
    return str(value).replace("_", " ")


def benchmark_item_names(*, benchmark_id: int, external_ids: list[str]) -> dict[str, str]:
    if not external_ids:
        return {}
    return dict(Item.objects.filter(benchmark_id=benchmark_id, external_id__in=external_ids)
                .values_list("external_id", "name"))


# --- study pages ---------------------------------------------------------------------------

def memberships_for_user(*, user) -> list[dict]:
    # "done" counts the items that count: practice (calibration) and gold checks are extra
    members = (StudyMember.objects.filter(user=user).select_related("study")
               .annotate(submitted=Count("assignments", filter=Q(
                   assignments__status=Assignment.Status.SUBMITTED,
                   assignments__item__kind=StudyItem.Kind.NORMAL)))
               .order_by("-study__created_at"))
    return [{"member": m, "study": m.study, "submitted": m.submitted} for m in members]


def authored_studies(*, user):
    # The items to label, as the dashboard counts them; practice and gold items apart.
    normal = Q(items__kind=StudyItem.Kind.NORMAL)
    studies = Study.objects.select_related("benchmark").annotate(
        item_count=Count("items", filter=normal, distinct=True),
        extra_items=Count("items", filter=~normal, distinct=True),
        member_count=Count("members", distinct=True))
    return studies if user.is_staff else studies.filter(author=user)


def held_assignment(*, member: StudyMember, now=None) -> Assignment | None:
    """The item the annotator holds and may go on with: an active assignment within the
    study's timeout (a read: handing out a new one is `services.handout.assignment_next`)."""
    from datetime import timedelta

    from django.utils import timezone

    study = member.study
    if member.excluded or not study.is_open:
        return None
    since = (now or timezone.now()) - timedelta(seconds=study.timeout_seconds)
    return (member.assignments.filter(status=Assignment.Status.ACTIVE, last_active_at__gte=since)
            .order_by("position").first())


def member_progress(*, member: StudyMember) -> dict:
    """"Done" counts the items that count, as the studies list does: practice (calibration)
    and gold checks apart."""
    counts = Counter(member.assignments.values_list("status", "item__kind"))
    return {"submitted": counts[(Assignment.Status.SUBMITTED, StudyItem.Kind.NORMAL)],
            "extra": sum(n for (status, kind), n in counts.items()
                         if status == Assignment.Status.SUBMITTED
                         and kind != StudyItem.Kind.NORMAL),
            "open": sum(n for (status, _), n in counts.items()
                        if status == Assignment.Status.ACTIVE)}


def gold_accuracy(*, study: Study) -> dict[int, tuple[int, int]]:
    """annotator id -> (matched, checked) over the gold items they submitted."""
    totals: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    rows = Annotation.objects.filter(item__study=study, item__kind=StudyItem.Kind.GOLD
                                     ).values_list("annotator_id", "values", "item__expected")
    for annotator_id, values, expected in rows:
        matched, checked = taskforms.gold_score(expected, values)
        totals[annotator_id][0] += matched
        totals[annotator_id][1] += checked
    return {k: (m, c) for k, (m, c) in totals.items()}


def _source_name(system) -> str:
    return system.name if system is not None else "Reference responses"


def study_dashboard(*, study: Study) -> dict:
    """Progress per annotator and per system, gold accuracy and flags (authors only)."""
    members = list(study.members.select_related("user").order_by("joined_at"))
    stats = {row["member"]: row for row in Assignment.objects.filter(member__study=study)
             .values("member").annotate(
                 handed=Count("pk"),
                 submitted=Count("pk", filter=Q(status=Assignment.Status.SUBMITTED)),
                 active=Count("pk", filter=Q(status=Assignment.Status.ACTIVE)),
                 focused=Sum("focused_ms", filter=Q(status=Assignment.Status.SUBMITTED)),
                 last=Max("last_active_at"))}
    gold = gold_accuracy(study=study)
    annotators = []
    for member in members:
        row = stats.get(member.pk, {})
        matched, checked = gold.get(member.user_id, (0, 0))
        accuracy = matched / checked if checked else None
        submitted = row.get("submitted", 0)
        annotators.append({
            "member": member, "handed": row.get("handed", 0), "submitted": submitted,
            "active": row.get("active", 0), "last": row.get("last"),
            "seconds_per_item": (row["focused"] / 1000 / submitted) if submitted and
            row.get("focused") else None,
            "gold_checked": checked, "gold_accuracy": accuracy,
            "below_threshold": accuracy is not None and accuracy < study.gold_pass_threshold,
        })
    return {"annotators": annotators, "systems": _system_progress(study),
            "totals": _totals(study), "flagged": _flagged(study)}


def _label_counts(study: Study) -> dict[int, int]:
    return dict(Annotation.objects.filter(item__study=study, assignment__member__excluded=False)
                .values_list("item").annotate(n=Count("pk")))


def _system_progress(study: Study) -> list[dict]:
    labels = _label_counts(study)
    rows: dict[str, dict] = {}
    items = (study.items.filter(kind=StudyItem.Kind.NORMAL)
             .select_related("system", "system_b").order_by("position"))
    for item in items:
        if item.mode == StudyItem.Mode.RECOMMEND:
            names = ["Blind recommendation (no system)"]
        elif item.mode == StudyItem.Mode.PAIRWISE:
            names = [f"{_source_name(item.system)} vs {_source_name(item.system_b)}"]
        else:
            names = [_source_name(item.system)]
        for name in names:
            row = rows.setdefault(name, {"name": name, "items": 0, "complete": 0, "labels": 0,
                                         "target": 0, "modes": set()})
            got = labels.get(item.pk, 0)
            row["items"] += 1
            row["labels"] += got
            row["target"] += item.target_labels
            row["complete"] += got >= item.target_labels
            row["modes"].add(item.get_mode_display())
    for row in rows.values():
        row["percent"] = round(100 * min(row["labels"], row["target"]) / row["target"]) \
            if row["target"] else 0
        row["modes"] = sorted(row["modes"])
    return sorted(rows.values(), key=lambda r: r["name"])


def _totals(study: Study) -> dict:
    by_kind = Counter(study.items.values_list("kind", flat=True))
    labels = _label_counts(study)
    normal = study.items.filter(kind=StudyItem.Kind.NORMAL).values_list("pk", "target_labels")
    complete = sum(labels.get(pk, 0) >= target for pk, target in normal)
    extended = study.items.filter(target_labels__gt=study.overlap_k).count()
    return {"normal": by_kind["normal"], "calibration": by_kind["calibration"],
            "gold": by_kind["gold"], "complete": complete,
            "labels": Annotation.objects.filter(item__study=study).count(),
            "tie_extensions": extended}


def _flagged(study: Study) -> list[Annotation]:
    return list(Annotation.objects.filter(item__study=study, values__flag=True)
                .select_related("item", "item__dialogue", "item__system", "annotator")
                .order_by("-updated_at")[:200])


# --- the author's export -------------------------------------------------------------------

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _safe_cell(value) -> object:
    """Keep spreadsheet programs from running untrusted text (comments, quotes) as a formula."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _system_label(system) -> str:
    return system.slug if system is not None else "reference"


def _item_quotes(item: StudyItem, cache: dict):
    """A callable giving the item's extracted quotes, computed once per item."""
    def quotes() -> list:
        if item.pk not in cache:
            cache[item.pk] = extract_quotes(item.response_text)
        return cache[item.pk]
    return quotes


def study_export_rows(*, study: Study, progress=None) -> Iterator[dict]:
    """One row per item x annotator x field x value; system identities included (authors only)."""
    members = {m.user_id: m for m in study.members.all()}
    gold = gold_accuracy(study=study)
    annotations = (Annotation.objects.filter(item__study=study)
                   .select_related("item", "item__dialogue", "item__system", "item__system_b",
                                   "item__blind", "item__blind_b", "annotator", "assignment")
                   .order_by("item__position", "annotator__username"))
    total = annotations.count()
    quotes_cache: dict = {}
    # an active study's items carry their handout wave and inclusion probability π (the
    # report weights their labels by 1/π); a uniform study's export has no such columns
    draws = {item: (wave, pi) for item, wave, pi in HandoutDraw.objects.filter(
        wave__study=study).values_list("item_id", "wave__number", "pi")} \
        if study.is_active_handout else None
    for done, annotation in enumerate(annotations.iterator(chunk_size=500), 1):
        item, member = annotation.item, members.get(annotation.annotator_id)
        matched, checked = gold.get(annotation.annotator_id, (0, 0))
        base = {
            "study": study.slug, "item": item.position, "item_mode": item.mode,
            "item_kind": item.kind, "dialogue_id": item.dialogue.external_id,
            "turn_index": "" if item.turn_index is None else item.turn_index,
            "system": "" if item.mode == "recommend" else _system_label(item.system),
            "system_letter": item.blind.letter if item.blind else "",
            "submission_id": item.submission_id or "",
            "system_b": _system_label(item.system_b) if item.mode == "pairwise" else "",
            "system_b_letter": item.blind_b.letter if item.blind_b else "",
            "submission_b_id": item.submission_b_id or "",
            "annotator": annotation.annotator.get_username(),
            "annotator_excluded": int(bool(member and member.excluded)),
            "exclusion_reason": member.exclusion_reason if member else "",
            "annotator_gold_accuracy": round(matched / checked, 4) if checked else "",
            "queue_position": annotation.assignment.position,
            "pairwise_swapped": int(annotation.assignment.swapped)
            if item.mode == "pairwise" else "",
            "handed_out_at": annotation.assignment.handed_out_at.isoformat(),
            "submitted_at": annotation.submitted_at.isoformat(),
            "updated_at": annotation.updated_at.isoformat(),
            "time_spent_ms": annotation.time_spent_ms,
            "revisions": annotation.revision_count,
        }
        if draws is not None:
            wave, pi = draws.get(item.pk, ("", ""))
            base.update(handout_wave=wave, inclusion_probability=pi)
        for name, value in taskforms.flatten(annotation.values):
            yield {**base, "field": name, "value": _safe_cell(value),
                   "detail": _safe_cell(taskforms.export_detail(
                       name, annotation.values, _item_quotes(item, quotes_cache)))}
        if progress and (done % 200 == 0 or done == total):
            progress("rows", done, total)
