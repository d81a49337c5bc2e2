"""LLM budgets (docs/operations.md, "LLM budgets"): every start that spends LLM money reserves
its estimate in the ledger in the transaction that creates its job, under its account's row
lock, and is refused over a per-run cap or today's allowance with a message that says by how
much; a finished job's reservation is settled to what it actually spent; identical concurrent
LLM runs make one run.

Runs go to a scripted OpenAI-compatible server on 127.0.0.1 (tests/support/llm_server.py);
concurrency is tested with real threads on their own database connections."""

import json
import threading

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import close_old_connections, connection

from evaluation.lib.llm import estimate as run_estimate
from evaluation.lib.simulators.users import simulated_users
from evaluation.models import Job, LLMSpend, Run, Simulation, Submission
from evaluation.services.live import live_system_create
from evaluation.services.llm_runs import DuplicateRun, llm_run_create, llm_run_estimate
from evaluation.services.runs import run_process
from evaluation.services.simulations import simulation_create
from evaluation.services.spending import (
    Allowance,
    BudgetExceeded,
    budget_problem,
    spending_remaining,
    tokens_text,
)
from tests.evaluation.llm_fixtures import server_config
from tests.evaluation.simulation_fixtures import run_all, simulation_bundle
from tests.support.live_server import live_server

PEPPER_ANSWER = ("The system asked about my needs.\n<proactiveness>4</proactiveness>\n"
                 "<coherence>3</coherence>\n<personalization>5</personalization>")
UNPRICED = "openai/scripted-judge"  # litellm has no price for it


# --- the estimates of simulations and FACE optimisation (pure) -------------------------------


def _users():
    data = simulation_bundle()
    return simulated_users(items=data["items"], reviews=data["reviews"],
                           dialogues=data["dialogues"], include_hidden=True)


def test_a_pepper_simulation_estimate_counts_every_call_and_a_growing_transcript():
    users = _users()
    four = run_estimate.estimate_simulation("pepper", users, total_users=3, turns=4, shown_k=5,
                                            price=lambda p, a: None)
    kinds = {k.kind: k for k in four.kinds}
    # per user: its preferences, the opening, a reply after every system turn but the last
    assert (kinds["sim_preferences"].calls, kinds["sim_utterance"].calls,
            kinds["sim_reflection"].calls) == (3, 3, 9)
    assert four.cost_usd is None and four.units == 3
    five = run_estimate.estimate_simulation("pepper", users, total_users=3, turns=5, shown_k=5,
                                            price=lambda p, a: None)
    reflect = {k.kind: k for k in five.kinds}["sim_reflection"]
    # reply t's prompt carries t exchanges of transcript: replies 1-3 average base + 2 of
    # them, and the fourth reply (turns=5) is base + 4
    exchange = run_estimate.SIM_SYSTEM_ANSWER_TOKENS + run_estimate.SIM_USER_MESSAGE_TOKENS
    base = kinds["sim_reflection"].prompt_tokens / 9 - 2 * exchange
    fourth = (reflect.prompt_tokens - kinds["sim_reflection"].prompt_tokens) / 3
    assert fourth == pytest.approx(base + 4 * exchange, abs=1)
    # users not sampled are counted like those that were
    many = run_estimate.estimate_simulation("pepper", users, total_users=300, turns=4,
                                            shown_k=5, price=lambda p, a: None)
    assert many.total_tokens == pytest.approx(100 * four.total_tokens, rel=1e-3)
    ievalm = run_estimate.estimate_simulation("ievalm", users, total_users=3, turns=4,
                                              shown_k=5, price=lambda p, a: 1.0)
    # iEvaLM: the opening, the replies, and its persuasiveness score once per user at the end
    assert ievalm.calls == 3 + 9 + 3 and ievalm.cost_usd == 1.0
    assert {k.kind: k.calls for k in ievalm.kinds}["persuasiveness"] == 3
    with pytest.raises(ValueError, match="not an LLM simulator"):
        run_estimate.estimate_simulation("template", users, total_users=3, turns=4, shown_k=5,
                                         price=lambda p, a: None)


