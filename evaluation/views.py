"""Benchmark pages: list, overview, dialogue viewer, item page."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from evaluation.lib.llm.registry import is_llm_evaluator
from evaluation.selectors import benchmarks as selectors
from evaluation.selectors.arena import arena_of_benchmark
from evaluation.selectors.downloads import benchmark_public_download as public_download
from evaluation.selectors.downloads import benchmark_sample_download
from evaluation.selectors.simulations import simulation_job_summary, simulation_report
from evaluation.services import runs as run_services
from evaluation.services.jobs import job_retry
from evaluation.services.simulations import simulation_cancel

from .access import (
    benchmarks_for_user,
    can_manage_benchmark,
    can_see_hidden_units,
    can_see_simulation_hidden,
    can_write_run,
    get_benchmark_for_user,
    get_dialogue_for_user,
    get_item_for_user,
    get_job_for_user,
    get_run_for_user,
    get_simulation_for_user,
)
from .models import Simulation, Split


def home(request):
    benchmarks = benchmarks_for_user(request.user)
    return render(request, "evaluation/home.html", {"benchmarks": benchmarks})


def benchmark_list(request):
    benchmarks = benchmarks_for_user(request.user)
    rows = [(b, selectors.benchmark_summary(benchmark=b, include_hidden=False)) for b in benchmarks]
    return render(request, "evaluation/benchmark_list.html", {"rows": rows})


def benchmark_detail(request, slug):
    benchmark = get_benchmark_for_user(request.user, slug)
    include_hidden = can_manage_benchmark(request.user, benchmark)
    split = request.GET.get("split") or None
    difficulty = request.GET.get("difficulty") or None
    if split == Split.HIDDEN and not include_hidden:
        split = None
    dialogues = selectors.dialogue_list(benchmark=benchmark, include_hidden=include_hidden,
                                        split=split, difficulty=difficulty)
    page = Paginator(dialogues, 25).get_page(request.GET.get("page"))
    context = {
        "benchmark": benchmark,
        "summary": selectors.benchmark_summary(benchmark=benchmark, include_hidden=include_hidden),
        "page": page,
        "split": split,
        "difficulty": difficulty,
        "public_splits": selectors.public_splits(benchmark),
        "battle_arena": arena_of_benchmark(benchmark),
    }
    if request.htmx:
        return render(request, "evaluation/_dialogue_table.html", context)
    return render(request, "evaluation/benchmark_detail.html", context)


def attachment(body: bytes | str, filename: str, content_type: str) -> HttpResponse:
    """A download, never rendered as a page (the file holds text written by others)."""
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


def benchmark_public_download(request, slug):
    """The public part of the benchmark as a bundle .zip (no hidden gold, formats.md §1)."""
    benchmark = get_benchmark_for_user(request.user, slug)
    filename, body = public_download(benchmark=benchmark)
    return attachment(body, filename, "application/zip")


def benchmark_sample_submission(request, slug):
    """A valid `turn` submission for the public splits, made by the TF-IDF reference baseline."""
    benchmark = get_benchmark_for_user(request.user, slug)
    filename, body = benchmark_sample_download(benchmark=benchmark)
    return attachment(body, filename, "application/x-ndjson; charset=utf-8")


@login_required
@require_POST
def benchmark_hidden_release(request, slug):
    """The owner ends the hidden phase: hidden scores are computed and shown from now on."""
    benchmark = get_benchmark_for_user(request.user, slug, write=True)
    try:
        runs = run_services.benchmark_hidden_release(benchmark=benchmark, user=request.user)
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Hidden phase ended: {len(runs)} submission"
                         f"{'s' if len(runs) != 1 else ''} queued for scoring on the hidden split.")
    return redirect("benchmark_detail", benchmark.slug)


def dialogue_detail(request, slug, dialogue_id):
    benchmark = get_benchmark_for_user(request.user, slug)
    dialogue = get_dialogue_for_user(request.user, benchmark, dialogue_id)
    context = {"benchmark": benchmark, "dialogue": dialogue,
               **selectors.dialogue_detail(dialogue=dialogue)}
    return render(request, "evaluation/dialogue_detail.html", context)


def item_detail(request, slug, item_id):
    benchmark = get_benchmark_for_user(request.user, slug)
    item = get_item_for_user(request.user, benchmark, item_id)
    context = {"benchmark": benchmark, **selectors.item_detail(item=item)}
    return render(request, "evaluation/item_detail.html", context)


def job_detail(request, job_id):
    """A job's progress; HTMX polls the `_job_progress.html` fragment until it finishes."""
    job = get_job_for_user(request.user, job_id)
    if request.htmx:
        return render(request, "evaluation/_job_progress.html", {"job": job})
    sim = simulation_job_summary(job=job) if job.kind == "simulation" else None
    return render(request, "evaluation/job_detail.html", {"job": job, "sim": sim})


def run_detail(request, run_id):
    """How a set of numbers was made: evaluator, version, configuration, progress, results."""
    run = get_run_for_user(request.user, run_id)
    results = selectors.run_results(run=run)
    context = {"run": run, "results": results, "job": run.job,
               "can_retry": run.job.status == "failed" and can_write_run(request.user, run),
               "axes": selectors.metrics_by_axis(results["metrics"]),
               "config_json": selectors.pretty_json(run.config)}
    if is_llm_evaluator(run.evaluator):
        from evaluation.selectors.judge_probes import run_judge_probes
        from evaluation.selectors.llm_reports import run_llm_report

        context["llm"] = run_llm_report(run=run, page=request.GET.get("page"),
                                        include_hidden=can_see_hidden_units(request.user, run))
        context["probes"] = run_judge_probes(
            run=run, include_hidden=can_see_hidden_units(request.user, run))
    simulation = (Simulation.objects.filter(Q(run=run) | Q(sanitised_run=run))
                  .select_related("job", "system", "benchmark").first())
    if simulation is not None:
        context["sanitised_of"] = simulation if simulation.sanitised_run_id == run.pk else None
        context["sim"] = simulation_report(
            simulation=simulation,
            visible_hidden=can_see_simulation_hidden(request.user, simulation),
            show_sources=request.user.is_staff)
    return render(request, "evaluation/run_detail.html", context)


@login_required
@require_POST
def simulation_cancel_view(request, simulation_id):
    """The Cancel button of a running simulation (its job page)."""
    simulation = get_simulation_for_user(request.user, simulation_id)
    if simulation_cancel(simulation=simulation, user=request.user):
        messages.success(request, f"Simulation #{simulation.pk} is cancelled; its running "
                                  "dialogues stop within a turn.")
    else:
        messages.info(request, f"Simulation #{simulation.pk} had already finished.")
    return redirect("job_detail", simulation.job_id)


@login_required
@require_POST
def run_retry(request, run_id):
    """The owner queues a failed run again: same file, same configuration, no quota."""
    run = get_run_for_user(request.user, run_id, write=True)
    try:
        job_retry(job=run.job)
    except ValueError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Run #{run.pk} is queued again.")
    return redirect("run_detail", run.pk)
