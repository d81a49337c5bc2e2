"""The operator's model profiles as a run's model entries, the LLM gateway, and usage meters.

A run configuration names a model profile and its model (`model_options`), never an address or
a key; `model_config` turns an entry into the gateway's ModelConfig from the operator's profile
(`evaluation/lib/llm/profiles.py`, CONCORD_LLM_PROFILES and the implicit `default`);
`llm_gateway` is the gateway on the database response cache; `RunUsage` meters tokens and cost
per stage of a run (judge, debate, simulator, system).
"""

import threading

from django.conf import settings

from evaluation.lib.llm.gateway import (
    LLMConfigurationError,
    LLMGateway,
    ModelConfig,
    UsageMeter,
)
from evaluation.lib.llm.limiter import PROCESS_LIMITER, Limiter, RedisLimiter
from evaluation.lib.llm.profiles import DEFAULT as DEFAULT_PROFILE
from evaluation.lib.llm.profiles import SETTING as PROFILES_SETTING
from evaluation.lib.llm.profiles import ModelProfile, default_profile
from evaluation.response_cache import DatabaseResponseCache

# The openai SDK refuses to send a request without some key; local OpenAI-compatible servers
# (vLLM, Ollama, evaluation.lib.llm.local_server) ignore it.
LOCAL_SERVER_KEY = "no-key-needed"


# --- model configuration -------------------------------------------------------------------


def llm_profiles() -> dict[str, ModelProfile]:
    """The operator's model profiles by name: the implicit `default` (the CONCORD_LLM_*
    settings) and CONCORD_LLM_PROFILES (whose own `default` replaces it)."""
    default = default_profile(model=settings.LLM_MODEL, api_base=settings.LLM_API_BASE,
                              key_variable=settings.LLM_API_KEY_ENV, backend=settings.LLM_BACKEND)
    return {DEFAULT_PROFILE: default, **settings.LLM_PROFILES}


def llm_profile_choices() -> list[ModelProfile]:
    """The profiles a user may pick: those with a model, `default` first."""
    return [profile for profile in llm_profiles().values() if profile.model]


def llm_profile(name: str | None) -> ModelProfile:
    """The profile called NAME (None: `default`); LLMConfigurationError when there is none."""
    profiles = llm_profiles()
    profile = profiles.get(name or DEFAULT_PROFILE)
    if profile is None:
        offered = ", ".join(p.name for p in llm_profile_choices()) or "none"
        raise LLMConfigurationError(f"model profile {name!r} is not one the operator offers "
                                    f"({PROFILES_SETTING}): choose one of {offered}")
    return profile


# Said on web pages too: what to do, in words (the command line adds its --model option).
NO_MODEL = ("no LLM is configured: the operator sets CONCORD_LLM_MODEL or offers a model "
            "profile (docs/llm.md)")


def model_options(*, profile: str | None = None, model: str | None = None,
                  temperature: float | None = None, max_tokens: int | None = None) -> dict:
    """One model's entry in a run configuration: the operator's PROFILE (default: `default`)
    and its model, or MODEL in its place (the command line's --model). Records the profile's
    name and the model, never an address, a key or the variable holding one."""
    chosen = llm_profile(profile)
    model = model or chosen.model
    if not model:
        raise LLMConfigurationError(NO_MODEL)
    return {
        "profile": chosen.name,
        "model": model,
        "temperature": settings.LLM_TEMPERATURE if temperature is None else float(temperature),
        "max_tokens": max_tokens or settings.LLM_MAX_TOKENS or None,
    }


def run_evaluation_grade(entries) -> dict:
    """The `evaluation_grade` and `smoke_test_reason` of a run whose LLM calls use ENTRIES
    (run-configuration model entries; None entries are skipped): evaluation-grade only when
    every profile it uses is (docs/llm.md, "Smoke tests")."""
    profiles = llm_profiles()
    for options in entries:
        if not options:
            continue
        profile = profiles.get(options.get("profile") or DEFAULT_PROFILE)
        if profile is not None and not profile.evaluation_grade:
            reason = (f"Model profile {profile.name!r} ({options.get('model')}) is "
                      f"not evaluation-grade: {profile.why_not_evaluation_grade}.")
            return {"evaluation_grade": False, "smoke_test_reason": reason[:300]}
    return {"evaluation_grade": True, "smoke_test_reason": ""}


def model_config(options: dict) -> ModelConfig:
    """The gateway's ModelConfig for a run-configuration entry (see `model_options`). Where the
    model is and which key it gets come from the operator's profile alone (an older entry's
    `api_base` or `api_key_env` is ignored). A profile with an address but no credential sends
    a placeholder key, never a provider variable litellm would read from the environment."""
    profile = llm_profile(options.get("profile"))
    api_key = LOCAL_SERVER_KEY if profile.api_base and not profile.key_variable else None
    return ModelConfig(model=options["model"], api_base=profile.api_base, api_key=api_key,
                       api_key_env=profile.key_variable,
                       temperature=options.get("temperature", 0.0),
                       max_tokens=options.get("max_tokens"), timeout=settings.LLM_TIMEOUT_SECONDS,
                       backend=profile.backend)


_limiters: dict[str, RedisLimiter] = {}
_limiters_lock = threading.Lock()


def llm_limiter() -> Limiter:
    """The site's LLM slots: on Redis when there is one (every process shares them), else
    this process's (the embedded mode's single worker)."""
    url = settings.LLM_SLOTS_REDIS_URL
    if not url:
        return PROCESS_LIMITER
    with _limiters_lock:
        if url not in _limiters:
            _limiters[url] = RedisLimiter(url)
        return _limiters[url]


def llm_gateway() -> LLMGateway:
    """A gateway on the shared database cache with the configured concurrency and retries,
    taking its slots from the site's limiter."""
    return LLMGateway(DatabaseResponseCache(), max_concurrency=settings.LLM_MAX_CONCURRENCY,
                      max_retries=settings.LLM_MAX_RETRIES,
                      backoff_base=settings.LLM_BACKOFF_SECONDS, limiter=llm_limiter())


class RunUsage:
    """A run's total usage and its parts (factors, debate, …); each part also adds to the total."""

    def __init__(self) -> None:
        self.total = UsageMeter()
        self.stages: dict[str, UsageMeter] = {}
        self._lock = threading.Lock()  # the gateway's worker threads ask for stages concurrently

    def stage(self, name: str) -> UsageMeter:
        with self._lock:
            if name not in self.stages:
                self.stages[name] = _StageMeter(self.total)
            return self.stages[name]

    def summary(self, *, model: str, units: int) -> dict:
        return {**self.total.summary(), "model": model, "units": units,
                "stages": {name: meter.summary() for name, meter in self.stages.items()}}


class _StageMeter(UsageMeter):
    def __init__(self, total: UsageMeter) -> None:
        super().__init__()
        self._total = total

    def record(self, result) -> None:
        super().record(result)
        self._total.record(result)

    def record_failure(self) -> None:
        super().record_failure()
        self._total.record_failure()
