"""The LLM evaluators' names, importable without loading litellm (which takes seconds), so views
and services can tell an LLM run from another without importing the LLM layer."""

CORE, TRACE_JUDGE, PEPPER_JUDGE, FACE = "core", "trace_judge", "pepper_judge", "face"
LLM_EVALUATOR_NAMES = (CORE, TRACE_JUDGE, PEPPER_JUDGE, FACE)
