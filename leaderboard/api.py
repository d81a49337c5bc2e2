"""The REST API (Django REST framework; token or session authentication; OpenAPI schema by
drf-spectacular at /api/schema/, described for people at /api/docs/).

The same access helpers and service functions as the pages: a stranger gets 404, a reader who
is not the owner 403 on writes, an invalid file 400 with every line-numbered problem (nothing
stored), a used-up daily quota 429. Session-authenticated writes need the CSRF token.
"""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Count
from django.http import JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from drf_spectacular.views import SpectacularAPIView
from rest_framework import generics, permissions, status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from core.roles import RESEARCHER, has_role, role_needed
from core.throttle import (
    login_failed,
    login_succeeded,
    login_wait_message,
    login_wait_seconds,
)
from evaluation.access import (
    benchmarks_for_user,
    get_benchmark_for_user,
    get_run_for_user,
    get_simulation_for_user,
    get_staged_upload_for_user,
    simulations_for_user,
)
from evaluation.lib.formats.errors import FormatError
from evaluation.lib.llm.gateway import LLMConfigurationError
from evaluation.lib.stats.arena import METHODS as ARENA_METHODS
from evaluation.selectors.benchmarks import run_results
from evaluation.selectors.downloads import benchmark_public_download, benchmark_sample_download
from evaluation.services.live import system_set_live
from evaluation.services.simulations import (
    SimulationQuotaExceeded,
    simulation_cancel,
    simulation_create,
)
from evaluation.services.spending import BudgetExceeded
from evaluation.services.staged_uploads import submission_stage, submission_validates_inline
from evaluation.services.submissions import (
    QuotaExceeded,
    submission_set_public,
    submission_submit,
    system_create,
    system_update,
)
from evaluation.views import attachment

from .access import (
    arenas_for_user,
    get_arena_for_user,
    get_submission_for_user,
    get_system_for_user,
    submissions_for_user,
)
from .access import systems_for_user as visible_systems
from .schema import GENERATION_LOCK
from .selectors.arenas import arena_board, arena_board_payload
from .selectors.boards import board_protocols, leaderboard
from .selectors.runs import UnknownCoverage
from .serializers import (
    ArenaRatingsSerializer,
    ArenaSerializer,
    BenchmarkSerializer,
    LeaderboardSerializer,
    PublishSerializer,
    RunResultSerializer,
    SimulationSerializer,
    SimulationStartSerializer,
    StagedUploadSerializer,
    SubmissionSerializer,
    SubmissionUploadSerializer,
    SystemSerializer,
    TokenSerializer,
)


class ResearcherWrites(permissions.IsAuthenticatedOrReadOnly):
    """Anyone may read; writing needs a logged-in researcher (or staff)."""

    message = role_needed("Registering systems and submitting", RESEARCHER)

    def has_permission(self, request, view) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return bool(request.user and request.user.is_authenticated
                    and has_role(request.user, RESEARCHER))


class BenchmarkList(generics.ListAPIView):
    """Benchmarks you can see."""

    serializer_class = BenchmarkSerializer

    def get_queryset(self):
        return benchmarks_for_user(self.request.user).order_by("slug")


class BenchmarkDetail(generics.RetrieveAPIView):
    serializer_class = BenchmarkSerializer

    def get_object(self):
        return get_benchmark_for_user(self.request.user, self.kwargs["slug"])


@extend_schema(responses={(200, "application/zip"): OpenApiResponse(
    OpenApiTypes.BINARY, description=(
    "The public part of the benchmark as a bundle .zip (formats.md §1): every split but "
    "`hidden` in full; hidden dialogues as the contexts a system answers, without gold."))})
class BenchmarkPublicBundle(APIView):
    """Download the public bundle of a benchmark you can see."""

    def get(self, request, slug):
        benchmark = get_benchmark_for_user(request.user, slug)
        filename, body = benchmark_public_download(benchmark=benchmark)
        return attachment(body, filename, "application/zip")


@extend_schema(responses={(200, "application/x-ndjson"): OpenApiResponse(
    OpenApiTypes.STR, description=(
    "A valid `turn` submission (JSON Lines, formats.md §2) for the public splits, written "
    "by the TF-IDF reference baseline from the public bundle."))})
