"""LLM layer: the gateway and the LLM-based evaluators and baselines (pure Python, no Django).

- ``gateway``: the one entry point for LLM calls (litellm, cache, retries, usage).
- CoRE: ``core_rubrics`` (the prompts' wording), ``core_factors`` (the twelve-factor judge),
  ``core_debate`` (the multi-agent debate), ``core_routing`` (mixture of evaluators: the judge
  per factor by QWK), ``core_recall_persuasiveness`` (the measures reported beside it).
- ``trace_judge``: the Trace five-criterion turn judge.
- ``pepper_judge``: the PEPPER qualitative judge.
- ``baselines``: LLM Zero-Shot and RAG-Citation baselines (Trace).
- ``local_server``: a local Hugging Face model (a folder or a .gguf file) behind an
  OpenAI-compatible API; ``local_decoding``: its constrained decoding (answer formats).
- ``limiter``: the site-wide LLM slots (Redis, or per process).
- ``registry``: every LLM evaluator is one registered object (name, metrics, prompts and their
  answer formats, configuration, estimate, run, run page, docs row); ``evaluators``: the
  built-in ones (CoRE, Trace judge, PEPPER judge, FACE), registered on import.
- ``answer_format``: an LLM call's answer format as data (JSON schema or regex).
- ``adapters``: Concord's formats as the judges' and baselines' inputs.
- ``cost_report``: CoRE's tokens per log, measured against a local dry-run server.
"""
