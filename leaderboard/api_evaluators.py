"""`POST /api/submissions/<uuid>/llm-runs/`: start an LLM evaluator on a submission, as its page
does (docs/llm.md, "From the API"): the estimate first, then the run.

Who may: staff and study authors on any submission they see, a researcher on their own systems'
(`get_submission_to_evaluate`). The body is the web form's (`evaluator`, `profile`: one of the
operator's model profiles, never an address or a key; `instructions` for FACE; `limit`);
without `"confirm": true` the answer is the estimate and today's allowance, and nothing is
stored; with it the run is queued within the account's budget (`llm_run_create`: the per-run
cap and the daily allowance, checked atomically), 202 with the run's address. An identical run
already queued or running answers 409 with that run.
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.models import LLMSpend
from evaluation.services.llm_runs import DuplicateRun, llm_run_create, llm_run_estimate
from evaluation.services.spending import BudgetExceeded, spending_preview

from .access import get_submission_to_evaluate
from .serializers import ErrorSerializer

# the web page's form and its choices: one way to choose an evaluator and a model profile
from .views_evaluators import _CHOICE_ERRORS, _form, _run_options


class LLMRunStartSerializer(serializers.Serializer):
    evaluator = serializers.CharField(help_text="an LLM evaluator reading the submission's "
                                                "protocol (e.g. pepper_judge, core, face)")
    profile = serializers.CharField(help_text="one of the operator's model profiles "
                                              "(CONCORD_LLM_PROFILES; `default`)")
    instructions = serializers.CharField(required=False, help_text="FACE only: e.g. "
                                                                   "relevance-v1")
    limit = serializers.IntegerField(required=False, min_value=1,
                                     help_text="only the first N units (a cheap trial)")
    confirm = serializers.BooleanField(default=False, help_text="false: the estimate only; "
                                                                "true: start the run")


def _allowance(budget: dict) -> dict:
    allowance = budget["allowance"]
    return {"tokens_used": allowance.tokens_used, "tokens_limit": allowance.tokens_limit,
            "usd_used": allowance.usd_used, "usd_limit": allowance.usd_limit,
            "resets_at": allowance.resets_at.isoformat()}


class SubmissionLLMRuns(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        description="Estimate (without `confirm`) or start (`confirm: true`) an LLM evaluator "
                    "on a submission: staff and study authors on any submission they see, a "
                    "researcher on their own systems'. The model is one of the operator's "
                    "profiles. Starting counts against your daily LLM allowance and the "
                    "per-run cap (CONCORD_LLM_DAILY_BUDGET_*, CONCORD_LLM_RUN_CAP_*).",
        request=LLMRunStartSerializer,
        responses={200: OpenApiResponse(description="the estimate and today's allowance; "
                                                    "nothing stored"),
                   202: OpenApiResponse(description="the run is queued: poll `url`"),
                   400: OpenApiResponse(description="an unknown evaluator or profile, or over "
                                                    "the per-run cap; nothing stored"),
                   403: ErrorSerializer, 404: ErrorSerializer,
                   409: OpenApiResponse(description="an identical run is queued or running"),
                   429: OpenApiResponse(description="over your daily LLM allowance; nothing "
                                                    "stored"),
                   503: OpenApiResponse(description="the queue is down; nothing stored")})
    def post(self, request, uuid):
        submission = get_submission_to_evaluate(request.user, uuid)
        body = LLMRunStartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        form = _form(submission, {key: data[key] for key in ("evaluator", "profile",
                                                               "instructions", "limit")
                                  if data.get(key) is not None})
        if not form.is_valid():
            return Response({field: [error["message"] for error in errors]
                             for field, errors in form.errors.get_json_data().items()},
                            status=status.HTTP_400_BAD_REQUEST)
        try:
            options = _run_options(form)
            if not data["confirm"]:
                estimate = llm_run_estimate(submission=submission, **options)
                budget = spending_preview(user=request.user, estimate=estimate,
                                          kind=LLMSpend.Kind.RUN)
                return Response({"estimate": estimate.to_dict(), "allowance": _allowance(budget),
                                 "problem": budget["problem"] or None,
                                 "next": "send the same body with \"confirm\": true to start"})
            run = llm_run_create(submission=submission, user=request.user, enqueue=True,
                                 **options)
        except DuplicateRun as twin:
            return Response({"detail": str(twin), "run": twin.run.pk,
                             "url": request.build_absolute_uri(f"/api/runs/{twin.run.pk}/")},
                            status=status.HTTP_409_CONFLICT)
        except BudgetExceeded as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_429_TOO_MANY_REQUESTS
                            if exc.daily else status.HTTP_400_BAD_REQUEST)
        except _CHOICE_ERRORS as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response({"run": run.pk, "job": run.job_id,
                         "url": request.build_absolute_uri(f"/api/runs/{run.pk}/"),
                         "page": request.build_absolute_uri(f"/jobs/{run.job_id}/")},
                        status=status.HTTP_202_ACCEPTED)