class BenchmarkSampleSubmission(APIView):
    """Download a sample submission for a benchmark you can see."""

    def get(self, request, slug):
        benchmark = get_benchmark_for_user(request.user, slug)
        filename, body = benchmark_sample_download(benchmark=benchmark)
        return attachment(body, filename, "application/x-ndjson; charset=utf-8")


@extend_schema_view(
    get=extend_schema(description="Systems you can see: reference baselines, systems with a "
                                  "published submission, and yours."),
    post=extend_schema(description="Register a new system owned by you (researchers)."))
class SystemList(generics.ListCreateAPIView):
    """Systems you can see; POST registers a new system owned by you."""

    serializer_class = SystemSerializer
    permission_classes = [ResearcherWrites]

    def get_queryset(self):
        return visible_systems(self.request.user).select_related("owner").order_by("slug")

    def perform_create(self, serializer):
        data = {k: v for k, v in serializer.validated_data.items()}
        serializer.instance = system_create(owner=self.request.user, **data)


@extend_schema_view(
    get=extend_schema(description="A system you can see."),
    patch=extend_schema(description="Change a system's description (its owner or staff)."))
class SystemDetail(generics.RetrieveUpdateAPIView):
    """A system; its owner (or staff) may change its description (PATCH)."""

    serializer_class = SystemSerializer
    permission_classes = [permissions.IsAuthenticatedOrReadOnly]
    http_method_names = ["get", "patch", "head", "options"]

    def get_object(self):
        write = self.request.method not in permissions.SAFE_METHODS
        return get_system_for_user(self.request.user, self.kwargs["slug"], write=write)

    def perform_update(self, serializer):
        serializer.instance = system_update(system=serializer.instance,
                                            **serializer.validated_data)


@extend_schema_view(get=extend_schema(
    description="Submissions you can see (published ones and your own), newest first; "
                "filter with ?system=<slug> and ?benchmark=<slug>.",
    parameters=[OpenApiParameter("system", OpenApiTypes.STR, description="only this system's"),
                OpenApiParameter("benchmark", OpenApiTypes.STR,
                                 description="only this benchmark's")]))
