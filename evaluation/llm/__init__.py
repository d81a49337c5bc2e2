"""LLM layer: the gateway and the LLM-based evaluators and baselines (pure Python, no Django).

- ``gateway``: the one entry point for LLM calls (litellm, cache, retries, usage).
- ``core`` / ``core_rubrics``: CoRE twelve-factor judge, debate, mixture of evaluators.
- ``trace_judge``: the Trace five-criterion turn judge.
- ``pepper_judge``: the PEPPER qualitative judge.
- ``baselines``: LLM Zero-Shot and RAG-Citation baselines (Trace).
- ``local_server``: a local Hugging Face model behind an OpenAI-compatible API.
"""
