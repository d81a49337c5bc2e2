"""Annotation pages: thin views over `access`, `selectors` and `services`.

Annotators: my studies, instructions, the item page (autosave, submit). Authors: create a study,
the dashboard (progress, gold accuracy, flags, members), the long-format export.
"""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import FileResponse, Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import (
    arena_studies,
    face_selectors,
    handout_selectors,
    report_selectors,
    selectors,
)
from annotation.lib import exports, label_plan, reports
from annotation.lib.rendering import render_markdown
from annotation.lib.report_plan import report_plan
from annotation.services import annotations, handout, members, studies, study_exports
from core.roles import STUDY_AUTHOR, role_needed
from evaluation.access import arenas_for_user
from evaluation.lib import charts
from evaluation.lib.metrics import reference_free
from evaluation.models import Job

from .access import (
    can_create_studies,
    can_manage_study,
    get_assignment_for_user,
    get_member_for_user,
    get_study_for_metric_board,
    get_study_for_user,
)
from .forms import ArenaStudyForm, ExclusionForm, MemberAddForm, StudyCreateForm
from .models import Study


def _focused_ms(request) -> int:
    try:
        return max(0, min(int(request.POST.get("focused_ms", 0)), 24 * 3600 * 1000))
    except ValueError:
        return 0


# --- lists, creation, joining --------------------------------------------------------------