class SubmissionList(generics.ListAPIView):
    """Submissions you can see (published ones and your own), newest first; POST uploads one
    (multipart) for one of your systems and queues its evaluation run."""

    serializer_class = SubmissionSerializer
    permission_classes = [ResearcherWrites]

    def get_queryset(self):
        submissions = submissions_for_user(self.request.user).order_by("-created_at")
        for key, field in (("system", "system__slug"), ("benchmark", "benchmark__slug")):
            if self.request.query_params.get(key):
                submissions = submissions.filter(**{field: self.request.query_params[key]})
        return submissions

    @extend_schema(
        description="Upload a submission file (multipart) for one of your systems. The file "
                    "is validated at once: 400 lists every problem with its line number and "
                    "nothing is stored; otherwise it is stored, counted against the system's "
                    "daily quota (429 when used up) and its evaluation run is queued — poll "
                    "/api/runs/<id>/ for progress and results. A file larger than "
                    "CONCORD_INLINE_VALIDATION_BYTES (1 MiB by default) is checked by a "
                    "worker instead: 202 with the upload's `url` (also in Location) to poll "
                    "until it has succeeded (its `submission`) or failed (its `errors`). "
                    "`protocol: log` uploads "
                    "whole conversations (logs.jsonl), scored by LLM evaluators rather than a "
                    "Trace run. Private until published.",
        request={"multipart/form-data": SubmissionUploadSerializer},
        responses={201: SubmissionSerializer,
                   202: StagedUploadSerializer,
                   400: OpenApiResponse(description="invalid fields, or the file is invalid "
                                                    "(`detail` and `errors`, one per problem "
                                                    "with its line); nothing was stored"),
                   403: OpenApiResponse(description="not your system, or not a researcher"),
                   404: OpenApiResponse(description="no such system or benchmark"),
                   429: OpenApiResponse(description="the system's daily quota is used up"),
                   503: OpenApiResponse(description="the queue is down; nothing was stored")})
    def post(self, request):
        upload = SubmissionUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        data = upload.validated_data
        system = get_system_for_user(request.user, data["system"], write=True)
        benchmark = get_benchmark_for_user(request.user, data["benchmark"])
        upload = {"system": system, "benchmark": benchmark, "file": data["file"],
                  "user": request.user, "note": data.get("note", ""),
                  "protocol": data["protocol"]}
        try:
            if not submission_validates_inline(data["file"]):
                staged = submission_stage(**upload)
                return Response(StagedUploadSerializer(staged).data,
                                status=status.HTTP_202_ACCEPTED,
                                headers={"Location": reverse("leaderboard:api_staged_upload",
                                                             args=[staged.pk])})
            submission, _run = submission_submit(**upload)
        except FormatError as exc:
            errors = [{"file": i.file, "line": i.line, "path": i.path, "message": i.message}
                      for i in exc.issues]
            return Response({"detail": "The file is not valid; nothing was stored.",
                             "errors": errors}, status=status.HTTP_400_BAD_REQUEST)
        except QuotaExceeded as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_429_TOO_MANY_REQUESTS)
        except ValueError as exc:  # a protocol the benchmark does not take
            return Response({"protocol": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(SubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)


class StagedUploadDetail(APIView):
    """A large upload while a worker checks it (poll it); then the problems or the
    submission."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        description="The check of an upload larger than CONCORD_INLINE_VALIDATION_BYTES, "
                    "which POST /api/submissions/ answered with 202: `status` queued or "
                    "running with `progress` (KiB of the file read), then `succeeded` with "
                    "the stored `submission` (its run is queued) or `failed` with `detail` "
                    "and, for an invalid file, `errors` (one per problem with its line; "
                    "nothing was stored and no quota used). Only the uploader and staff see "
                    "it.",
        responses={200: StagedUploadSerializer,
                   404: OpenApiResponse(description="no such upload of yours")})
    def get(self, request, job_id):
        staged = get_staged_upload_for_user(request.user, job_id)
        submission = None
        if staged.status == staged.Status.SUCCEEDED and staged.result.get("submission"):
            submission = submissions_for_user(request.user).filter(
                uuid=staged.result["submission"]).first()
        return Response(StagedUploadSerializer(staged, context={"submission": submission}).data)


class SubmissionDetail(generics.RetrieveAPIView):
    serializer_class = SubmissionSerializer

    def get_object(self):
        return get_submission_for_user(self.request.user, self.kwargs["uuid"])


class SubmissionPublish(APIView):
    """Publish (`{"public": true}`) or withdraw a submission (its owner or staff)."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=PublishSerializer,
                   responses={200: SubmissionSerializer,
                              409: OpenApiResponse(description="no successful run yet")})
    def post(self, request, uuid):
        submission = get_submission_for_user(request.user, uuid, write=True)
        body = PublishSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        try:
            submission_set_public(submission=submission, user=request.user,
                                  public=body.validated_data["public"])
        except ValueError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(SubmissionSerializer(submission).data)


class RunDetail(APIView):
    """A run's status and progress, and once it succeeded every metric with its 95% CI."""

    @extend_schema(responses=RunResultSerializer)
    def get(self, request, run_id):
        run = get_run_for_user(request.user, run_id)
        data = run_results(run=run)
        job = run.job
        data.update(progress={"stage": job.stage, "done": job.done, "total": job.total,
                              "error": job.error or None},
                    submission=str(run.submission.uuid),
                    page=request.build_absolute_uri(f"/runs/{run.pk}/"))
        return Response(data)


@extend_schema_view(get=extend_schema(
    description="Simulations you started or that ran against your systems, newest first; "
                "filter with ?system=<slug>, ?benchmark=<slug> and ?simulator=<name>.",
    parameters=[OpenApiParameter("system", OpenApiTypes.STR, description="only this system's"),
                OpenApiParameter("benchmark", OpenApiTypes.STR,
                                 description="only this benchmark's"),
                OpenApiParameter("simulator", OpenApiTypes.STR,
                                 description="only this simulator's")]))
class SimulationList(generics.ListAPIView):
    """Your simulations; POST starts one on one of your live systems (docs/simulation.md)."""

    serializer_class = SimulationSerializer
    permission_classes = [ResearcherWrites]

    def get_queryset(self):
        simulations = simulations_for_user(self.request.user).order_by("-created_at", "-pk")
        for key, field in (("system", "system__slug"), ("benchmark", "benchmark__slug"),
                           ("simulator", "simulator")):
            if self.request.query_params.get(key):
                simulations = simulations.filter(**{field: self.request.query_params[key]})
        return simulations

    @extend_schema(
        description="Start a simulation of one of your systems (researchers): with `endpoint` "
                    "the system's live endpoint is registered first (only addresses allowed by "
                    "CONCORD_LIVE_ALLOWED_HOSTS). Everything that would fail for every user is "
                    "refused with 400 and nothing is stored; an LLM simulator whose estimate "
                    "passes the per-run cap is refused with 400, over the daily LLM allowance "
                    "with 429 (CONCORD_LLM_DAILY_BUDGET_*); otherwise its batches are queued "
                    "for the workers — poll the returned `url` for progress and metrics.",
        request=SimulationStartSerializer,
        responses={201: SimulationSerializer,
                   400: OpenApiResponse(description="invalid parameters; nothing was stored"),
                   403: OpenApiResponse(description="not your system, or not a researcher"),
                   404: OpenApiResponse(description="no such system or benchmark"),
                   429: OpenApiResponse(description="your account started its daily allowance "
                                                    "of simulations (CONCORD_DAILY_SIMULATION_"
                                                    "QUOTA), or an LLM simulator's estimate is "
                                                    "over your daily LLM allowance; nothing was "
                                                    "stored"),
                   503: OpenApiResponse(description="the queue is down; nothing was stored")})
    def post(self, request):
        body = SimulationStartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        system = get_system_for_user(request.user, data["system"], write=True)
        benchmark = get_benchmark_for_user(request.user, data["benchmark"])
        try:
            with transaction.atomic():
                if data.get("endpoint"):
                    system_set_live(system=system, endpoint=data["endpoint"],
                                    credential=data.get("credential", ""),
                                    timeout_seconds=data.get("timeout_seconds",
                                                             system.live_timeout_seconds))
                simulation = simulation_create(
                    benchmark=benchmark, system=system, simulator=data["simulator"],
                    users=data["users"], turns=data["turns"], seed=data["seed"],
                    pool=data["pool"], batch_size=data["batch_size"],
                    shown_k=data["shown_k"], accept_at=data["accept_at"], pcir=data["pcir"],
                    failure_threshold=data["failure_threshold"], user=request.user)
        except DjangoValidationError as exc:
            return Response({"detail": "; ".join(exc.messages)},
                            status=status.HTTP_400_BAD_REQUEST)
        except LLMConfigurationError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        except SimulationQuotaExceeded as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_429_TOO_MANY_REQUESTS)
        except BudgetExceeded as exc:  # over today's LLM allowance (429) or the per-run cap
            return Response({"detail": str(exc)}, status=status.HTTP_429_TOO_MANY_REQUESTS
                            if exc.daily else status.HTTP_400_BAD_REQUEST)
        simulation = simulations_for_user(request.user).get(pk=simulation.pk)
        return Response(SimulationSerializer(simulation).data, status=status.HTTP_201_CREATED)


