"""Shared set-up for the LLM evaluator run tests: a `log` submission on the tiny benchmark and a
scripted OpenAI-compatible server (tests/support/llm_server.py) answering CoRE's prompts."""

import json
from contextlib import ExitStack

import pytest

from evaluation.lib.llm.profiles import parse_profiles
from evaluation.models import Job, Run
from evaluation.services.runs import run_process
from evaluation.services.submissions import submission_create, system_create
from tests.evaluation.llm.helpers import debate_role_and_round, factor_name
from tests.support.llm_server import RecordedRequest, ScriptedLLMServer, scripted_llm_server

MODEL = "openai/scripted-judge"  # litellm knows no price for it: the cost is unknown

LOGS = [
    {"log_id": "log-d1", "dialogue_id": "d1", "metadata": {"history_turns": 1},
     "ground_truth_item_ids": ["r2"],
     "turns": [
         {"role": "user", "text": "I want quiet seafood."},
         {"role": "system", "text": "Try Harbor Grill, known for its crab cakes.",
          "recommended_item_ids": ["r1", "r2"]},
         {"role": "user", "text": "Too pricey, something cheaper?"},
         {"role": "system", "text": "Noodle Nook is cheap and the broth is rich.",
          "recommended_item_ids": ["r2"]},
     ]},
    {"log_id": "log-d2", "dialogue_id": "d2", "ground_truth_item_ids": ["h1"],
     "turns": [
         {"role": "user", "text": "A hotel with parking?"},
         {"role": "system", "text": "Old City Inn has free parking.",
          "recommended_item_ids": ["a1", "h1"]},
     ]},
]

# log-d1's roles never agree, so its debate runs all four rounds; log-d2's agree in round 2.
NO_AGREEMENT = {"Common User": 40, "Domain Expert": 55, "Linguist": 70, "HCI Expert": 20}
FACTOR_SCORES = {"Coherence": 4, "Naturalness": 2, "Novelty": 1}  # others: 3


def is_d1(request: RecordedRequest) -> bool:
    return "seafood" in request.prompt_text


def debate_score(role: str, number: int, d1: bool) -> int:
    if d1:
        return NO_AGREEMENT[role] + number
    return 80 if number >= 2 else NO_AGREEMENT[role]


def core_answer(request: RecordedRequest, *, rationale=None) -> str:
    """A well-formed answer to any CoRE prompt (factor, debate, persuasiveness)."""
    text = request.prompt_text
    if "<guideline factor=" in text:
        name = factor_name(request)
        reason = rationale(name) if rationale else f"I counted the {name} problems turn by turn."
        return f"{reason}\n<rating>{FACTOR_SCORES.get(name, 3)}</rating>"
    if "YOUR ROLE:" in text:
        role, number = debate_role_and_round(request)
        return json.dumps({"evaluator": role, "score": debate_score(role, number, is_d1(request)),
                           "statement": f"As the {role}, in round {number} I weigh the factors."})
    if "how persuasive" in text:
        return "The explanation is accurate but only partly what I wanted.\n<rating>1</rating>"
    raise AssertionError(f"unexpected prompt: {text[:200]}")


def server_config(server: ScriptedLLMServer, model: str = MODEL) -> dict:
    """A run configuration's model entry: MODEL on SERVER's profile (see `llm_server`)."""
    return {"profile": server.profile, "model": model, "temperature": 0.0, "max_tokens": None}


def offer_profile(settings, name: str, api_base: str, credential: str | None = None,
                  model: str = MODEL, **keys) -> None:
    """Make NAME one of the operator's model profiles (MODEL at API_BASE, and any other
    profile KEYS such as backend) for this test."""
    profile = {"model": model, "api_base": api_base, **keys}
    if credential:
        profile["credential"] = credential
    settings.LLM_PROFILES = {**settings.LLM_PROFILES, **parse_profiles(
        json.dumps({name: profile}), credentials=settings.CREDENTIALS,
        min_evaluation_params=settings.LLM_MIN_EVALUATION_PARAMS)}


@pytest.fixture
def llm_server(settings):
    """``llm_server(script)`` starts a scripted server on 127.0.0.1 for this test; it is the
    operator's model profile ``server.profile`` (runs pick it by name, as users do)."""
    with ExitStack() as stack:
        def start(script, **options) -> ScriptedLLMServer:
            server = stack.enter_context(scripted_llm_server(script, **options))
            server.profile = f"scripted-{len(settings.LLM_PROFILES)}"
            offer_profile(settings, server.profile, server.api_base)
            return server

        yield start


@pytest.fixture
def llm_settings(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.LLM_MODEL = ""
    settings.LLM_BACKOFF_SECONDS = 0.001  # retries wait (almost) nothing in tests
    settings.LLM_MAX_RETRIES = 3
    settings.LLM_MAX_CONCURRENCY = 4
    return settings


@pytest.fixture
def log_submission(tiny_benchmark, researcher, llm_settings, tmp_path):
    path = tmp_path / "logs.jsonl"
    path.write_text("".join(json.dumps(log) + "\n" for log in LOGS), encoding="utf-8")
    system = system_create(name="Chatty CRS", owner=researcher)
    return submission_create(system=system, benchmark=tiny_benchmark, path_or_file=path,
                             user=researcher, protocol="log")


def executed(run: Run) -> Run:
    run_process(job_id=run.job_id)
    run.refresh_from_db()
    run.job.refresh_from_db()
    return run


def succeeded(run: Run) -> Run:
    run = executed(run)
    assert run.job.status == Job.Status.SUCCEEDED, run.job.error
    return run
