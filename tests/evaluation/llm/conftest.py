"""Fixtures for the LLM layer: a scripted OpenAI-compatible server and a gateway pointed at it."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

from evaluation.lib.llm.gateway import InMemoryResponseCache, LLMGateway
from tests.evaluation.llm.helpers import SleepRecorder
from tests.support.llm_server import Script, ScriptedLLMServer, scripted_llm_server


@pytest.fixture
def llm_server() -> Iterator[Callable[..., ScriptedLLMServer]]:
    """``llm_server(script)`` starts a scripted server on 127.0.0.1 for this test."""
    with ExitStack() as stack:

        def start(script: Script, **options) -> ScriptedLLMServer:
            return stack.enter_context(scripted_llm_server(script, **options))

        yield start


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def gateway(sleeps: SleepRecorder) -> LLMGateway:
    return LLMGateway(InMemoryResponseCache(), sleep=sleeps, rng=random.Random(7))
