"""The operator's LLM model profiles (docs/operations.md, "Credentials and model profiles").

A profile says which model to call, where, and with which of the operator's named credentials
(`evaluation.lib.credentials`). Users pick a profile by name; nobody but the operator writes a
model's address or chooses a variable. `CONCORD_LLM_PROFILES` is a JSON object:
`{"name": {"model": "openai/x", "api_base": "http://127.0.0.1:8080/v1", "credential": "crs-demo",
"label": "…"}}`; the implicit profile `default` comes from `CONCORD_LLM_MODEL`,
`CONCORD_LLM_API_BASE` and `CONCORD_LLM_API_KEY_ENV` (a profile named `default` replaces it).
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from evaluation.lib.credentials import NAME_PATTERN, Credential

SETTING = "CONCORD_LLM_PROFILES"
DEFAULT = "default"
_KEYS = frozenset({"model", "api_base", "credential", "label"})


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

    @property
    def title(self) -> str:
        return f"{self.label or self.name} ({self.model})" if self.model else self.name



def default_profile(*, model: str, api_base: str, key_variable: str) -> ModelProfile:
    """The implicit `default` profile from the CONCORD_LLM_* settings."""
    return ModelProfile(name=DEFAULT, model=model, api_base=api_base or None,
                        key_variable=key_variable or None,
                        label="the site's configured model")


def parse_profiles(text: str, *,
                   credentials: Mapping[str, Credential]) -> dict[str, ModelProfile]:
    """The profiles of a `CONCORD_LLM_PROFILES` value (empty: none), by name."""
    if not text.strip():
        return {}
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProfileSettingError(f"{SETTING} is not valid JSON: {error}") from None
    if not isinstance(raw, dict):
        raise ProfileSettingError(f"{SETTING} must be a JSON object of profiles by name")
    return {name: _profile(name, entry, credentials) for name, entry in raw.items()}


def _profile(name: str, entry, credentials: Mapping[str, Credential]) -> ModelProfile:
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
    values = {key: entry.get(key) for key in _KEYS}
    for key, value in values.items():
        if value is not None and not isinstance(value, str):
            raise ProfileSettingError(f"{where}: {key} must be a string")
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
                        label=values["label"] or "")
