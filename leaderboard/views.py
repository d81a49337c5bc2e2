"""Leaderboards, system pages, comparisons, the submission flow and the API docs page.

Every view reaches its objects through `leaderboard.access` / `evaluation.access` (stranger
404, non-owner 403 on writes). One view serves a page and its HTMX fragment (`_name.html`).
"""

import csv
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db import transaction
from django.http import FileResponse, Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from rest_framework.authtoken.models import Token

from annotation.access import can_create_studies
from evaluation.access import (
    benchmarks_for_user,
    get_benchmark_for_user,
    get_staged_upload_for_user,
)
from evaluation.lib.columns import shown_on
from evaluation.lib.formats.errors import FormatError
from evaluation.lib.formats.submission import PROTOCOLS as UPLOAD_PROTOCOLS
from evaluation.lib.llm.gateway import LLMConfigurationError
from evaluation.lib.metrics.suite import SUITE_NAME
from evaluation.lib.metrics.types import SUMMARY
from evaluation.lib.simulators.simulators import design_variant
from evaluation.lib.stats.arena import METHODS as ARENA_METHODS
from evaluation.models import LLMSpend, Split
from evaluation.selectors.arena import arena_of_benchmark
from evaluation.selectors.benchmarks import baselines_job_latest, metrics_by_axis, run_results
from evaluation.services.credentials import credential_names, credential_problem
from evaluation.services.live import live_system_create, system_set_live
from evaluation.services.simulations import (
    SimulationQuotaExceeded,
    simulation_allowance,
    simulation_create,
    simulation_estimate,
)
from evaluation.services.spending import BudgetExceeded, spending_preview
from evaluation.services.staged_uploads import submission_stage, submission_validates_inline
from evaluation.services.submissions import (
    QuotaExceeded,
    submission_set_public,
    submission_submit,
    submissions_today,
    system_create,
    system_daily_quota,
    system_update,
)

from .access import (
    arenas_for_user,
    can_evaluate_submission,
    can_write_system,
    get_arena_for_user,
    get_submission_for_user,
    get_system_for_user,
    require_researcher,
    systems_for_user,
)
from .apidocs import api_endpoints
from .forms import (
    FAMILIES,
    SignupForm,
    SimulationForm,
    SubmissionForm,
    SystemForm,
    SystemRegistrationForm,
)
from .selectors import arenas as arena_selectors
from .selectors.arena_agreement import arena_agreement
from .selectors.arena_crs import CRS_COLUMNS, crs_payload
from .selectors.arena_requests import arena_requests_waiting_count, system_arena_panel
from .selectors.arenas import arena_board, arena_board_payload, arena_vote_counts
from .selectors.auto_evaluations import (
    log_scoring,
    log_upload_scoring,
    submission_auto_evaluations,
)
from .selectors.boards import (
    benchmark_leaderboard_counts,
    board_protocols,
    leaderboard,
    leaderboard_export_rows,
    leaderboard_pc_chart,
    leaderboard_scatter,
)
from .selectors.compare import compare_default_benchmark, systems_compare
from .selectors.drilldown import dialogue_drilldown, latest_succeeded_run
from .selectors.runs import (
    UnknownCoverage,
    chosen_coverage,
    coverage_choice,
    coverage_label,
    coverages,
    visible_runs_by_coverage,
)
from .selectors.simulated import simulators_page
from .selectors.systems import (
    dialogue_metrics,
    system_boards,
    system_radar,
    system_results,
    system_run_dialogues,
    system_submissions,
)
from .services import researcher_register


def _protocol_or_404(benchmark, protocol: str | None, protocols=None) -> str:
    """PROTOCOL when BENCHMARK has a leaderboard for it (its submission protocols and its
    `simulated-…` boards; PROTOCOLS when the caller already read them), else 404."""
    protocols = protocols or board_protocols([benchmark])[benchmark.pk]
    protocol = protocol or protocols[0]
    if protocol not in protocols:
        raise Http404("This benchmark has no such protocol.")
    return protocol


# --- leaderboards ---------------------------------------------------------------------------


def leaderboard_index(request):
    benchmarks = list(benchmarks_for_user(request.user))
    counts = benchmark_leaderboard_counts(benchmarks)
    protocols = board_protocols(benchmarks)
    boards = [{"benchmark": b, "protocol": p, "systems": counts.get((b.pk, p), 0)}
              for b in benchmarks for p in protocols[b.pk]]
    return render(request, "leaderboard/index.html", {"boards": boards})