def test_face_optimisation_calls_follow_algorithm_one():
    params = {"iterations": 1, "beam": 1, "candidates": 2, "gradients": 1,
              "gradient_particles": 4, "ucb_sample": 8, "ucb_rounds": 0, "dev_share": 0.2,
              "final_size": 0}
    # 30 particles: 24 training, 6 dev. The seed's training correlation (24); the parent's
    # prediction on 4 sampled particles (4) and their 4 gradient calls; 4 rewrites, so
    # ceil(2.5 x 4) = 10 UCB rounds of 8 particles (80); the 2 pool candidates on the training
    # set (48); the final: the pool on dev (12), the chosen one on train and dev (30).
    assert run_estimate.face_optimization_calls(params, particles=30) == {
        "score": 24 + 4 + 80 + 48 + 12 + 30, "gradient": 4}
    two = run_estimate.face_optimization_calls({**params, "iterations": 2, "beam": 2},
                                               particles=30)
    assert two["gradient"] == 4 + 2 * 4


# --- the budget's messages -------------------------------------------------------------------


def test_a_refusal_says_the_estimate_what_is_left_the_setting_and_the_reset(settings):
    settings.LLM_RUN_CAP_TOKENS, settings.LLM_RUN_CAP_USD = 0, 0
    estimate = run_estimate.RunEstimate(units=1, kinds=[run_estimate.CallKind(
        "trace_judge", calls=1, prompt_tokens=1_150_000, answer_tokens=50_000)], cost_usd=None)
    allowance = Allowance(
        tokens_used=4_700_000, usd_used=0.0, tokens_limit=5_000_000, usd_limit=20.0,
        resets_at=None)
    assert budget_problem(estimate, allowance) == (
        "This run is estimated at 1.2 M tokens; your daily allowance has 300 k tokens left "
        "(CONCORD_LLM_DAILY_BUDGET_TOKENS); it resets at 00:00 UTC.")
    settings.LLM_RUN_CAP_TOKENS = 1_000_000
    assert "over the per-run cap of 1.0 M tokens (CONCORD_LLM_RUN_CAP_TOKENS)" in \
        budget_problem(estimate, allowance, what="simulation")
    assert tokens_text(950) == "950" and tokens_text(12_345) == "12 k"


# --- LLM runs started by hand ----------------------------------------------------------------


@pytest.fixture
def judge(llm_server):
    return llm_server(lambda request: PEPPER_ANSWER)


def _start(submission, server, user, **options):
    submission = Submission.objects.get(pk=submission.pk)  # its own file handle per thread
    return llm_run_create(submission=submission, evaluator="pepper_judge",
                          model=server_config(server, UNPRICED), user=user, enqueue=False,
                          **options)


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_a_run_reserves_its_estimate_and_settles_to_what_it_spent(log_submission,
                                                                   judge, researcher):
    estimate = llm_run_estimate(submission=log_submission, evaluator="pepper_judge",
                                model=server_config(judge, UNPRICED))
    run = _start(log_submission, judge, researcher)
    spend = LLMSpend.objects.get(job=run.job)
    assert spend.account.key == f"user:{researcher.pk}" and spend.kind == "run"
    assert (spend.estimated_tokens, spend.estimated_usd) == (estimate.total_tokens, None)
    assert spend.status == "reserved" and spend.budgeted
    assert spending_remaining(user=researcher).tokens_used == estimate.total_tokens
    run_process(job_id=run.job_id)
    run.refresh_from_db()
    spend.refresh_from_db()
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    assert spend.status == "settled" and spend.spent_tokens == run.usage["total_tokens"] > 0
    assert spend.spent_usd is None  # no price: unknown, never $0
    assert spending_remaining(user=researcher).tokens_used == run.usage["total_tokens"]


