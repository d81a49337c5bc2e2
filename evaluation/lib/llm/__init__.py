"""LLM layer: the gateway and the LLM-based evaluators and baselines (pure Python, no Django).

- ``gateway``: the one entry point for LLM calls (litellm, cache, retries, usage).
- ``core`` / ``core_rubrics``: CoRE twelve-factor judge, debate, mixture of evaluators.
- ``trace_judge``: the Trace five-criterion turn judge.
- ``pepper_judge``: the PEPPER qualitative judge.
- ``baselines``: LLM Zero-Shot and RAG-Citation baselines (Trace).
- ``local_server``: a local Hugging Face model behind an OpenAI-compatible API.
- ``evaluators`` / ``names``: what each LLM evaluator declares (metrics, version, protocol).
- ``adapters``: Concord's formats as the judges' and baselines' inputs.
- ``cost_report``: CoRE's tokens per log, measured against a local dry-run server.
"""