def _board_params(request) -> dict:
    return {"sort": request.GET.get("sort", ""), "order": request.GET.get("order", ""),
            "family": request.GET.get("family", ""),
            "baselines": request.GET.get("baselines", "1") != "0",
            "all_columns": request.GET.get("columns") == "all",
            "splits": request.GET.get("splits", "")[:200],
            "dialogues": request.GET.get("dialogues", "") if request.GET.get("dialogues")
            in ("all", "both") else ""}


def _query(params: dict, **changes) -> str:
    merged = {**params, **changes}
    query = {"splits": merged["splits"], "sort": merged["sort"], "order": merged["order"],
             "family": merged["family"], "baselines": "" if merged["baselines"] else "0",
             "columns": "all" if merged["all_columns"] else "",
             "dialogues": "both" if merged.get("dialogues") == "both" else ""}
    return "?" + urlencode({k: v for k, v in query.items() if v})


def board(request, benchmark, protocol=None):
    """A benchmark's leaderboard for one protocol; HTMX sorting and filtering swap the table."""
    benchmark = get_benchmark_for_user(request.user, benchmark)
    protocols = board_protocols([benchmark])[benchmark.pk]
    protocol = _protocol_or_404(benchmark, protocol, protocols)
    params = _board_params(request)
    problem = ""
    try:
        lb = leaderboard(benchmark=benchmark, protocol=protocol, user=request.user, **params)
    except UnknownCoverage as exc:  # show the default split set and say why
        problem = f"Unknown split set: {exc}."
        params["splits"] = ""
        lb = leaderboard(benchmark=benchmark, protocol=protocol, user=request.user, **params)
    params.update(sort=lb.sort, order=lb.order,
                  splits=_splits_param(lb), dialogues="both" if lb.sanitised else "")
    headers = []
    for column in lb.columns:
        active = column.key == lb.sort
        default = "desc" if column.higher else "asc"
        flipped = "asc" if lb.order == "desc" else "desc"
        headers.append((column, _query(params, sort=column.key,
                                       order=flipped if active else default), active,
                        lb.validity.get(column.key) or lb.trust.get(column.key)))
    base = reverse("leaderboard:board", args=[benchmark.slug, protocol])
    context = {
        "benchmark": benchmark, "protocol": protocol, "lb": lb, "params": params,
        "headers": headers, "base_url": base,
        "system_sort": _query(params, sort="system",
                              order="desc" if lb.sort == "system" and lb.order == "asc"
                              else "asc"),
        "family_sort": _query(params, sort="family", order="asc"),
        "scatter": leaderboard_scatter(lb),
        "pc_chart": leaderboard_pc_chart(lb),
        "export_query": _query(params)[1:],
        "protocols": protocols,
        "coverage_links": [(c, _query(params, splits=c.param)) for c in lb.other_coverages],
        "problem": problem,
        "battle_arena": arena_of_benchmark(benchmark),
        "baselines_job": baselines_job_latest(benchmark=benchmark),
    }
    status = 400 if problem else 200
    if request.htmx:
        return render(request, "leaderboard/_leaderboard_table.html", context, status=status)
    return render(request, "leaderboard/board.html", context, status=status)


def simulators_compare(request, benchmark):
    """The benchmark's simulators side by side: how each design's ranking agrees with the
    arena's and with the studies' labels, and how its simulated users behave
    (docs/simulation.md, "Simulator validity")."""
    benchmark = get_benchmark_for_user(request.user, benchmark)
    return render(request, "leaderboard/simulators.html",
                  simulators_page(benchmark=benchmark, user=request.user))


@require_GET
def board_baselines_progress(request, benchmark):
    """The polled fragment: the reference baselines a worker is still evaluating."""
    benchmark = get_benchmark_for_user(request.user, benchmark)
    return render(request, "leaderboard/_baselines_progress.html",
                  {"benchmark": benchmark, "baselines_job": baselines_job_latest(
                      benchmark=benchmark), "polled": True})


def _splits_param(lb) -> str:
    """The `splits` parameter naming the leaderboard's coverage ('' when it is the default)."""
    shown = next((c for c in lb.coverages if c.key == lb.coverage), None)
    if shown is None or (lb.coverages and lb.coverages[0].key == lb.coverage):
        return ""
    return design_variant(shown.param, False) if lb.design else shown.param


