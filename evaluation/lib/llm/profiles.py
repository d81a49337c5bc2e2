"""The operator's LLM model profiles (docs/operations.md, "Credentials and model profiles").

A profile says which model to call, where, and with which of the operator's named credentials
(`evaluation.lib.credentials`). Users pick a profile by name; nobody but the operator writes a
model's address or chooses a variable. `CONCORD_LLM_PROFILES` is a JSON object:
`{"name": {"model": "openai/x", "api_base": "http://127.0.0.1:8080/v1", "credential": "crs-demo",
"label": "…", "backend": "vllm", "parameters": 8000000000, "evaluation_grade": true}}`; the
implicit profile `default` comes from `CONCORD_LLM_MODEL`, `CONCORD_LLM_API_BASE`,
`CONCORD_LLM_API_KEY_ENV` and `CONCORD_LLM_BACKEND` (a profile named `default` replaces it).

`backend` says how answer formats are sent (`answer_format.BACKENDS`; default `openai`).
`evaluation_grade` says whether the model's scores may be published (docs/llm.md, "Smoke
tests"): the operator's word when given; otherwise not for the built-in server
(`concord-local`, whose documented model is the bundled 135M SmolLM2) nor for a model whose
`parameters` are under `CONCORD_LLM_MIN_EVALUATION_PARAMS`; otherwise yes.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from evaluation.lib.credentials import NAME_PATTERN, Credential
from evaluation.lib.llm.answer_format import BACKENDS

SETTING = "CONCORD_LLM_PROFILES"
DEFAULT = "default"
_KEYS = frozenset({"model", "api_base", "credential", "label", "backend", "parameters",
                   "evaluation_grade"})
_STRING_KEYS = ("model", "api_base", "credential", "label", "backend")
BUILT_IN_BACKEND = "concord-local"


class ProfileSettingError(ValueError):
    """A malformed `CONCORD_LLM_PROFILES` value."""


@dataclass(frozen=True)
class ModelProfile:
    """One model an operator offers: NAME (what users pick), MODEL (a litellm model string;
    empty for an unconfigured default), API_BASE (None: the provider's own), CREDENTIAL (the
    name of an operator credential, or None) and KEY_VARIABLE, the environment variable the
    key is read from (the credential's, or CONCORD_LLM_API_KEY_ENV for the implicit default;
    None: no key of ours is sent)."""

    name: str
    model: str
    api_base: str | None = None
    credential: str | None = None
    key_variable: str | None = None
    label: str = ""
    backend: str = "openai"
    evaluation_grade: bool = True
    why_not_evaluation_grade: str = ""

    @property
    def title(self) -> str:
        return f"{self.label or self.name} ({self.model})" if self.model else self.name


def evaluation_grade(*, backend: str, parameters: int | None, declared: bool | None,
                     min_parameters: int) -> tuple[bool, str]:
    """Whether a profile's runs may be published, and if not, why (shown on their pages)."""
    if declared is not None:
        return declared, "" if declared else "the operator marked this model as a smoke test"
    if parameters is not None and parameters < min_parameters:
        return False, (f"the model has {parameters:,} parameters, under the operator's "
                       f"minimum of {min_parameters:,} (CONCORD_LLM_MIN_EVALUATION_PARAMS)")
    if backend == BUILT_IN_BACKEND:
        return False, ("the built-in local server is a laptop smoke test (its bundled model "
                       "is SmolLM2-135M); the operator has not marked this model as "
                       "evaluation-grade")
    return True, ""


def default_profile(*, model: str, api_base: str, key_variable: str,
                    backend: str = "openai") -> ModelProfile:
    """The implicit `default` profile from the CONCORD_LLM_* settings."""
    if backend not in BACKENDS:
        raise ProfileSettingError(f"CONCORD_LLM_BACKEND {backend!r} is not one of "
                                  f"{', '.join(BACKENDS)}")
    grade, why = evaluation_grade(backend=backend, parameters=None, declared=None,
                                  min_parameters=0)
    return ModelProfile(name=DEFAULT, model=model, api_base=api_base or None,
                        key_variable=key_variable or None,
                        label="the site's configured model", backend=backend,
                        evaluation_grade=grade, why_not_evaluation_grade=why)


def parse_profiles(text: str, *, credentials: Mapping[str, Credential],
                   min_evaluation_params: int = 0) -> dict[str, ModelProfile]:
    """The profiles of a `CONCORD_LLM_PROFILES` value (empty: none), by name."""
    if not text.strip():
        return {}
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProfileSettingError(f"{SETTING} is not valid JSON: {error}") from None
    if not isinstance(raw, dict):
        raise ProfileSettingError(f"{SETTING} must be a JSON object of profiles by name")
    return {name: _profile(name, entry, credentials, min_evaluation_params)
            for name, entry in raw.items()}


def _profile(name: str, entry, credentials: Mapping[str, Credential],
             min_evaluation_params: int) -> ModelProfile:
    where = f"{SETTING}: profile {name!r}"
    if not NAME_PATTERN.match(name):
        raise ProfileSettingError(f"{where}: a name is lower-case letters, digits, '-', '_' "
                                  "and '.' (at most 50)")
    if not isinstance(entry, dict):
        raise ProfileSettingError(f"{where} must be a JSON object")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ProfileSettingError(f"{where}: unknown keys {', '.join(unknown)} (known: "
                                  f"{', '.join(sorted(_KEYS))})")
    values = {key: entry.get(key) for key in _STRING_KEYS}
    for key, value in values.items():
        if value is not None and not isinstance(value, str):
            raise ProfileSettingError(f"{where}: {key} must be a string")
    backend = values["backend"] or "openai"
    if backend not in BACKENDS:
        raise ProfileSettingError(f"{where}: backend {backend!r} is not one of "
                                  f"{', '.join(BACKENDS)}")
    parameters, declared = entry.get("parameters"), entry.get("evaluation_grade")
    if parameters is not None and (isinstance(parameters, bool) or not isinstance(parameters, int)
                                   or parameters < 1):
        raise ProfileSettingError(f"{where}: parameters must be a positive whole number (the "
                                  "model's parameter count, e.g. 135000000)")
    if declared is not None and not isinstance(declared, bool):
        raise ProfileSettingError(f"{where}: evaluation_grade must be true or false")
    grade, why = evaluation_grade(backend=backend, parameters=parameters, declared=declared,
                                  min_parameters=min_evaluation_params)
    if not values["model"]:
        raise ProfileSettingError(f"{where} has no model (a litellm model string)")
    api_base = values["api_base"] or None
    if api_base and (urlsplit(api_base).scheme not in ("http", "https")
                     or not urlsplit(api_base).hostname):
        raise ProfileSettingError(f"{where}: api_base {api_base!r} is not an http(s) address")
    credential = values["credential"] or None
    if credential is not None and credential not in credentials:
        raise ProfileSettingError(f"{where}: credential {credential!r} is not in "
                                  "CONCORD_CREDENTIALS")
    return ModelProfile(name=name, model=values["model"], api_base=api_base,
                        credential=credential,
                        key_variable=credentials[credential].variable if credential else None,
                        label=values["label"] or "", backend=backend, evaluation_grade=grade,
                        why_not_evaluation_grade=why)
