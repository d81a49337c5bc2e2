"""Fixtures of the LLM evaluator run tests (tests/evaluation/test_llm_*.py)."""

from tests.evaluation.llm_fixtures import llm_server, llm_settings, log_submission  # noqa: F401
from tests.evaluation.simulation_fixtures import sim_benchmark  # noqa: F401