def board_export(request, benchmark, protocol, fmt):
    """Every number of the leaderboard (as the viewer sees it, filters applied) as CSV or JSON,
    each with its CI, n, tie-aware rank and the run that produced it."""
    if fmt not in ("csv", "json"):
        raise Http404("Export as csv or json.")
    benchmark = get_benchmark_for_user(request.user, benchmark)
    protocol = _protocol_or_404(benchmark, protocol)
    params = _board_params(request)
    params["all_columns"] = request.GET.get("columns", "all") == "all"
    try:
        lb = leaderboard(benchmark=benchmark, protocol=protocol, user=request.user, **params)
    except UnknownCoverage as exc:
        return HttpResponseBadRequest(f"Unknown split set: {exc}.",
                                      content_type="text/plain; charset=utf-8")
    records = leaderboard_export_rows(lb, request.build_absolute_uri("/")[:-1])
    name = f"leaderboard-{benchmark.slug}-{protocol}-{lb.coverage or 'all'}"
    if fmt == "json":
        payload = {"benchmark": benchmark.slug, "benchmark_version": benchmark.version,
                   "protocol": protocol, "splits": lb.coverage,
                   "coverage": "every row was evaluated on exactly these splits; runs on "
                               "other split sets are ranked on their own leaderboards "
                               f"({', '.join(c.param for c in lb.other_coverages) or 'none'})",
                   **({"design": lb.design,
                       "coverage": "every row was simulated with exactly this design "
                                   "(simulator and configuration, users, turns, pool, seed); "
                                   "other designs are ranked on their own "
                                   f"({', '.join(c.param for c in lb.other_coverages) or 'none'})"}
                      if lb.design else {}),
                   **({"dialogues": "sanitised (-Both): each run re-scored without its leaked "
                                    "dialogues (Zhu et al. 2024; docs/simulation.md, "
                                    "\"Leakage audit\")" if lb.sanitised else
                                    "all: every successful dialogue, leaked or not",
                       "leaked_share": lb.leakage.share}
                      if lb.leakage else {}),
                   "generated_at": timezone.now().isoformat(),
                   "ci": "95% studentized cluster interval over dialogues (delete-one-"
                         "dialogue jackknife, t quantile; docs/statistics.md)",
                   "rank": "1 + number of systems significantly better (paired cluster "
                           "jackknife-t tests, Holm-corrected over all pairs of systems)",
                   "multiple_comparisons": "holm",
                   "human_agreement": "per metric, its best measured agreement with human "
                                      "labels on this benchmark (human_* fields): "
                                      + lb.trust_rule,
                   **({"simulator_validity": {
                       "method": "Kendall tau_b and Spearman rho between each simulation "
                                 "column's ranking and the arena's Bradley-Terry ranking, and "
                                 "each study's mean numeric label per system, over the systems "
                                 "with both; 95% percentile bootstrap resampling the simulated "
                                 "users and the votes or each system's labelled dialogues "
                                 "(docs/statistics.md, \"Simulator validity\")",
                       "columns": {key: trust.as_json() for key, trust in lb.validity.items()}}}
                      if lb.validity else {}),
                   "rows": records}
        response = JsonResponse(payload, json_dumps_params={"indent": 2})
    else:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        fields = list(records[0]) if records else ["benchmark", "protocol", "system", "metric"]
        writer = csv.DictWriter(response, fieldnames=fields)
        writer.writeheader()
        writer.writerows({k: _csv_safe(v) for k, v in record.items()} for record in records)
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


