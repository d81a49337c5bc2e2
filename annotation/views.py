"""Annotation pages: thin views over `access`, `selectors` and `services`.

Annotators: my studies, instructions, the item page (autosave, submit). Authors: create a study,
the dashboard (progress, gold accuracy, flags, members), the long-format export.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import FileResponse, Http404, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluation.jobs import jobs_fail_stale
from evaluation.models import Job

from . import selectors, services
from .access import (
    can_create_studies,
    can_manage_study,
    get_assignment_for_user,
    get_member_for_user,
    get_study_for_user,
)
from .forms import ExclusionForm, MemberAddForm, StudyCreateForm
from .models import Study
from .rendering import render_markdown


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
        raise PermissionDenied("Only study authors can create studies.")
    form = StudyCreateForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        spec = services.StudySpec(
            forms=tuple(data["task_forms"]), include_reference=data["include_reference"],
            submission_ids=tuple(s.pk for s in data["submissions"]),
            splits=tuple(data["splits"]), sample_size=data["sample_size"], seed=data["seed"],
            stratify=data["stratify"] or "", calibration_count=data["calibration_count"],
            gold_count=data["gold_count"])
        try:
            study = services.study_create(
                benchmark=data["benchmark"], author=request.user, title=data["title"], spec=spec,
                instructions=data["instructions"], likert_scales=data["likert_scales"],
                overlap_k=data["overlap_k"], gold_rate=data["gold_rate"],
                gold_pass_threshold=data["gold_pass_threshold"],
                seconds_per_item=data["seconds_per_item"],
                tie_break_extra=data["tie_break_extra"],
                assignment_timeout_minutes=data["assignment_timeout_minutes"])
        except ValidationError as exc:
            for message in exc.messages:
                form.add_error(None, message)
        else:
            messages.success(request, f"Study created with {study.items.count()} items.")
            return redirect("annotation:study_dashboard", slug=study.slug)
    return render(request, "annotation/study_create.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def study_join(request, token):
    study = Study.objects.filter(invite_token=token).first()
    if study is None:
        raise Http404("This invitation link is not valid.")
    if request.method == "POST":
        if services.study_join(token=token, user=request.user) is None:
            raise PermissionDenied("This study is closed.")
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
@require_GET
def study_next(request, slug):
    """Hand out the next item (or give back the unfinished one) and open it."""
    member = get_member_for_user(request.user, slug)
    assignment = services.assignment_next(member=member)
    if assignment is None:
        progress = selectors.member_progress(member=member)
        return render(request, "annotation/study_done.html",
                      {"study": member.study, "member": member, "progress": progress})
    return redirect("annotation:item_detail", slug=slug, position=assignment.position)


def _item_response(request, assignment, *, errors=(), status=200):
    context = selectors.item_page(assignment=assignment)
    context["errors"] = list(errors)
    return render(request, "annotation/item.html", context, status=status)


@login_required
@require_GET
def item_detail(request, slug, position):
    assignment = get_assignment_for_user(request.user, slug, position)
    return _item_response(request, assignment)


@login_required
@require_POST
def item_draft(request, slug, position):
    """Autosave (fetch on every change, and a beacon when the page is hidden)."""
    assignment = get_assignment_for_user(request.user, slug, position, write=True)
    draft = services.draft_save(assignment=assignment, data=request.POST,
                                focused_ms=_focused_ms(request))
    return render(request, "annotation/_save_status.html", {"draft": draft})


@login_required
@require_POST
def item_submit(request, slug, position):
    assignment = get_assignment_for_user(request.user, slug, position, write=True)
    checker = selectors.recommend_quote_checker(assignment.item)
    result = services.annotation_submit(assignment=assignment, data=request.POST,
                                        focused_ms=_focused_ms(request), quote_checker=checker)
    if result.errors:
        services.draft_save(assignment=assignment, data=request.POST,
                            focused_ms=_focused_ms(request))
        assignment = get_assignment_for_user(request.user, slug, position)
        return _item_response(request, assignment, errors=result.errors, status=400)
    if assignment.item.kind == "calibration":
        return redirect("annotation:item_detail", slug=slug, position=position)
    response = HttpResponseRedirect(reverse("annotation:study_next", kwargs={"slug": slug}))
    response.status_code = 303  # See Other: a reload of the next page never re-posts
    return response


# --- the author's side ---------------------------------------------------------------------

@login_required
@require_GET
def study_dashboard(request, slug):
    study = get_study_for_user(request.user, slug, write=True)
    jobs_fail_stale()
    context = {
        "study": study, **selectors.study_dashboard(study=study),
        "invite_url": request.build_absolute_uri(
            reverse("annotation:study_join", kwargs={"token": study.invite_token})),
        "exports": Job.objects.filter(kind=Job.Kind.STUDY_EXPORT, params__study=study.pk)[:5],
        "add_form": MemberAddForm(),
    }
    return render(request, "annotation/study_dashboard.html", context)


@login_required
@require_POST
def study_member_add(request, slug):
    study = get_study_for_user(request.user, slug, write=True)
    form = MemberAddForm(request.POST)
    if form.is_valid():
        services.study_member_add(study=study, user=form.cleaned_data["username"])
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
        services.study_member_set_excluded(member=member, excluded=form.cleaned_data["excluded"],
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
        job = services.study_export_start(study=study, user=request.user)
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
    path = services.export_path(job) if job else None
    if path is None or not path.exists():
        raise Http404("No such export.")
    return FileResponse(path.open("rb"), as_attachment=True, content_type="text/csv",
                        filename=f"{study.slug}-annotations-{job.pk}.csv")