@login_required
@require_GET
def study_list(request):
    context = {
        "memberships": selectors.memberships_for_user(user=request.user),
        "authored": selectors.authored_studies(user=request.user)
        if can_create_studies(request.user) else None,
        "can_create": can_create_studies(request.user),
    }
    return render(request, "annotation/study_list.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def study_create(request):
    if not can_create_studies(request.user):
        raise PermissionDenied(role_needed("Creating studies", STUDY_AUTHOR))
    form = StudyCreateForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        spec = studies.StudySpec(
            forms=tuple(data["task_forms"]), include_reference=data["include_reference"],
            submission_ids=tuple(s.pk for s in data["submissions"]),
            splits=tuple(data["splits"]), sample_size=data["sample_size"], seed=data["seed"],
            stratify=data["stratify"] or "", calibration_count=data["calibration_count"],
            gold_count=data["gold_count"])
        try:
            study = studies.study_create(
                benchmark=data["benchmark"], author=request.user, title=data["title"], spec=spec,
                instructions=data["instructions"], likert_scales=data["likert_scales"],
                overlap_k=data["overlap_k"], gold_rate=data["gold_rate"],
                gold_pass_threshold=data["gold_pass_threshold"],
                seconds_per_item=data["seconds_per_item"],
                tie_break_extra=data["tie_break_extra"],
                assignment_timeout_minutes=data["assignment_timeout_minutes"],
                handout=form.handout_choice())
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, f"Study created with {study.items.count()} items.")
            return redirect("annotation:study_dashboard", slug=study.slug)
    return render(request, "annotation/study_create.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def arena_study_create(request, arena):
    """A study whose items are the conversations of an arena's voted battles."""
    if not can_create_studies(request.user):
        raise PermissionDenied(role_needed("Creating studies", STUDY_AUTHOR))
    arena = arenas_for_user(request.user).filter(slug=arena).select_related("benchmark").first()
    if arena is None:
        raise Http404("No such arena.")
    form = ArenaStudyForm(request.POST or None,
                          initial={"title": f"{arena.name}: battle conversations",
                                   "seconds_per_item": 240})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            study = arena_studies.arena_study_create(
                arena=arena, author=request.user, title=data["title"],
                forms=tuple(data["task_forms"]), sample_size=data["sample_size"],
                seed=data["seed"], overlap_k=data["overlap_k"],
                instructions=data["instructions"], seconds_per_item=data["seconds_per_item"],
                assignment_timeout_minutes=data["assignment_timeout_minutes"])
        except ValidationError as exc:
            for message in exc.messages:
                form.add_error(None, message)
        else:
            messages.success(request, f"Study created with {study.items.count()} items from "
                                      f"{study.config['battles']} battles.")
            return redirect("annotation:study_dashboard", slug=study.slug)
    return render(request, "annotation/arena_study_create.html",
                  {"form": form, "arena": arena,
                   "voted": arena.battles.filter(status="voted").count()})


@login_required
@require_http_methods(["GET", "POST"])
def study_join(request, token):
    study = Study.objects.filter(invite_token=token).first()
    if study is None:
        raise Http404("This invitation link is not valid.")
    if request.method == "POST":
        if members.study_join(token=token, user=request.user) is None:
            raise PermissionDenied("This study is closed: it takes no new members. Ask its author "
                                   "to reopen it.")
        return redirect("annotation:study_detail", slug=study.slug)
    return render(request, "annotation/study_join.html", {"study": study})


# --- the annotator's side ------------------------------------------------------------------

@login_required
@require_GET
def study_detail(request, slug):
    """Instructions, the annotator's progress and the start button."""
    study = get_study_for_user(request.user, slug)
    member = study.members.filter(user=request.user).first()
    context = {
        "study": study, "member": member,
        "instructions": mark_safe(render_markdown(study.instructions)),  # noqa: S308 (sanitized)
        "progress": selectors.member_progress(member=member) if member else None,
        "can_manage": can_manage_study(request.user, study),
    }
    return render(request, "annotation/study_detail.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def study_next(request, slug):
    """POST hands out the next item (or gives back the unfinished one) and opens it. GET is a
    read: it opens the item the annotator holds, or offers the button that asks for one (and,
    after `?done=1`, says that nothing is left right now)."""
    member = get_member_for_user(request.user, slug)
    if request.method == "POST":
        return _open_next(member)
    assignment = selectors.held_assignment(member=member)
    if assignment is not None:
        return redirect("annotation:item_detail", slug=slug, position=assignment.position)
    return render(request, "annotation/study_next.html", {
        "study": member.study, "member": member, "done": request.GET.get("done") == "1",
        "progress": selectors.member_progress(member=member)})


def _open_next(member) -> HttpResponseRedirect:
    """Hand out the member's next item and redirect to it, or to the "nothing left" page; 303
    See Other, so that a reload of the page it leads to never re-posts."""
    assignment = handout.assignment_next(member=member)
    slug = member.study.slug
    if assignment is None:
        url = reverse("annotation:study_next", kwargs={"slug": slug}) + "?done=1"
    else:
        url = reverse("annotation:item_detail", kwargs={"slug": slug,
                                                        "position": assignment.position})
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response


def _item_body(context: dict) -> tuple[str, str]:
    return (render_to_string("annotation/_item_main.html", context),
            render_to_string("annotation/_item_panel.html", context))


def _item_response(request, assignment, *, errors=(), status=200):
    context = selectors.item_page(assignment=assignment, render_body=_item_body)
    context["errors"] = list(errors)
    return render(request, "annotation/item.html", context, status=status)


@login_required
@require_GET
def item_detail(request, slug, position):
    assignment = get_assignment_for_user(request.user, slug, position)
    return _item_response(request, assignment, errors=_carried_errors(request, assignment))


ITEM_ERRORS_SALT = "annotation.item-errors"


def _carried_errors(request, assignment) -> list[str]:
    """The refusal reasons a failed submit redirected here with (post/redirect/get: reloading
    the page shows them again instead of posting the form a second time). Signed, so a link
    cannot put words of its own on the page; tied to the assignment."""
    token = request.GET.get("errors")
    if not token:
        return []
    try:
        carried = signing.loads(token, salt=ITEM_ERRORS_SALT, max_age=24 * 3600)
    except signing.BadSignature:
        return []
    if not isinstance(carried, dict) or carried.get("assignment") != assignment.pk:
        return []
    return [str(e) for e in carried.get("errors", [])][:50]


@login_required
@require_POST
def item_draft(request, slug, position):
    """Autosave: htmx posts the form on every change (item.html), a beacon when the page is
    hidden; the reply is the save-status fragment htmx swaps in."""
    assignment = get_assignment_for_user(request.user, slug, position, write=True)
    draft = annotations.draft_save(assignment=assignment, data=request.POST,
                                   focused_ms=_focused_ms(request))
    return render(request, "annotation/_save_status.html", {"draft": draft})


@login_required
@require_POST
def item_submit(request, slug, position):
    assignment = get_assignment_for_user(request.user, slug, position, write=True)
    checker = selectors.recommend_quote_checker(assignment.item)
    result = annotations.annotation_submit(assignment=assignment, data=request.POST,
                                           focused_ms=_focused_ms(request), quote_checker=checker)
    if result.errors:
        # The answers are kept as the draft; the page that explains the refusal is a GET
        # (303), so reloading it never posts the form again.
        annotations.draft_save(assignment=assignment, data=request.POST,
                               focused_ms=_focused_ms(request))
        token = signing.dumps({"assignment": assignment.pk, "errors": list(result.errors)},
                              salt=ITEM_ERRORS_SALT, compress=True)
        url = reverse("annotation:item_detail", kwargs={"slug": slug, "position": position})
        response = HttpResponseRedirect(f"{url}?{urlencode({'errors': token})}")
        response.status_code = 303
        return response
    if assignment.item.kind == "calibration":
        return redirect("annotation:item_detail", slug=slug, position=position)
    # 307 keeps the POST: the browser asks `study_next` to hand out the next item, a write that
    # a GET may not do, and this request stays within its query budget (docs/hot-path.md).
    response = HttpResponseRedirect(reverse("annotation:study_next", kwargs={"slug": slug}))
    response.status_code = 307
    return response


# --- the author's side ---------------------------------------------------------------------

@login_required
@require_GET
def study_dashboard(request, slug):
    study = get_study_for_user(request.user, slug, write=True)
    context = {
        "study": study, **selectors.study_dashboard(study=study),
        "handout": handout_selectors.handout_status(study=study),
        "invite_url": request.build_absolute_uri(
            reverse("annotation:study_join", kwargs={"token": study.invite_token})),
        "exports": Job.objects.filter(kind=Job.Kind.STUDY_EXPORT, params__study=study.pk)
        .exclude(params__format=study_exports.BUNDLE)[:1],
        "bundles": Job.objects.filter(kind=Job.Kind.STUDY_EXPORT, params__study=study.pk,
                                      params__format=study_exports.BUNDLE)[:1],
        "add_form": MemberAddForm(),
    }
    return render(request, "annotation/study_dashboard.html", context)


@login_required
@require_POST
def study_member_add(request, slug):
    study = get_study_for_user(request.user, slug, write=True)
    form = MemberAddForm(request.POST)
    if form.is_valid():
        members.study_member_add(study=study, user=form.cleaned_data["username"])
        messages.success(request, f"{form.cleaned_data['username']} is now an annotator.")
    else:
        messages.error(request, "; ".join(form.errors.get("username", ["Invalid."])))
    return redirect("annotation:study_dashboard", slug=slug)


@login_required
@require_POST
def study_member_exclude(request, slug, member_id):
    study = get_study_for_user(request.user, slug, write=True)
    member = study.members.filter(pk=member_id).select_related("user").first()
    if member is None:
        raise Http404("No such annotator.")
    form = ExclusionForm(request.POST)
    if form.is_valid():
        members.study_member_set_excluded(member=member, excluded=form.cleaned_data["excluded"],
                                          reason=form.cleaned_data["reason"])
    if request.htmx:
        context = {"study": study, **selectors.study_dashboard(study=study),
                   "exclusion_errors": {member.pk: form.errors.get("reason")}}
        return render(request, "annotation/_annotators.html", context,
                      status=200 if form.is_valid() else 400)
    if not form.is_valid():
        messages.error(request, "Say why the annotator is excluded.")
    return redirect("annotation:study_dashboard", slug=slug)


@login_required
@require_http_methods(["GET", "POST"])
def study_export(request, slug):
    """POST starts an export job; GET (?job=) shows its progress, polled by HTMX."""
    study = get_study_for_user(request.user, slug, write=True)
    if request.method == "POST":
        bundle = request.POST.get("format") == study_exports.BUNDLE
        job = study_exports.study_export_start(study=study, user=request.user, bundle=bundle)
    else:
        job = (Job.objects.filter(kind=Job.Kind.STUDY_EXPORT, params__study=study.pk,
                                  pk=request.GET.get("job") or 0).first()
               if (request.GET.get("job") or "").isdigit() else None)
        if job is None:
            raise Http404("No such export.")
    if request.htmx:
        return render(request, "annotation/_export_status.html", {"study": study, "job": job})
    return redirect("annotation:study_dashboard", slug=slug)


@login_required
@require_GET
def study_export_download(request, slug, job_id):
    study = get_study_for_user(request.user, slug, write=True)
    job = Job.objects.filter(kind=Job.Kind.STUDY_EXPORT, params__study=study.pk, pk=job_id,
                             status=Job.Status.SUCCEEDED).first()
    path = study_exports.export_path(job) if job else None
    if path is None or not path.exists():
        raise Http404("No such export.")
    if study_exports.export_is_bundle(job):
        return FileResponse(path.open("rb"), as_attachment=True, content_type="application/zip",
                            filename=f"{study.slug}-paper-bundle-{job.pk}.zip")
    return FileResponse(path.open("rb"), as_attachment=True, content_type="text/csv",
                        filename=f"{study.slug}-annotations-{job.pk}.csv")


# --- reports (statistics.md; authors and staff) and metric leaderboards ----------------------

CONTENT_TYPES = {"json": "application/json", "csv": "text/csv", "latex": "application/x-tex"}
SUFFIXES = {"json": "json", "csv": "csv", "latex": "tex"}


def _correlation_choice(request, study) -> tuple[list[str], str, str, list[str]]:
    """The evaluators on offer, the chosen one and grouping (?evaluator=, ?by=)."""
    evaluators = report_selectors.study_evaluators(study=study)
    keys = report_selectors.grouping_keys(benchmark=study.benchmark)
    evaluator = request.GET.get("evaluator") or ""
    try:
        evaluator = report_selectors.resolve_evaluator(benchmark=study.benchmark,
                                                       name=evaluator) if evaluator else ""
        by = report_selectors.resolve_grouping(benchmark=study.benchmark,
                                               by=request.GET.get("by") or "")
    except ValueError as exc:
        raise Http404(str(exc)) from None
    if evaluator and evaluator not in evaluators:  # asked for by name: shown, with what it lacks
        evaluators = [*evaluators, evaluator]
    return evaluators, evaluator or (evaluators[0] if evaluators else ""), by, keys


def _anchored_section(study, evaluator: str, aspect: str, metric: str, *,
                      include_private: bool = True) -> dict | None:
    """The human-anchored (PPI++) scores of the chosen metric against the chosen aspect: the
    per-system table, the differences and a forest of the PPI++ and human-only intervals."""
    if not (aspect and metric):
        return None
    report = report_selectors.study_anchored(study=study, evaluator=evaluator, aspect=aspect,
                                             metric=metric, include_private=include_private)
    systems, differences, *draws = exports.anchored_tables(report)
    short = report.get("estimator_short", "PPI++")
    rows = [(f"{row['display']} · {name}", part["mean"], part["ci"][0], part["ci"][1], filled)
            for row in report["systems"] if row["ppi"]["mean"] is not None
            for name, part, filled in ((short, row["ppi"], True),
                                       ("human", row["human_only"], False))]
    centre = sum(r[1] for r in rows) / len(rows) if rows else 0.0
    forest = charts.forest([(label, value - centre, None if low is None else low - centre,
                             None if high is None else high - centre, filled)
                            for label, value, low, high, filled in rows],
                           centre=centre, digits=2) if rows else None
    plan = {**report["label_plan"], "chart": label_plan.plan_chart(report["label_plan"])}
    return {"report": report, "systems": exports.display_table(systems),
            "differences": exports.display_table(differences), "forest": forest, "plan": plan,
            "draws": exports.display_table(draws[0]) if draws else None,
            "query": urlencode({"evaluator": evaluator, "aspect": aspect, "metric": metric})}


def _charts(plots: list[dict], rows: dict) -> list[dict]:
    """Each plot's scatter (metric against the human mean per unit) and sample-efficiency curve
    (evaluation.lib.charts), with its item-level correlation row."""
    return [{**plot, "chart": (chart := charts.scatter(
                 [charts.ScatterPoint("", x, y, group=group) for x, y, group in plot["points"]],
                 x_label=plot["metric"], y_label=f"human {plot['aspect_label']} (mean)",
                 width=420, height=300, margins=(52, 12, 12, 44))),
             # thousands of circles: one format_html_join, not a template loop (≈ 10x faster)
             "circles": format_html_join("", '<circle class="pt" cx="{}" cy="{}" r="3" '
                                         'fill="{}"/>', ((p["cx"], p["cy"], p["fill"])
                                                        for p in chart["points"])),
             "curve": charts.curve(
                 [(p["dialogues_per_system"], p["mean"], p["ci_low"], p["ci_high"])
                  for p in plot["efficiency"]],
                 x_label=f"{plot['unit_type']}s per system", y_label="Spearman ρ"),
             "row": rows.get((plot["metric"], plot["aspect"]))}
            for plot in plots if len(plot["points"]) >= 3]


def _rows_with_data(table: dict) -> dict:
    """The page leaves out correlation rows with no shared unit (they say nothing yet) and says
    how many; the downloads keep every row."""
    if "n" not in table["keys"]:
        return table
    column = table["keys"].index("n")
    rows = [row for row in table["rows"] if row[column]["text"] not in ("0", "—", "")]
    return {**table, "rows": rows, "left_out": len(table["rows"]) - len(rows)}


def _heatmaps(coupling: dict) -> list[dict]:
    labels = coupling.get("labels", {})
    return [{**rater, "chart": charts.heatmap([labels.get(f, f) for f in rater["factors"]],
                                              rater["values"], rater["n"])}
            for rater in coupling.get("raters", [])]


@login_required
@require_GET
def study_report(request, slug):
    """The headline numbers first (alpha per field, the chosen evaluator's headline metrics
    against the chosen aspect), the other tables collapsed, plots of the chosen metric only.
    Filters are GET parameters (?evaluator=, ?aspect=, ?by=, ?metric=); every correlation row
    (all aspects, subsets and sensitivity variants) is computed when asked for (?rows=all, or
    opening its section: htmx). htmx requests get the correlation section alone."""
    study = get_study_for_user(request.user, slug, write=True)
    evaluators, evaluator, by, keys = _correlation_choice(request, study)
    agreement = None if request.htmx else report_selectors.study_agreement(study=study)
    # a new study: what will appear, not dashes
    if agreement is not None and not agreement["study"]["counts"]["labels"]:
        return render(request, "annotation/report_empty.html", {
            "study": study, "plan": report_plan(
                forms=list(study.forms or ()), overlap_k=study.overlap_k,
                items=agreement["study"]["counts"].get("items", 0),
                evaluators=len(evaluators))})
    every_row = request.GET.get("rows") == "all"
    context = {"study": study, "evaluators": evaluators, "evaluator": evaluator, "by": by,
               "grouping_keys": keys, "every_row": every_row,
               "efficiency_repeats": reports.EFFICIENCY_REPEATS, "formats": exports.FORMATS}
    if evaluator:
        headline = report_selectors.study_correlation_headline(
            study=study, evaluator=evaluator, aspect=request.GET.get("aspect", ""))
        aspect, pairs = headline["aspect"], headline["pairs"]
        metrics = list(dict.fromkeys(p["metric"] for p in pairs if p["aspect"] == aspect))
        firsts = [name for name in metrics if reports.is_headline(evaluator, name)]
        metric = request.GET.get("metric", "")
        metric = metric if metric in metrics else (firsts or metrics or [""])[0]
        labels = {name: spec.title
                  for name, spec in report_selectors.study_field_specs(study=study).items()}
        rows = {(row["metric"], row["aspect"]): row for row in headline["item_level"]}
        plots = report_selectors.study_scatter(study=study, evaluator=evaluator, aspect=aspect,
                                               metrics=[metric], by=by) if metric else []
        context.update({
            "aspects": [(name, labels.get(name, name)) for name in headline["aspects"]],
            "aspect": aspect, "metric": metric, "headline_metrics": firsts,
            "variant_metrics": [name for name in metrics if name not in firsts],
            "headline": _rows_with_data(exports.display_table(
                exports.correlation_headline_table(headline, aspect,
                                                   label=labels.get(aspect, aspect)))),
            "query": urlencode({"evaluator": evaluator, "aspect": aspect, "by": by,
                                "metric": metric}),
            "scatters": _charts(plots, rows),
            "pair_count": len(pairs),
            "anchored": _anchored_section(study, evaluator, aspect, metric),
        })
        if every_row:
            correlation = report_selectors.study_correlation(study=study, evaluator=evaluator,
                                                             by=by)
            context["correlation_tables"] = [_rows_with_data(exports.display_table(t))
                                             for t in exports.correlation_tables(correlation)]
    if request.htmx:
        return render(request, "annotation/_report_correlation.html", context)
    context.update({
        "agreement": agreement, "snapshot": agreement["study"],
        "agreement_headline": exports.display_table(exports.agreement_headline_table(agreement)),
        "tables": {t.name: exports.display_table(t)
                   for t in exports.agreement_tables(agreement)},
        "heatmaps": _heatmaps(report_selectors.study_coupling(study=study)),
    })
    return render(request, "annotation/report.html", context)


def _download(text: str, fmt: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type=f"{CONTENT_TYPES[fmt]}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.{SUFFIXES[fmt]}"'
    return response


@login_required
@require_GET
def study_report_download(request, slug, kind, fmt):
    """The report's numbers as JSON, CSV or LaTeX (what `agreement` / `correlate` print)."""
    study = get_study_for_user(request.user, slug, write=True)
    if fmt not in exports.FORMATS or kind not in ("agreement", "correlation", "anchored"):
        raise Http404("No such download.")
    if kind == "agreement":
        report = report_selectors.study_agreement(study=study)
        return _download(exports.render(report, exports.agreement_tables(report), fmt), fmt,
                         f"{study.slug}-agreement")
    _, evaluator, by, _ = _correlation_choice(request, study)
    if not evaluator:
        raise Http404("No evaluator has runs on this benchmark.")
    if kind == "anchored":
        return _anchored_download(request, study, evaluator, fmt)
    report = report_selectors.study_correlation(study=study, evaluator=evaluator, by=by)
    name = f"{study.slug}-correlation-{evaluator.replace(':', '-')}" + (f"-by-{by}" if by else "")
    return _download(exports.render(report, exports.correlation_tables(report), fmt), fmt, name)


def _anchored_download(request, study, evaluator: str, fmt: str) -> HttpResponse:
    """The human-anchored scores of ?aspect= and ?metric= (default: named like the aspect)."""
    try:
        aspect, metric = report_selectors.anchored_choice(
            study=study, evaluator=evaluator, aspect=request.GET.get("aspect", ""),
            metric=request.GET.get("metric", ""))
    except ValueError as exc:
        raise Http404(str(exc)) from None
    report = report_selectors.study_anchored(study=study, evaluator=evaluator, aspect=aspect,
                                             metric=metric)
    name = f"{study.slug}-anchored-{evaluator.replace(':', '-')}-{metric}-{aspect}"
    return _download(exports.render(report, exports.anchored_tables(report), fmt), fmt, name)


@require_GET
def metric_board_index(request):
    """Human-labelled data sets with a metric leaderboard the visitor may see."""
    studies = report_selectors.metric_board_studies(user=request.user)
    return render(request, "annotation/metric_board_index.html", {"studies": studies})


def _board(request, study) -> tuple[dict, list]:
    fields = [spec for spec in report_selectors.study_field_specs(study=study).values()
              if spec.is_numeric]
    names = [spec.name for spec in fields]
    aspect = request.GET.get("aspect") or ""
    if aspect and aspect not in names:
        raise Http404("No such aspect.")
    aspect = aspect or next((n for n in names if "overall" in n), names[0] if names else "")
    if not aspect:
        return {}, fields
    board = report_selectors.study_metric_leaderboard(
        study=study, aspect=aspect, include_private=can_manage_study(request.user, study))
    return board, fields


@require_GET
def metric_board(request, slug):
    """Evaluators ranked by their correlation with the study's human labels, per aspect."""
    study = get_study_for_metric_board(request.user, slug)
    board, fields = _board(request, study)
    order = request.GET.get("sort") or "correlation"
    if order not in reports.BOARD_ORDERS:
        raise Http404("No such order.")
    for row in board.get("rows", []):
        row["bar"] = _ci_bar(row)
    context = {"study": study, "board": board, "fields": fields, "order": order,
               "orders": reports.BOARD_ORDERS, "rows": reports.order_metric_board(board, order),
               "can_manage": can_manage_study(request.user, study),
               "public": report_selectors.metric_board_is_public(study),
               "formats": exports.FORMATS,
               "reference_free": any(row["evaluator"] == reference_free.EVALUATOR
                                     for row in board.get("rows", []))}
    return render(request, "annotation/metric_board.html", context)


def _ci_bar(row: dict) -> dict | None:
    """Percent positions of a correlation and its CI on a −1 … 1 axis."""
    if row.get("value") is None:
        return None
    low = row["ci_low"] if row.get("ci_low") is not None else row["value"]
    high = row["ci_high"] if row.get("ci_high") is not None else row["value"]
    return {"value": round((row["value"] + 1) * 50, 2), "low": round((low + 1) * 50, 2),
            "width": round((high - low) * 50, 2)}


@require_GET
def metric_board_anchored(request, slug):
    """The human-anchored (PPI++) system scores of ?evaluator='s ?metric= on the human ?aspect=
    (the leaderboard's optional view, linked from its trust row), as visible as the study's
    metric leaderboard; published runs only for who does not manage the study."""
    study = get_study_for_metric_board(request.user, slug)
    try:
        evaluator = report_selectors.resolve_evaluator(
            benchmark=study.benchmark, name=request.GET.get("evaluator", ""))
        aspect, metric = report_selectors.anchored_choice(
            study=study, evaluator=evaluator, aspect=request.GET.get("aspect", ""),
            metric=request.GET.get("metric", ""))
    except ValueError as exc:
        raise Http404(str(exc)) from None
    manages = can_manage_study(request.user, study)
    section = _anchored_section(study, evaluator, aspect, metric, include_private=manages)
    if not manages and section:  # an active study's items and their labels: the author's
        section["draws"] = None
    return render(request, "annotation/metric_board_anchored.html", {
        "study": study, "can_manage": manages, "formats": exports.FORMATS,
        "anchored": section})


@require_GET
def metric_board_download(request, slug, fmt):
    study = get_study_for_metric_board(request.user, slug)
    if fmt not in exports.FORMATS:
        raise Http404("No such format.")
    board, _ = _board(request, study)
    if not board:
        raise Http404("This study has no numeric field.")
    return _download(exports.render(board, [exports.metric_board_table(board)], fmt), fmt,
                     f"{study.slug}-metric-leaderboard-{board['aspect']}")


# --- FACE trained on the study's labels ----------------------------------------------------


@login_required
@require_GET
def study_face(request, slug):
    """The study's FACE instruction optimizations and the forms to start one or to evaluate."""
    study = get_study_for_user(request.user, slug, write=True)
    return _study_face_page(request, study)


def _study_face_page(request, study, status: int = 200, **extra):
    return render(request, "annotation/study_face.html", {
        "study": study, "aspects": face_selectors.trainable_aspects(study=study),
        "optimizations": face_selectors.study_face_optimizations(study=study),
        "defaults": FACE_DEFAULTS, **extra}, status=status)


FACE_DEFAULTS = {"iterations": 3, "beam": 2, "candidates": 4, "gradients": 2, "seed": 0}


@login_required
@require_POST
def study_face_optimize(request, slug):
    """Queue FACE instruction optimization of one aspect on the study's labels: first its
    estimate against the user's LLM allowance, then (with `confirm`) the job."""
    study = get_study_for_user(request.user, slug, write=True)
    from evaluation.lib.llm.gateway import LLMConfigurationError
    from evaluation.models import LLMSpend
    from evaluation.services.face_optimization import (
        FaceOptimizationError,
        face_optimization_create,
        face_optimization_estimate,
    )
    from evaluation.services.llm_models import model_options
    from evaluation.services.spending import spending_preview

    try:
        params = {name: int(request.POST.get(name, default))
                  for name, default in FACE_DEFAULTS.items()}
        aspect = request.POST.get("aspect", "")
        if "confirm" not in request.POST:
            estimate = face_optimization_estimate(study=study.slug, aspect=aspect,
                                                  model=model_options(), **params)
            return _study_face_page(request, study, face_choice={"aspect": aspect, **params},
                                    budget=spending_preview(
                                        user=request.user, estimate=estimate,
                                        kind=LLMSpend.Kind.FACE_OPTIMIZATION))
        optimization = face_optimization_create(
            study=study.slug, aspect=aspect, model=model_options(), user=request.user,
            **params)
    except (ValueError, FaceOptimizationError, LLMConfigurationError) as exc:
        messages.error(request, f"FACE optimization not started: {exc}")
        return redirect("annotation:study_face", slug=study.slug)
    messages.success(request, f"FACE {optimization.name} queued.")
    return redirect("job_detail", job_id=optimization.job_id)


@login_required
@require_POST
def study_face_evaluate(request, slug):
    """Queue FACE runs with an instruction version on every log submission of the benchmark."""
    study = get_study_for_user(request.user, slug, write=True)
    from evaluation.lib.llm.gateway import LLMConfigurationError
    from evaluation.services.face_optimization import FaceOptimizationError, face_runs_create
    from evaluation.services.llm_models import model_options

    version = request.POST.get("version", "")
    try:
        runs = face_runs_create(benchmark=study.benchmark, versions=[version],
                                model=model_options(), user=request.user)
    except (ValueError, FaceOptimizationError, LLMConfigurationError) as exc:
        messages.error(request, f"FACE evaluation not started: {exc}")
    else:
        messages.success(request, f"{len(runs)} FACE run{'s' if len(runs) != 1 else ''} queued "
                                  f"with {version}; their results join the report when done.")
    return redirect("annotation:study_face", slug=study.slug)


@login_required
@require_POST
def study_face_resume(request, slug, optimization_id):
    """Continue a stopped optimization after its last finished iteration."""
    study = get_study_for_user(request.user, slug, write=True)
    from evaluation.models import FaceOptimization
    from evaluation.services.face_optimization import face_optimization_restart

    optimization = FaceOptimization.objects.filter(
        pk=optimization_id, study_slug=study.slug, benchmark=study.benchmark).first()
    if optimization is None:
        raise Http404("No such FACE optimization.")
    if optimization.job is not None and not optimization.job.is_finished:
        messages.error(request, f"FACE {optimization.name} is still running.")
        return redirect("annotation:study_face", slug=study.slug)
    try:
        job = face_optimization_restart(optimization=optimization, user=request.user)
    except ValueError as exc:  # over an LLM budget, or the study's labels are gone
        messages.error(request, f"FACE {optimization.name} not continued: {exc}")
        return redirect("annotation:study_face", slug=study.slug)
    return redirect("job_detail", job_id=job.pk)