def _csv_safe(value):
    """Researcher-chosen text (system names, teams) must not run as a spreadsheet formula."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


# --- systems --------------------------------------------------------------------------------


def system_list(request):
    systems = list(systems_for_user(request.user).select_related("owner"))
    mine = [s for s in systems if request.user.is_authenticated and s.owner_id == request.user.pk]
    token = None
    if request.user.is_authenticated:
        token = Token.objects.filter(user=request.user).values_list("key", flat=True).first()
    return render(request, "leaderboard/system_list.html", {
        "systems": [s for s in systems if s not in mine], "mine": mine, "token": token,
    })


@login_required
def system_create_view(request):
    require_researcher(request.user)
    form = SystemRegistrationForm(request.POST or None,
                                  credentials=credential_names(user=request.user))
    if request.method == "POST" and form.is_valid():
        details = dict(form.cleaned_data)
        endpoint, credential = details.pop("endpoint"), details.pop("credential")
        try:
            system = (live_system_create(owner=request.user, endpoint=endpoint,
                                         credential=credential, name=details.pop("name"),
                                         description=details.pop("description"),
                                         details=details)
                      if endpoint else system_create(owner=request.user, **details))
        except ValidationError as exc:
            form.add_error("endpoint", "; ".join(exc.messages))
        else:
            messages.success(request, f"System “{system.name}” registered. Upload a submission"
                             + (" or simulate users against its endpoint." if endpoint else "."))
            return redirect("leaderboard:submission_create", system.slug)
    return render(request, "leaderboard/system_form.html",
                  {"form": form, "families": FAMILIES, "system": None},
                  status=400 if form.errors else 200)


@login_required
def system_edit(request, slug):
    system = get_system_for_user(request.user, slug, write=True)
    form = SystemForm(request.POST or None, instance=system)
    if request.method == "POST" and form.is_valid():
        system_update(system=system, **{k: form.cleaned_data[k] for k in form.changed_data})
        messages.success(request, "Saved.")
        return redirect("leaderboard:system_detail", system.slug)
    return render(request, "leaderboard/system_form.html",
                  {"form": form, "families": FAMILIES, "system": system})


@login_required
def system_simulate(request, slug):
    """The owner's form: register the live endpoint and start a simulation (a queued job)."""
    system = get_system_for_user(request.user, slug, write=True)
    require_researcher(request.user)
    form = SimulationForm(request.POST or None, benchmarks=_uploadable_benchmarks(request.user),
                          credentials=credential_names(user=system.owner),
                          initial={"endpoint": system.live_endpoint,
                                   "credential": system.live_credential,
                                   "timeout_seconds": system.live_timeout_seconds})
    status = None
    budget = {}
    if request.method == "POST" and form.is_valid() and "confirm" not in request.POST:
        budget = _simulation_budget(request.user, form)  # shown before the user confirms
    if request.method == "POST" and form.is_valid() and not budget:
        data = form.cleaned_data
        try:
            with transaction.atomic():
                if data["endpoint"] and (data["endpoint"] != system.live_endpoint or
                                         data["credential"] != system.live_credential or
                                         data["timeout_seconds"] != system.live_timeout_seconds):
                    system_set_live(system=system, endpoint=data["endpoint"],
                                    credential=data["credential"],
                                    timeout_seconds=data["timeout_seconds"])
                simulation = simulation_create(
                    benchmark=data["benchmark"], system=system, simulator=data["simulator"],
                    users=data["users"], turns=data["turns"], seed=data["seed"],
                    shown_k=data["shown_k"], pcir=data["pcir"], user=request.user)
        except (ValidationError, LLMConfigurationError, BudgetExceeded) as exc:
            form.add_error(None, "; ".join(getattr(exc, "messages", None) or [str(exc)]))
        except SimulationQuotaExceeded as exc:
            form.add_error(None, str(exc))
            status = 429
        else:
            return redirect("job_detail", simulation.job_id)
    quota, used = simulation_allowance(request.user)
    return render(request, "leaderboard/system_simulate.html",
                  {"form": form, "system": system, "quota": quota, "used": used,
                   "budget": budget},
                  status=status or (400 if form.errors else 200))


def _simulation_budget(user, form) -> dict:
    """An LLM simulator's estimate against USER's budget ({} for one without an LLM; when it
    cannot be estimated the reason goes on the form, which is then no longer valid)."""
    data = form.cleaned_data
    try:
        estimate = simulation_estimate(benchmark=data["benchmark"], simulator=data["simulator"],
                                       users=data["users"], turns=data["turns"],
                                       seed=data["seed"], shown_k=data["shown_k"])
    except (ValidationError, LLMConfigurationError) as exc:
        form.add_error(None, "; ".join(getattr(exc, "messages", None) or [str(exc)]))
        return {}
    return spending_preview(user=user, estimate=estimate, kind=LLMSpend.Kind.SIMULATION)


