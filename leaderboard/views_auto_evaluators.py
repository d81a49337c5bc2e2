"""A leaderboard's automatic LLM evaluators (docs/llm.md, "Automatic runs on new submissions").

Staff choose per benchmark which LLM evaluators run on every new upload, with which model and
within which budgets (`/benchmarks/<slug>/auto-evaluators/`), and approve or reject the runs
that wait because their estimate would exceed a budget (from the submission's page or that
list). Everyone else gets 403 (404 for what they cannot see).
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from evaluation.models import AutoEvaluator
from evaluation.services.auto_evaluation import (
    CHOICE_ERRORS,
    auto_evaluation_approve,
    auto_evaluation_reject,
    auto_evaluator_delete,
    auto_evaluator_save,
)

from .access import get_auto_evaluation_to_decide, get_benchmark_to_operate
from .forms import AutoEvaluatorForm
from .selectors.auto_evaluations import benchmark_auto_evaluators


@login_required
def auto_evaluators(request, slug):
    """GET: the configured evaluators per protocol, the waiting runs, the form; POST: save."""
    benchmark = get_benchmark_to_operate(request.user, slug)
    page = benchmark_auto_evaluators(benchmark=benchmark)
    form = AutoEvaluatorForm(request.POST or None, evaluators=page["evaluators"])
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                auto_evaluator_save(benchmark=benchmark, user=request.user, **data)
            except CHOICE_ERRORS as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"{data['evaluator']} runs on new submissions of "
                                          f"{benchmark.name} with {data['model']}.")
                return redirect("leaderboard:auto_evaluators", benchmark.slug)
        status = 400
    return render(request, "leaderboard/auto_evaluators.html",
                  {"benchmark": benchmark, "form": form, **page}, status=status)


@login_required
@require_POST
def auto_evaluator_remove(request, slug, pk):
    benchmark = get_benchmark_to_operate(request.user, slug)
    config = get_object_or_404(AutoEvaluator, pk=pk, benchmark=benchmark)
    auto_evaluator_delete(auto_evaluator=config, user=request.user)
    messages.success(request, f"{config.evaluator} no longer runs on new submissions.")
    return redirect("leaderboard:auto_evaluators", benchmark.slug)


def _back(request, evaluation) -> str:
    target = request.POST.get("next", "")
    board = reverse("leaderboard:auto_evaluators", args=[evaluation.submission.benchmark.slug])
    return board if target == "operator" else reverse("leaderboard:submission_detail",
                                                      args=[evaluation.submission.uuid])


@login_required
@require_POST
def auto_evaluation_decide(request, pk, decision):
    """Approve (queue the run as estimated) or reject a waiting automatic run."""
    evaluation = get_auto_evaluation_to_decide(request.user, pk)
    try:
        if decision == "approve":
            evaluation = auto_evaluation_approve(evaluation=evaluation, user=request.user)
            messages.success(request, f"{evaluation.evaluator} started (run "
                                      f"#{evaluation.run_id}).")
        else:
            auto_evaluation_reject(evaluation=evaluation, user=request.user)
            messages.success(request, f"{evaluation.evaluator} will not run.")
    except CHOICE_ERRORS as exc:
        messages.error(request, str(exc))
    return redirect(_back(request, evaluation))
