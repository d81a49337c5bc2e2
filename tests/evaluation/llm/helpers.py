"""Helpers shared by the LLM-layer tests."""

from __future__ import annotations

import re

from evaluation.lib.llm.gateway import ModelConfig
from tests.support.llm_server import RecordedRequest, ScriptedLLMServer

DUMMY_KEY = "sk-test-not-a-real-key"


def config_for(
    server: ScriptedLLMServer, model: str = "openai/scripted-judge", **options
) -> ModelConfig:
    return ModelConfig(model=model, api_base=server.api_base, api_key=DUMMY_KEY, **options)


class SleepRecorder:
    """Stands in for ``time.sleep``: records the backoff delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def factor_name(request: RecordedRequest) -> str:
    """The CoRE factor a request asks about (from its guideline header)."""
    match = re.search(r'<guideline factor="([^"]+)">', request.prompt_text)
    assert match, "not a CoRE factor prompt"
    return match.group(1)


def debate_role_and_round(request: RecordedRequest) -> tuple[str, int]:
    role = re.search(r"YOUR ROLE: ([A-Za-z ]+)\n", request.prompt_text)
    number = re.search(r"This is round (\d+)\.", request.prompt_text)
    assert role, "not a debate prompt"
    return role.group(1).strip(), int(number.group(1)) if number else 1