def system_detail(request, slug):
    """Metrics with CIs, a radar of the axes, difficulty tiers, dialogues to drill into."""
    system = get_system_for_user(request.user, slug)
    boards = system_boards(system=system, user=request.user)
    context = {"system": system, "boards": boards, "can_write": can_write_system(
        request.user, system), "submissions": system_submissions(
        system=system, user=request.user)}
    if context["can_write"]:
        context["arena_panel"] = system_arena_panel(system=system, user=request.user)
    if context["can_write"] and system.live_kind == "http" and system.live_credential:
        context["credential_problem"] = credential_problem(system.live_credential,
                                                           owner=system.owner)
    chosen = _chosen_board(request, boards)
    if chosen:
        benchmark, protocol = chosen
        # one split set at a time, chosen as the leaderboard chooses it (`test` by default)
        splits = request.GET.get("splits", "")
        try:
            coverage, available, choice = coverage_choice(
                benchmark=benchmark, protocol=protocol, user=request.user, splits=splits,
                system=system)
        except UnknownCoverage as exc:
            context["problem"] = f"Unknown split set: {exc}."
            coverage, available, choice = coverage_choice(
                benchmark=benchmark, protocol=protocol, user=request.user, system=system)
        runs = choice.for_user(request.user)
        results = system_results(runs=runs, benchmark=benchmark, user=request.user)
        trace = next((r for r in runs if r.evaluator == SUITE_NAME), None)
        context.update(benchmark=benchmark, protocol=protocol, runs=runs, results=results,
                       radar=system_radar(results), trace_run=trace,
                       coverage_label=coverage_label(coverage), coverages=available,
                       coverage=coverage, coverage_param=next(
                           (c.param for c in available if c.key == coverage), ""))
        if trace:
            context["tiers"], dialogues = system_run_dialogues(run_id=trace.run_id,
                                                               benchmark=benchmark)
            context["dialogues"] = Paginator(dialogues, 20).get_page(request.GET.get("page"))
            context["dialogue_metrics"] = dialogue_metrics()
            context["others"] = [r for r in coverage_choice(
                benchmark=benchmark, protocol=protocol, user=request.user,
                splits=context["coverage_param"])[2].for_user(request.user)
                if r.evaluator == SUITE_NAME and r.system_id != system.pk]
    return render(request, "leaderboard/system_detail.html", context)


def _chosen_board(request, boards):
    slug, protocol = request.GET.get("benchmark"), request.GET.get("protocol")
    for benchmark, board_protocol in boards:
        if (not slug or benchmark.slug == slug) and (not protocol or board_protocol == protocol):
            return benchmark, board_protocol
    return None


# --- the submission flow --------------------------------------------------------------------


def _uploadable_benchmarks(user):
    return [b for b in benchmarks_for_user(user)
            if set(b.protocols or ["turn"]) & set(UPLOAD_PROTOCOLS)]


@login_required
def submission_create(request, slug):
    """Upload → validation report at once (nothing stored) or a progress bar for the run."""
    system = get_system_for_user(request.user, slug, write=True)
    require_researcher(request.user)
    form = SubmissionForm(request.POST or None, request.FILES or None,
                          benchmarks=_uploadable_benchmarks(request.user),
                          initial={"benchmark": request.GET.get("benchmark"),
                                   "protocol": request.GET.get("protocol") or "turn"})
    context = {"system": system, "form": form, "quota": system_daily_quota(system),
               "log_scoring": log_upload_scoring(benchmarks=form.benchmarks.values()),
               "used": submissions_today(system),
               "inline_limit": settings.INLINE_VALIDATION_BYTES}
    if request.method == "POST" and form.is_valid():
        status = 200
        upload = {"system": system, "benchmark": form.cleaned_data["benchmark"],
                  "file": form.cleaned_data["file"], "user": request.user,
                  "note": form.cleaned_data["note"], "protocol": form.cleaned_data["protocol"]}
        try:
            if not submission_validates_inline(upload["file"]):
                return _staged_answer(request, submission_stage(**upload))
            submission, run = submission_submit(**upload)
        except FormatError as exc:
            context["issues"], status = exc.issues, 422
        except QuotaExceeded as exc:
            context["quota_error"], status = str(exc), 429
        else:
            if not request.htmx:
                return redirect("leaderboard:submission_detail", submission.uuid)
            context = {**_status_context(request, submission, fresh=True),
                       "quota": system_daily_quota(system), "used": submissions_today(system)}
            response = render(request, "leaderboard/_submission_status.html", context)
            response["HX-Push-Url"] = reverse("leaderboard:submission_detail",
                                              args=[submission.uuid])
            return response
        if request.htmx:  # htmx swaps 2xx answers only
            return render(request, "leaderboard/_validation_report.html", context)
        return render(request, "leaderboard/submission_form.html", context, status=status)
    return render(request, "leaderboard/submission_form.html", context)


