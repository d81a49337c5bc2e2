"""Starting an LLM evaluator on one submission from its page (docs/llm.md, "From the web").

Staff and study authors choose the evaluator and one of the operator's model profiles
(`LLMEvaluationForm`; never an address or a key), see the
run's token and cost estimate (`llm_run_estimate`: a GET that reads only), and confirm with a
POST that queues the same run `manage.py evaluate --worker` queues (`llm_run_create`); the
browser then follows the job's progress bar on `/jobs/<id>/`. The confirmation page also shows
the user's LLM allowance for the day and, when the run would pass a budget, why it cannot start
(`evaluation.services.spending`); the POST checks again, atomically, and an identical run
already queued or running is followed instead of started twice.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from evaluation.lib.llm import registry
from evaluation.lib.llm.gateway import LLMConfigurationError
from evaluation.models import LLMSpend
from evaluation.services.face_optimization import FaceOptimizationError, face_instructions_resolve
from evaluation.services.llm_models import llm_profile_choices, model_options
from evaluation.services.llm_runs import (
    DuplicateRun,
    LLMRunFailed,
    llm_run_create,
    llm_run_estimate,
)
from evaluation.services.spending import spending_preview

from .access import get_submission_to_evaluate
from .forms import LLMEvaluationForm

_CHOICE_ERRORS = (ValueError, LLMConfigurationError, FaceOptimizationError, LLMRunFailed)


def _form(submission, data=None):
    evaluators = registry.for_protocol(submission.protocol)
    return LLMEvaluationForm(data, evaluators=evaluators, profiles=llm_profile_choices())


def _run_options(form) -> dict:
    """The `llm_run_create`/`llm_run_estimate` keywords of a valid form (raises on a bad one)."""
    data = form.cleaned_data
    face = None
    if "face" in registry.get(data["evaluator"]).options:
        versions = [data["instructions"]] if data["instructions"] else []
        face = {"instructions": face_instructions_resolve(versions)}
    return {"evaluator": data["evaluator"], "model": model_options(profile=data["profile"]),
            "face": face, "limit": data["limit"]}


@login_required
def submission_evaluate(request, uuid):
    """GET: the form; with its fields, the confirmation page with the estimate."""
    submission = get_submission_to_evaluate(request.user, uuid)
    bound = bool(request.GET.get("evaluator"))
    form = _form(submission, request.GET if bound else None)
    context = {"submission": submission, "form": form}
    if bound and form.is_valid():
        try:
            options = _run_options(form)
            context["estimate"] = llm_run_estimate(submission=submission, **options)
        except _CHOICE_ERRORS as exc:
            form.add_error(None, str(exc))
        else:
            context["options"] = options
            context["budget"] = spending_preview(user=request.user, estimate=context["estimate"],
                                                 kind=LLMSpend.Kind.RUN)
            return render(request, "leaderboard/submission_evaluate_confirm.html", context)
    return render(request, "leaderboard/submission_evaluate.html", context,
                  status=400 if bound else 200)


@login_required
@require_POST
def submission_evaluate_start(request, uuid):
    """Queue the confirmed run and follow its progress; a bad choice goes back to the form."""
    submission = get_submission_to_evaluate(request.user, uuid)
    form = _form(submission, request.POST)
    if form.is_valid():
        try:
            run = llm_run_create(submission=submission, user=request.user, enqueue=True,
                                 **_run_options(form))
        except DuplicateRun as twin:
            messages.info(request, str(twin))
            return redirect("job_detail", job_id=twin.run.job_id)
        except _CHOICE_ERRORS as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("job_detail", job_id=run.job_id)
    return render(request, "leaderboard/submission_evaluate.html",
                  {"submission": submission, "form": form}, status=400)

