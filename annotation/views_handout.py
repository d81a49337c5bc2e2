"""A study's hand-out settings (statistics.md, "Label these next: active handout"): its author
(or staff) sets the policy, uniform or active, while the study is open. Thin: the access helper,
the form, the service that checks and stores the choice, the selectors for the page."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation import handout_selectors
from annotation.services import handout_policy

from .access import get_study_for_user
from .forms import HandoutForm


@login_required
@require_http_methods(["GET", "POST"])
def study_handout(request, slug):
    study = get_study_for_user(request.user, slug, write=True)
    initial = {"handout_policy": study.handout_policy,
               "handout_evaluator": study.handout_evaluator,
               "handout_metric": study.handout_metric, "handout_aspect": study.handout_aspect,
               "handout_budget": study.handout_budget}
    form = HandoutForm(request.POST if request.method == "POST" else None, initial=initial)
    form.fields["handout_policy"].required = True  # here the policy is what is being set
    if request.method == "POST" and form.is_valid():
        try:
            study = handout_policy.handout_policy_set(study=study, choice=form.handout_choice())
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, f"The study now hands items out by the "
                                      f"{study.handout_policy} policy.")
            return redirect("annotation:study_dashboard", slug=study.slug)
    context = {"study": study, "form": form,
               "choices": handout_selectors.handout_choices(study=study),
               "aspects": sorted(handout_selectors.aspect_fields(study)),
               "status": handout_selectors.handout_status(study=study)}
    return render(request, "annotation/study_handout.html", context,
                  status=400 if request.method == "POST" else 200)