def _staged_answer(request, staged):
    """A large upload was staged for a worker: its page (htmx: its polled fragment, in place
    of the validation report)."""
    if not request.htmx:
        return redirect("leaderboard:submission_staged", staged.pk)
    response = render(request, "leaderboard/_staged_status.html",
                      _staged_context(request, staged))
    response["HX-Push-Url"] = reverse("leaderboard:submission_staged", args=[staged.pk])
    return response


def _staged_context(request, staged) -> dict:
    """The worker's check of a staged upload: progress, then the validation report (or the
    quota refusal), or the submission it made with its run's progress."""
    context = {"staged": staged,
               "system": systems_for_user(request.user).filter(pk=staged.params["system"])
               .first()}
    if staged.status == staged.Status.SUCCEEDED and staged.result.get("submission"):
        try:
            submission = get_submission_for_user(request.user, staged.result["submission"])
        except Http404:  # deleted since
            return context
        context.update(_status_context(request, submission, fresh=True),
                       quota=system_daily_quota(submission.system),
                       used=submissions_today(submission.system))
    elif staged.result.get("quota"):
        context["quota_error"] = staged.error
    else:
        context["issues"] = staged.result.get("errors")
    return context


@login_required
def submission_staged(request, job_id):
    """A large upload while a worker checks it: a progress bar that HTMX polls, which turns
    into the validation report or into the submission and its run."""
    staged = get_staged_upload_for_user(request.user, job_id)
    context = _staged_context(request, staged)
    if request.htmx:
        return render(request, "leaderboard/_staged_status.html", context)
    return render(request, "leaderboard/submission_staged.html", context)


def _status_context(request, submission, fresh: bool = False) -> dict:
    run = submission.runs.select_related("job").order_by("-created_at", "-pk").first()
    context = {"submission": submission, "run": run, "job": run.job if run else None,
               "can_write": can_write_system(request.user, submission.system), "fresh": fresh,
               "can_evaluate": can_evaluate_submission(request.user, submission)}
    if submission.protocol == "log":  # what scores it and when, said plainly
        context["scoring"] = log_scoring(submission=submission)
    if run and run.job.status == run.job.Status.SUCCEEDED:
        results, summary = run_results(run=run), shown_on(run.evaluator, SUMMARY)
        context["results"] = [(axis, [(n, r) for n, r in rows if n in summary])
                              for axis, rows in metrics_by_axis(results["metrics"])]
        context["results"] = [(axis, rows) for axis, rows in context["results"] if rows]
    return context


def submission_detail(request, uuid):
    submission = get_submission_for_user(request.user, uuid)
    return render(request, "leaderboard/submission_detail.html",
                  {**_status_context(request, submission),
                   "auto_evaluations": submission_auto_evaluations(submission=submission)})


def submission_status(request, uuid):
    """The polled fragment: progress while the run works, then its result (and publish). The
    answer to an upload polls with ?fresh=1, so that its heading still says what was stored."""
    submission = get_submission_for_user(request.user, uuid)
    return render(request, "leaderboard/_submission_status.html",
                  _status_context(request, submission, fresh=request.GET.get("fresh") == "1"))


@login_required
@require_POST
def submission_publish(request, uuid):
    submission = get_submission_for_user(request.user, uuid, write=True)
    public = request.POST.get("public")
    if public not in ("0", "1"):
        return HttpResponse("Send public=1 to publish or public=0 to withdraw.", status=400)
    problem = ""
    try:
        submission_set_public(submission=submission, user=request.user, public=public == "1")
    except ValueError as exc:
        problem = str(exc)
    if request.htmx:  # htmx swaps 2xx answers only, so a refusal is shown in the fragment
        context = {**_status_context(request, submission), "publish_error": problem}
        return render(request, "leaderboard/_submission_status.html", context)
    if problem:
        messages.error(request, problem)
    return redirect("leaderboard:submission_detail", submission.uuid)