class SimulationDetail(generics.RetrieveAPIView):
    """A simulation: configuration, progress, and its metrics once it succeeded."""

    serializer_class = SimulationSerializer

    def get_object(self):
        return get_simulation_for_user(self.request.user, self.kwargs["simulation_id"])


class SimulationCancel(APIView):
    """Cancel a queued or running simulation (whoever started it, the system's owner, staff):
    its running dialogues stop within a turn and nothing more is stored."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None,
                   responses={200: SimulationSerializer,
                              409: OpenApiResponse(description="it had already finished")})
    def post(self, request, simulation_id):
        simulation = get_simulation_for_user(request.user, simulation_id)
        if not simulation_cancel(simulation=simulation, user=request.user):
            return Response({"detail": f"Simulation #{simulation.pk} had already finished "
                                       f"({simulation.job.status})."},
                            status=status.HTTP_409_CONFLICT)
        simulation = get_simulation_for_user(request.user, simulation_id)
        return Response(SimulationSerializer(simulation).data)


class LeaderboardDetail(APIView):
    """A benchmark's leaderboard as you may see it: every system's metrics with CIs, n and
    tie-aware ranks, and the run behind each number."""

    @extend_schema(
        parameters=[
            OpenApiParameter("protocol", OpenApiTypes.STR,
                             description="turn (default), log, or simulated-<simulator> "
                                         "(e.g. simulated-pepper)"),
            OpenApiParameter("sort", OpenApiTypes.STR,
                             description="column key evaluator:metric, e.g. trace:recall@1"),
            OpenApiParameter("order", OpenApiTypes.STR, enum=["asc", "desc"]),
            OpenApiParameter("family", OpenApiTypes.STR),
            OpenApiParameter("baselines", OpenApiTypes.BOOL, description="false hides them"),
            OpenApiParameter("columns", OpenApiTypes.STR, enum=["headline", "all"],
                             description="default all"),
            OpenApiParameter("splits", OpenApiTypes.STR,
                             description="the split set the runs were evaluated on, e.g. test "
                                         "(default), dev+test; only runs of exactly that "
                                         "coverage are listed and ranked. On a simulated-… "
                                         "board: a design key (design-…, see `design` and "
                                         "`other_splits` in the answer)"),
            OpenApiParameter("dialogues", OpenApiTypes.STR, enum=["all", "both"],
                             description="on a simulated-… board: `both` ranks each design's "
                                         "sanitised runs (leaked dialogues removed, Zhu et "
                                         "al.'s -Both; docs/simulation.md), `all` (default) "
                                         "every dialogue"),
        ],
        responses=LeaderboardSerializer)
    def get(self, request, benchmark):
        benchmark = get_benchmark_for_user(request.user, benchmark)
        protocols = board_protocols([benchmark])[benchmark.pk]
        protocol = request.query_params.get("protocol") or protocols[0]
        if protocol not in protocols:
            return Response({"detail": "This benchmark has no such protocol."}, status=404)
        params = request.query_params
        if params.get("order", "asc") not in ("asc", "desc"):
            raise ValidationError({"order": ["expected asc or desc"]})
        if params.get("columns", "all") not in ("all", "headline"):
            raise ValidationError({"columns": ["expected all or headline"]})
        if params.get("dialogues", "all") not in ("all", "both"):
            raise ValidationError({"dialogues": ["expected all or both"]})
        if params.get("baselines", "true").lower() not in ("true", "false", "1", "0"):
            raise ValidationError({"baselines": ["expected true or false"]})
        try:
            lb = leaderboard(
                benchmark=benchmark, protocol=protocol, user=request.user,
                sort=params.get("sort", ""), order=params.get("order", ""),
                family=params.get("family", ""),
                baselines=params.get("baselines", "true").lower() in ("true", "1"),
                all_columns=params.get("columns", "all") != "headline",
                splits=params.get("splits", "")[:200],
                dialogues=params.get("dialogues", ""))
        except UnknownCoverage as exc:
            raise ValidationError({"splits": [str(exc)]}) from exc
        return Response(leaderboard_payload(lb))


def leaderboard_payload(lb) -> dict:
    systems = []
    for row in lb.rows:
        metrics = {}
        for column, cell in zip(lb.columns, row.cells, strict=True):
            if cell.href:
                metrics[column.key] = {"value": cell.value, "ci_low": cell.ci_low,
                                       "ci_high": cell.ci_high, "n": cell.n,
                                       "rank": cell.rank,
                                       "run": row.runs[column.evaluator].run_id}
                if cell.rule:
                    metrics[column.key]["rule"] = cell.rule
        run = row.run
        systems.append({"rank": row.rank, "system": run.name, "slug": run.slug,
                        "family": run.family, "team": run.team, "baseline": run.is_baseline,
                        "public": not row.private, "splits": lb.coverage,
                        "runs": {ev: r.run_id for ev, r in row.runs.items()},
                        "metrics": metrics})
    return {"benchmark": lb.benchmark.slug, "protocol": lb.protocol, "splits": lb.coverage,
            "other_splits": [{"splits": c.key, "param": c.param, "systems": c.systems,
                              **({"design": c.label} if lb.design else {})}
                             for c in lb.other_coverages],
            "design": lb.design,
            "sort": lb.sort,
            "rank_metric": lb.rank_column.key if lb.rank_column else None,
            "columns": [{"key": c.key, "evaluator": c.evaluator, "metric": c.metric,
                         "axis": c.axis, "direction": c.direction,
                         "human_agreement": _trust(lb, c.key),
                         "simulator_validity": (lb.validity[c.key].as_json()
                                                if c.key in lb.validity else None)}
                        for c in lb.columns],
            "human_agreement_rule": lb.trust_rule,
            "systems": systems}


def _trust(lb, key: str) -> dict | None:
    trust = lb.trust.get(key)
    return trust.to_dict() if trust else None


class ArenaList(generics.ListAPIView):
    """Arenas you can see (those of benchmarks you can see), with their vote counts."""

    serializer_class = ArenaSerializer

    @extend_schema(parameters=[OpenApiParameter("benchmark", OpenApiTypes.STR,
                                                description="only this benchmark's arenas")])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        arenas = arenas_for_user(self.request.user).select_related("benchmark")
        benchmark = self.request.query_params.get("benchmark")
        if benchmark:
            arenas = arenas.filter(benchmark__slug=benchmark)
        return arenas.annotate(vote_count=Count("votes")).order_by("slug")


class ArenaRatings(APIView):
    """An arena's ratings: every system's rating with its 95% bootstrap CI, rank and rank
    interval, vote counts, and the pairwise win rates (docs/statistics.md, Arena)."""

    @extend_schema(
        parameters=[
            OpenApiParameter("method", OpenApiTypes.STR, enum=list(ARENA_METHODS),
                             description="elo (online, CRS Arena; default) or bt "
                                         "(Bradley–Terry, Chatbot Arena)"),
            OpenApiParameter("dataset", OpenApiTypes.STR,
                             description="only battles whose scenario has this source_dataset"),
            OpenApiParameter("scenario", OpenApiTypes.STR,
                             description="only battles on this benchmark dialogue"),
        ],
        responses=ArenaRatingsSerializer)
    def get(self, request, slug):
        arena = get_arena_for_user(request.user, slug)
        method = request.query_params.get("method", "elo")
        if method not in ARENA_METHODS:
            raise ValidationError({"method": ["expected elo or bt"]})
        board = arena_board(arena, method=method,
                            dataset=request.query_params.get("dataset", "")[:100],
                            scenario=request.query_params.get("scenario", "")[:200])
        return Response(arena_board_payload(board))


class TokenObtain(ObtainAuthToken):
    """Exchange a username and password for your API token; throttled like the login form
    (429 with the wait, after too many failures for one account from one address)."""

    @extend_schema(responses={200: TokenSerializer,
                              400: OpenApiResponse(description="wrong username or password"),
                              429: OpenApiResponse(description="too many failed logins; wait")})
    def post(self, request, *args, **kwargs):
        if not hasattr(request.data, "get"):  # a JSON list or string: the serializer says so
            return super().post(request, *args, **kwargs)
        username = str(request.data.get("username") or "")
        wait = login_wait_seconds(username, request)
        if wait:
            return Response({"detail": login_wait_message(wait)},
                            status=status.HTTP_429_TOO_MANY_REQUESTS,
                            headers={"Retry-After": str(wait)})
        try:
            response = super().post(request, *args, **kwargs)
        except ValidationError:
            login_failed(username, request)
            raise
        login_succeeded(username, request)
        return response


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema, one generation at a time (leaderboard.schema.GENERATION_LOCK)."""

    def _get_schema_response(self, request):
        with GENERATION_LOCK:
            return super()._get_schema_response(request)


@csrf_exempt  # it changes nothing: a POST gets the same JSON 404, not an HTML CSRF 403
def api_not_found(request, *args, **kwargs):
    """Any /api/ path that matches no route: a JSON 404, like the API's own."""
    return JsonResponse({"detail": "No such API endpoint; see /api/docs/."}, status=404)