def test_a_dead_workers_run_is_settled_by_the_sweep(log_submission, judge, researcher):
    from datetime import timedelta

    from django.utils import timezone

    from evaluation.services.jobs import jobs_fail_stale

    run = _start(log_submission, judge, researcher)
    Run.objects.filter(pk=run.pk).update(usage={"total_tokens": 123, "cost_usd": None})
    Job.objects.filter(pk=run.job_id).update(
        status=Job.Status.RUNNING, heartbeat_at=timezone.now() - timedelta(hours=1))
    assert jobs_fail_stale() == 1
    spend = LLMSpend.objects.get(job=run.job)
    assert (spend.status, spend.spent_tokens, spend.spent_usd) == ("settled", 123, None)
    assert spending_remaining(user=researcher).tokens_used == 123


def test_over_the_daily_tokens_nothing_is_stored_and_the_message_says_why(
        log_submission, judge, researcher, settings):
    first = _start(log_submission, judge, researcher)
    reserved = LLMSpend.objects.get(job=first.job).estimated_tokens
    settings.LLM_DAILY_BUDGET_TOKENS = reserved + reserved // 2
    counts = (Run.objects.count(), Job.objects.count(), LLMSpend.objects.count())
    with pytest.raises(BudgetExceeded) as refused:
        _start(log_submission, judge, researcher, stop_after=7)  # another configuration
    assert str(refused.value) == (
        f"This run is estimated at {tokens_text(reserved)} tokens; your daily allowance has "
        f"{tokens_text(reserved // 2)} tokens left (CONCORD_LLM_DAILY_BUDGET_TOKENS); it resets "
        "at 00:00 UTC.") and refused.value.daily
    assert (Run.objects.count(), Job.objects.count(), LLMSpend.objects.count()) == counts


def test_an_unknown_price_counts_by_tokens_never_as_free(log_submission, judge,
                                                         researcher, settings):
    settings.LLM_DAILY_BUDGET_USD = 0.000001  # nothing priced would fit
    _start(log_submission, judge, researcher)  # unpriced: checked by its tokens instead
    settings.LLM_DAILY_BUDGET_TOKENS = 0  # no token limit: the dollars cannot be checked
    with pytest.raises(BudgetExceeded, match="at an unknown price .* cannot be checked against "
                                             "CONCORD_LLM_DAILY_BUDGET_USD") as unchecked:
        _start(log_submission, judge, researcher, stop_after=7)
    assert not unchecked.value.daily  # waiting for tomorrow would not help
    settings.LLM_RUN_CAP_TOKENS = 10
    settings.LLM_DAILY_BUDGET_TOKENS = 10**9
    with pytest.raises(BudgetExceeded, match=r"over the per-run cap of 10 tokens \(CONCORD_LLM_"
                                             r"RUN_CAP_TOKENS\)") as capped:
        _start(log_submission, judge, researcher, stop_after=8)
    assert not capped.value.daily
    assert Run.objects.count() == 1


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_an_identical_run_while_one_is_queued_is_refused_naming_it(log_submission,
                                                                    judge, researcher, staff):
    run = _start(log_submission, judge, researcher)
    with pytest.raises(DuplicateRun, match=f"already queued \\(run {run.pk}, job "
                                           f"{run.job_id}") as twin:
        _start(log_submission, judge, staff)  # whoever starts it
    assert twin.value.run == run and Run.objects.count() == 1
    assert LLMSpend.objects.count() == 1  # the refused one reserved nothing
    run_process(job_id=run.job_id)
    again = _start(log_submission, judge, researcher)  # the first one finished
    assert again.pk != run.pk


@pytest.mark.django_db(transaction=True)  # the cache writes from the gateway's threads
def test_the_command_line_checks_the_operator_budget_unless_told_not_to(
        log_submission, judge, settings):
    settings.LLM_DAILY_BUDGET_TOKENS = 10
    options = {"benchmark": log_submission.benchmark.slug, "submission_id": log_submission.pk,
               "evaluator": "pepper_judge", "model": UNPRICED, "profile": judge.profile,
               "no_progress": True}
    with pytest.raises(CommandError, match="your daily allowance has 10 tokens left .* "
                                           r"\(--no-budget starts it anyway\)"):
        call_command("evaluate", **options)
    assert not Run.objects.exists()
    call_command("evaluate", no_budget=True, json=True, **options)
    spend = LLMSpend.objects.get()
    assert spend.account.key == "operator" and not spend.budgeted
    # what the run spent (its answers may all come from the response cache: nothing)
    assert spend.status == "settled"
    assert spend.spent_tokens == Run.objects.get().usage["total_tokens"]