@login_required
def submission_download(request, uuid):
    """The stored file back to its owner: as an attachment, never rendered as a page."""
    submission = get_submission_for_user(request.user, uuid, write=True)
    response = FileResponse(submission.file.open("rb"), as_attachment=True,
                            filename=f"submission-{submission.uuid}.jsonl",
                            content_type="application/octet-stream")
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


def submission_dialogue(request, uuid, dialogue_id):
    """Per-turn drill-down: the system's answers in one dialogue, quotes marked verified or
    not. Hidden-split dialogues are never shown (their gold stays on the server)."""
    submission = get_submission_for_user(request.user, uuid)
    dialogue = (submission.benchmark.dialogues.exclude(split=Split.HIDDEN)
                .filter(external_id=dialogue_id).first())
    if dialogue is None or submission.protocol != "turn":
        raise Http404("No such dialogue.")
    run = latest_succeeded_run(submission)
    context = {"submission": submission, "system": submission.system, "run": run,
               "benchmark": submission.benchmark, "dialogue": dialogue,
               **dialogue_drilldown(submission=submission, run=run, dialogue=dialogue)}
    return render(request, "leaderboard/dialogue_drilldown.html", context)


# --- comparing two systems ------------------------------------------------------------------


def compare(request):
    """Paired differences between two systems' latest visible runs on one benchmark."""
    benchmarks = list(benchmarks_for_user(request.user))
    slug = request.GET.get("benchmark") or compare_default_benchmark(benchmarks)
    context = {"benchmarks": benchmarks, "a": request.GET.get("a", ""),
               "b": request.GET.get("b", ""), "all": request.GET.get("columns") == "all"}
    if not slug:
        return render(request, "leaderboard/compare.html", context)
    benchmark = get_benchmark_for_user(request.user, slug)
    # Both runs are of one split set (as on the leaderboard): SPLITS, or else the first split
    # set, in the leaderboard's order, on which both chosen systems have a run.
    visible = visible_runs_by_coverage(benchmark=benchmark, protocol="turn", user=request.user)
    available = coverages([run for runs in visible.values() for run in runs])
    suite_runs = {key: [r for r in runs if r.evaluator == SUITE_NAME]
                  for key, runs in visible.items()}
    splits = request.GET.get("splits", "")
    try:
        coverage = chosen_coverage(available, splits)
    except UnknownCoverage as exc:
        context["problem"] = f"Unknown split set: {exc}."
        splits = ""
        coverage = chosen_coverage(available, splits)
    systems = []
    if context["a"] and context["b"]:
        systems = [get_system_for_user(request.user, context[k]) for k in ("a", "b")]
        if not splits:
            coverage = next((c.key for c in available if {s.pk for s in systems}
                             <= {r.system_id for r in suite_runs.get(c.key, [])}), coverage)
    runs = suite_runs.get(coverage, [])
    context.update(benchmark=benchmark, choices=sorted(runs, key=lambda r: r.name.lower()),
                   coverages=available, coverage=coverage,
                   coverage_label=coverage_label(coverage))
    if systems:
        by_system = {r.system_id: r for r in runs}
        pair = [by_system.get(s.pk) for s in systems]
        context["systems"] = systems
        if systems[0].pk == systems[1].pk:
            context["problem"] = "Pick two different systems."
        elif None in pair:
            have = [c.label for c in available if {s.pk for s in systems}
                    <= {r.system_id for r in suite_runs.get(c.key, [])}]
            context["problem"] = (
                f"Both systems need a finished run evaluated on {coverage_label(coverage)}."
                + (f" Both have one on: {', '.join(have)}." if have else
                   " They have no split set in common: their numbers rest on different"
                   " dialogues, so they are not compared."))
        else:
            from evaluation.models import Run

            run_a, run_b = (Run.objects.get(pk=r.run_id) for r in pair)
            context.update(run_a=run_a, run_b=run_b, pair=pair,
                           **systems_compare(run_a=run_a, run_b=run_b,
                                             all_metrics=context["all"], user=request.user))
    return render(request, "leaderboard/compare.html", context)


# --- accounts and the API docs --------------------------------------------------------------


def signup(request):
    """Create an account with the researcher role (to register systems and submit)."""
    if request.user.is_authenticated:
        return redirect("leaderboard:system_list")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = researcher_register(username=form.cleaned_data["username"],
                                   email=form.cleaned_data.get("email", ""),
                                   password=form.cleaned_data["password1"])
        login(request, user)  # the one backend in AUTHENTICATION_BACKENDS
        messages.success(request, "Welcome! Register your system to submit its outputs.")
        return redirect("leaderboard:system_create")
    return render(request, "leaderboard/signup.html", {"form": form})


@login_required
@require_POST
def api_token(request):
    """Create (or replace) the user's API token; it authenticates `Authorization: Token …`."""
    Token.objects.filter(user=request.user).delete()
    Token.objects.create(user=request.user)
    messages.success(request, "A new API token was created; the old one no longer works.")
    return redirect(reverse("leaderboard:system_list") + "#api-token")


def api_docs(request):
    """The OpenAPI schema as a page (no JavaScript): every endpoint, its parameters, body and
    answers. The machine-readable schema is at /api/schema/."""
    return render(request, "leaderboard/api_docs.html", {"endpoints": api_endpoints()})


# --- arena ratings (issue 15; docs/statistics.md "Arena") ---------------------------------------


def _arena_params(request) -> dict:
    method = request.GET.get("method", "elo")
    if method not in ARENA_METHODS:
        raise Http404("Rate by elo or bt.")
    return {"method": method, "dataset": request.GET.get("dataset", "")[:100],
            "scenario": request.GET.get("scenario", "")[:200]}


def arena_index(request):
    """The arenas the viewer may see, optionally those of one benchmark."""
    arenas = arenas_for_user(request.user).select_related("benchmark").order_by("name")
    benchmark = request.GET.get("benchmark", "")
    if benchmark:
        arenas = arenas.filter(benchmark__slug=benchmark)
    waiting = arena_requests_waiting_count() if request.user.is_staff else None
    return render(request, "leaderboard/arena_index.html",
                  {"arenas": arena_vote_counts(arenas), "benchmark": benchmark,
                   "requests_waiting": waiting})


def arena_ratings_page(request, slug):
    """An arena's ratings: table with CIs and rank intervals, a forest chart of the ratings and
    the pairwise win-rate heatmap; by Elo or Bradley–Terry, filtered by data set or scenario."""
    arena = get_arena_for_user(request.user, slug)
    params = _arena_params(request)
    board = arena_board(arena, **params)
    query = urlencode({k: v for k, v in params.items() if v})
    agreement = arena_agreement(arena=arena, board_rows=board.rows, user=request.user,
                                study_slug=request.GET.get("study", "")[:80],
                                field_name=request.GET.get("field", "")[:100])
    crs = crs_payload(board, board.crs)
    facet = request.GET.get("facet", "")
    facet = facet if facet in crs["facets"] else next(iter(crs["facets"]), "")
    return render(request, "leaderboard/arena_ratings.html",
                  {"board": board, "arena": arena, "params": params, "export_query": query,
                   "crs": crs, "facet": facet,
                   "methods": arena_selectors.METHOD_LABELS,
                   "rank_note": arena_selectors.RANK_NOTE, "agreement": agreement,
                   "can_create_study": can_create_studies(request.user)})


def arena_ratings_export(request, slug, fmt):
    """The page's table as CSV or JSON (filters and method as on the page)."""
    if fmt not in ("csv", "json"):
        raise Http404("Export as csv or json.")
    arena = get_arena_for_user(request.user, slug)
    board = arena_board(arena, **_arena_params(request))
    name = f"arena-{arena.slug}-{board.method}"
    if fmt == "json":
        response = JsonResponse(arena_board_payload(board), json_dumps_params={"indent": 2})
    else:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        fields = ["rank", "rank_low", "rank_high", "system", "slug", "rating", "ci_low",
                  "ci_high", "votes", "wins", "losses", "ties", *CRS_COLUMNS]
        excluded = {f"excluded_{reason}": board.excluded.get(reason, 0)
                    for reason in arena_selectors.EXCLUDED_NOTES}
        writer = csv.DictWriter(response, fieldnames=["arena", "method", *fields, "ci_note",
                                                      *excluded])
        writer.writeheader()
        writer.writerows({"arena": arena.slug, "method": board.method,
                          **{k: _csv_safe(row[k]) for k in fields},
                          "ci_note": board.table.ci_note or "", **excluded}
                         for row in board.rows)
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response