# --- simulations with an LLM user ------------------------------------------------------------


def pepper_user(request):
    prompt = request.prompt_text
    if "summarise a person's tastes" in prompt:
        return json.dumps({"likes": ["seafood"], "dislikes": ["noise"],
                           "narrative": "I love seafood."})
    return json.dumps({"reflected_preferences": [], "utterance": "Something else?"})


@pytest.mark.django_db(transaction=True)
def test_a_pepper_simulation_reserves_and_counts_what_its_batches_spent(
        sim_benchmark, researcher, llm_server, llm_settings):
    llm = llm_server(pepper_user)
    model = server_config(llm, "openai/scripted-user")
    with live_server(lambda body: {"response": "Try r1.", "ranked_item_ids": ["r1"]}) as crs:
        system = live_system_create(name="CRS", owner=researcher, endpoint=crs.url)
        llm_settings.LLM_DAILY_BUDGET_TOKENS = 50
        with pytest.raises(BudgetExceeded, match="This simulation is estimated at .* tokens; "
                                                 "your daily allowance has 50 tokens left"):
            simulation_create(benchmark=sim_benchmark, system=system, simulator="pepper",
                              users=3, turns=3, model=model, user=researcher, enqueue=False)
        assert not Simulation.objects.exists() and not LLMSpend.objects.exists()
        llm_settings.LLM_DAILY_BUDGET_TOKENS = 10**7
        simulation = run_all(simulation_create(
            benchmark=sim_benchmark, system=system, simulator="pepper", users=3, turns=3,
            model=model, user=researcher, enqueue=False, batch_size=2))
    assert simulation.job.status == Job.Status.SUCCEEDED, simulation.job.error
    spend = LLMSpend.objects.get(job=simulation.job)
    assert spend.kind == "simulation" and spend.estimated_tokens > 0
    # every call the server answered is counted (cached ones cost nothing)
    served = llm.usage_totals()
    assert spend.status == "settled" and served["answers"] >= 6
    assert spend.spent_tokens == served["prompt_tokens"] + served["completion_tokens"]


# --- concurrent starts (PostgreSQL: row locks; SQLite serialises its writers) ----------------


def _at_once(count, start):
    barrier, outcomes = threading.Barrier(count), []

    def one(number):
        close_old_connections()
        try:
            barrier.wait()
            outcomes.append(start(number))
        except (BudgetExceeded, DuplicateRun) as refused:
            outcomes.append(refused)
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(outcomes) == count
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_starts_never_reserve_more_than_the_budget(
        log_submission, judge, researcher, settings):
    one = llm_run_estimate(submission=log_submission, evaluator="pepper_judge",
                           model=server_config(judge, UNPRICED)).total_tokens
    settings.LLM_DAILY_BUDGET_TOKENS = 3 * one + one // 2
    # ten different configurations (no duplicate), each estimated at ONE tokens
    outcomes = _at_once(10, lambda n: _start(log_submission, judge, researcher,
                                             stop_after=n + 1))
    started = [o for o in outcomes if isinstance(o, Run)]
    assert len(started) == 3 and all(isinstance(o, BudgetExceeded) for o in outcomes
                                     if o not in started)
    reserved = sum(LLMSpend.objects.values_list("estimated_tokens", flat=True))
    assert reserved == 3 * one <= settings.LLM_DAILY_BUDGET_TOKENS
    assert Run.objects.count() == Job.objects.count() == 3


@pytest.mark.django_db(transaction=True)
def test_ten_concurrent_identical_starts_make_one_run(log_submission, judge,
                                                       researcher):
    outcomes = _at_once(10, lambda n: _start(log_submission, judge, researcher))
    runs = [o for o in outcomes if isinstance(o, Run)]
    assert len(runs) == 1 and Run.objects.count() == 1 and LLMSpend.objects.count() == 1
    assert all(isinstance(o, DuplicateRun) and o.run.pk == runs[0].pk
               for o in outcomes if o is not runs[0])
